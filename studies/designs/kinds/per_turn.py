"""Per-turn judgements: every turn of the judged speaker in a shown dialogue gets the criterion's labels
(ABC-Eval's behaviours, ParlAI model-chat's per-turn checkboxes).

The criterion's ``options``:

- ``mode``: ``binary`` (each label is a behaviour the turn shows or not: ticked boxes are the ones it
  shows, none ticked is "shows none of them"; ABC-Eval), ``multilabel`` (any set of labels, with an
  explicit "None of these" so an untouched turn is never read as an answer) or ``categorical`` (one
  label per turn);
- ``labels``: 1 (binary) or 2 to 24 distinct labels; ``definitions``: label -> what it means, shown
  beside the box (optional, editable; ``kinds.abc_eval`` is the ready-made set);
- ``speaker``: whose turns are judged: "" the system's (``units.sides``: the speaker named like a system,
  else the one whose name sorts first; a chat's bot), "*" every turn, or a speaker's name.

The target is a whole conversation (dialogue and chat units; a response unit is refused when the study is
made). The form has one field per judged turn, ``r<letter>-<criterion>.t<index>`` (``index``: the turn's
place in ``Conversation.turns``, from 0); one Rating per conversation and criterion stores them in
``Rating.turns`` = {index as text: label or sorted labels}. A field naming a turn that is not judged, or a
label the criterion lacks, is refused by name. A check rule expects labels per turn
(``{"response": 1, "turns": {"3": ["redundant"]}, "min_match": 0.8}``): it passes when at least
``min_match`` of the expected turns match exactly (``rating.checks``).
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from django.core.exceptions import ValidationError

from studies.designs.common import field_name
from studies.designs.kinds.base import JudgementKind, RatingsDesign
from studies.designs.kinds.labels import MAX_LABEL, NONE_VALUE, posted
from studies.designs.units.sides import dialogue_sides
from studies.models import Conversation

if TYPE_CHECKING:
    from studies.designs.common import Errors
    from studies.models import Criterion

MODES = ("binary", "multilabel", "categorical")
MAX_TURN_LABELS = 24
MAX_DEFINITION = 300
NONE_TEXT = "None of these"
ALL_SPEAKERS = "*"
_TURN = re.compile(r"\.t(\d{1,4})$")


def turn_field(base: str, index: int) -> str:
    """The form field of one turn's answer: the target's field and the turn's index."""
    return f"{base}.t{index}"


def options_of(criterion: Any) -> tuple[str, list[str], str]:
    """(mode, labels, speaker) of a per-turn criterion."""
    options = criterion.options or {}
    return options.get("mode", "binary"), list(options.get("labels") or []), str(options.get("speaker") or "")


def judged_indices(turns: Sequence[Mapping[str, Any]], speaker: str) -> list[int]:
    """The indices of the turns whose speaker is judged (see the module's ``speaker``)."""
    if speaker == ALL_SPEAKERS:
        return list(range(len(turns)))
    if speaker:
        return [i for i, t in enumerate(turns) if str(t.get("speaker", "")) == speaker]
    return [i for i, t in enumerate(dialogue_sides([dict(t) for t in turns])) if t["side"] == "side-a"]


def conversation_turns(ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """conversation id -> its turns (one query)."""
    return dict(Conversation.objects.filter(pk__in=list(ids)).values_list("pk", "turns")) if ids else {}


def _labels_clean(options: Mapping[str, Any], mode: str, errors: dict[str, str]) -> list[str]:
    raw = options.get("labels")
    if isinstance(raw, str):  # a form's text box: one label per line
        raw = [part.strip() for part in raw.splitlines() if part.strip()]
    low = 1 if mode == "binary" else 2
    if not isinstance(raw, (list, tuple)) or not all(isinstance(label, str) for label in raw):
        errors["options.labels"] = f"give {low} to {MAX_TURN_LABELS} labels, e.g. [\"redundant\", \"irrelevant\"]"
        return []
    labels = [label.strip() for label in raw]
    if not low <= len(labels) <= MAX_TURN_LABELS:
        errors["options.labels"] = f"give {low} to {MAX_TURN_LABELS} labels, got {len(labels)}"
    elif not all(labels):
        errors["options.labels"] = "every label is a non-empty text"
    elif any(len(label) > MAX_LABEL for label in labels):
        errors["options.labels"] = f"a label has at most {MAX_LABEL} characters"
    elif any(label.startswith("__") for label in labels):
        errors["options.labels"] = "a label may not start with “__”"
    elif len({label.casefold() for label in labels}) != len(labels):
        errors["options.labels"] = "labels must be different"
    return labels


class PerTurnKind(JudgementKind):
    key = "per_turn"
    label = "Labels for each turn of the dialogue (per turn)"
    template = "raters/kinds/per_turn.html"
    many_values = True
    check_rule_key = "turns"
    numeric = False
    own_report = True  # reports.per_turn_selectors
    rater_task = "label each of the bot's turns"
    checks_dialogues = True  # a known bad dialogue with expected labels per turn is its check item
    shows_dialogue = True  # its partial shows the dialogue, each judged turn with its questions
    levels: ClassVar[tuple[str, ...]] = ("dialogue",)  # it judges turns of a whole conversation

    # --- settings -------------------------------------------------------------------------------------------

    def options_clean(self, options: Any) -> dict[str, Any]:
        errors: dict[str, str] = {}
        options = options if isinstance(options, Mapping) else {}
        mode = options.get("mode") or "binary"
        if mode not in MODES:
            errors["options.mode"] = f"unknown mode {mode!r}: use one of {', '.join(MODES)}"
            mode = "binary"
        labels = _labels_clean(options, mode, errors)
        definitions = options.get("definitions") or {}
        if isinstance(definitions, str):  # a form's text box: "label: definition" per line
            definitions = dict(line.split(":", 1) for line in definitions.splitlines() if ":" in line)
        if not isinstance(definitions, Mapping) or not all(isinstance(v, str) for v in definitions.values()):
            errors["options.definitions"] = "give each label's definition as text"
            definitions = {}
        definitions = {str(k).strip(): v.strip() for k, v in definitions.items() if v.strip()}
        if unknown := [k for k in definitions if k not in labels]:
            errors["options.definitions"] = f"“{unknown[0][:30]}” is not one of the labels"
        elif any(len(v) > MAX_DEFINITION for v in definitions.values()):
            errors["options.definitions"] = f"a definition has at most {MAX_DEFINITION} characters"
        speaker = options.get("speaker") or ""
        if not isinstance(speaker, str) or len(speaker) > 60:
            errors["options.speaker"] = "give the judged speaker's name (at most 60 characters), * for every " \
                                        "turn, or leave it empty for the system's turns"
            speaker = ""
        if errors:
            raise ValidationError(errors)
        return {"mode": mode, "labels": labels, "definitions": definitions, "speaker": speaker.strip()}

    # --- the form -------------------------------------------------------------------------------------------

    def row_context(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion) -> dict[str, Any]:
        mode, labels, _ = options_of(criterion)
        definitions = (criterion.options or {}).get("definitions") or {}
        return {"labels": labels, "mode": mode, "none_value": NONE_VALUE, "none_text": NONE_TEXT,
                "label_rows": [{"label": label, "definition": definitions.get(label, "")} for label in labels]}

    def rows_extend(self, design: RatingsDesign, criterion: Criterion, rows: list[dict[str, Any]], *,
                    values: Mapping[str, Any], errors: Mapping[str, str], show: Any) -> None:
        """Each row (a shown conversation) gets its turns, the judged ones with their field, answer and
        problem; ``show`` turns a transcript into the speakers and sides the rater sees (the unit's)."""
        _, _, speaker = options_of(criterion)
        turns = conversation_turns([row["id"] for row in rows])
        for row in rows:
            stored = turns.get(row["id"]) or []
            judged = set(judged_indices(stored, speaker))
            shown = []
            for index, turn in enumerate(show(stored)):
                entry = {"index": index, "number": index + 1, "speaker": turn.get("speaker", ""),
                         "text": turn.get("text", ""), "side": turn.get("side", ""), "judged": index in judged}
                if index in judged:
                    name = turn_field(row["field"], index)
                    value = values.get(name, [])
                    entry.update(field=name, error=errors.get(name),
                                 chosen=value if isinstance(value, list) else [value])
                shown.append(entry)
            row["turns"] = shown
            row["judged_count"] = len(judged)
            # a problem with a posted field the page does not show (a forged turn): said on the row
            row["error"] = row.get("error") or next(
                (problem for name, problem in errors.items() if name.startswith(f"{row['field']}.t")
                 and name not in {t.get("field") for t in shown}), None)

    def criterion_parse(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                        post: Mapping[str, Any], order: Sequence[int]) -> tuple[dict[int, Any], Errors]:
        mode, labels, speaker = options_of(criterion)
        turns = conversation_turns(order)
        answers: dict[int, Any] = {}
        errors: Errors = {}
        for target in order:
            base = field_name(target, criterion.name, order)
            judged = judged_indices(turns.get(target) or [], speaker)
            wanted = {turn_field(base, i) for i in judged}
            for name in (post.keys() if hasattr(post, "keys") else []):
                if str(name).startswith(f"{base}.t") and name not in wanted and not str(name).endswith(".rationale"):
                    errors[str(name)] = f"{str(name)[len(base) + 1:][:8]} is not a judged turn of this dialogue"
            per_turn: dict[int, Any] = {}
            for index in judged:
                name = turn_field(base, index)
                answer, problem = self.turn_answer(mode, labels, self.form_given(mode, post, name))
                if problem:
                    errors[name] = problem
                else:
                    per_turn[index] = answer
            if not any(k.startswith(base) for k in errors):
                answers[target] = per_turn
        return answers, errors

    @staticmethod
    def form_given(mode: str, post: Mapping[str, Any], name: str) -> Any:
        values = posted(post, name)
        if mode == "categorical":
            return values[-1] if values else ""
        return values

    @staticmethod
    def turn_answer(mode: str, labels: Sequence[str], given: Any) -> tuple[Any, str | None]:
        """One turn's answer (a label, or the chosen labels in the criterion's order), or its problem."""
        if mode == "categorical":
            if given in (None, ""):
                return None, "pick one of the labels for this turn"
            if not isinstance(given, str) or given not in labels:
                return None, f"“{str(given)[:30]}” is not one of the labels ({', '.join(labels)})"
            return given, None
        if not isinstance(given, (list, tuple)) or not all(isinstance(g, str) for g in given):
            return None, "give a list of labels"
        chosen = set(given)
        if NONE_VALUE in chosen:
            if len(chosen) > 1:
                return None, f"“{NONE_TEXT}” cannot go with other labels"
            return [], None
        if unknown := sorted(chosen - set(labels)):
            return None, f"“{unknown[0][:30]}” is not one of the labels"
        if mode == "multilabel" and not chosen:
            return None, f"tick the labels that apply to this turn, or “{NONE_TEXT}”"
        return [label for label in labels if label in chosen], None

    def criterion_problems(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                           answers: Mapping[int, Any], order: Sequence[int]) -> Errors:
        """Every shown conversation's answer is {turn index: answer} for exactly its judged turns."""
        mode, labels, speaker = options_of(criterion)
        turns = conversation_turns(list(answers))
        errors: Errors = {}
        for target, given in answers.items():
            key = f"{criterion.name}.{target}"
            judged = judged_indices(turns.get(target) or [], speaker)
            if not isinstance(given, Mapping):
                errors[key] = "give an object of turn index -> labels"
                continue
            indices: dict[int, Any] = {}
            for raw, answer in given.items():
                index = int(raw) if isinstance(raw, int) or (isinstance(raw, str) and raw.isdigit()) else None
                if index is None or index not in judged:
                    errors[key] = f"turn {str(raw)[:8]} is not a judged turn of this dialogue " \
                                  f"(judged: {', '.join(map(str, judged)) or 'none'})"
                    break
                indices[index] = answer
            else:
                if missing := [i for i in judged if i not in indices]:
                    errors[key] = f"turn {missing[0]} has no answer"
                    continue
                for index, answer in indices.items():
                    answer = [NONE_VALUE] if answer == [] and mode == "multilabel" else answer  # [] is "none of these"
                    if problem := self.turn_answer(mode, labels, answer)[1]:
                        errors[key] = f"turn {index}: {problem}"
                        break
        return errors

    # --- what is stored -------------------------------------------------------------------------------------

    def rating_fields(self, design: RatingsDesign, answer: Any) -> dict[str, Any]:
        turns = {}
        for index, given in sorted(((int(k), v) for k, v in answer.items()), key=lambda kv: kv[0]):
            turns[str(index)] = given if isinstance(given, str) else sorted(set(given) - {NONE_VALUE})
        return {"value": None, "rank": None, "turns": turns}

    def stored_fields(self) -> tuple[str, ...]:
        return ("turns",)

    def form_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> str:
        return ""

    def form_values(self, design: RatingsDesign, field: str, stored: Mapping[str, Any],
                    criterion: Criterion | None = None) -> dict[str, Any]:
        """One form value per judged turn (a label set of [] is "None of these" in the multi-label mode)."""
        multilabel = criterion is not None and options_of(criterion)[0] == "multilabel"
        out: dict[str, Any] = {}
        for index, given in (stored.get("turns") or {}).items():
            out[turn_field(field, int(index))] = given if isinstance(given, str) else \
                (list(given) or ([NONE_VALUE] if multilabel else []))
        return out

    def check_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> Any:
        turns = stored.get("turns")
        if turns is None:
            return None
        return tuple(sorted((int(k), v if isinstance(v, str) else tuple(sorted(v))) for k, v in turns.items()))

    def expected_clean(self, criterion: Criterion, expected: Any) -> tuple[Any, str | None]:
        """{turn index: label or labels}: a check dialogue's expected answers for some of its turns."""
        mode, labels, _ = options_of(criterion)
        if not isinstance(expected, Mapping) or not expected:
            return None, "give the expected labels per turn, e.g. {\"1\": [\"redundant\"]}"
        cleaned: dict[str, Any] = {}
        for raw, given in expected.items():
            if not (isinstance(raw, int) or (isinstance(raw, str) and raw.isdigit())):
                return None, f"turn {str(raw)[:8]!r} is not a turn index"
            answer, problem = self.turn_answer(mode, labels, [] if given == [] and mode != "categorical" else given)
            if problem and not (mode == "multilabel" and given == []):
                return None, f"turn {raw}: {problem}"
            cleaned[str(int(raw))] = answer if answer is not None else []
        return cleaned, None

    def simulate(self, criterion: Criterion, quality: float, rng: Any) -> Any:
        raise NotImplementedError("per-turn answers depend on the dialogue: target_simulate")

    def target_simulate(self, criterion: Criterion, target_id: int, quality: float, rng: Any) -> Any:
        """Every judged turn alike: k = round(−quality) clipped behaviours, the first k labels (a worse system
        shows more; quality 0 or above shows none, "None of these" in the multi-label mode); categorical: the
        first label at quality 0 or above, one label further per unit below."""
        mode, labels, speaker = options_of(criterion)
        turns = conversation_turns([target_id]).get(target_id) or []
        k = min(len(labels), max(0, int(round(-quality))))
        if mode == "categorical":
            answer: Any = labels[min(len(labels) - 1, k)]
        else:
            answer = labels[:k] or ([NONE_VALUE] if mode == "multilabel" else [])
        return {index: answer for index in judged_indices(turns, speaker)}

    def export_text(self, stored: Mapping[str, Any]) -> str:
        """"turn 1: redundant, ignore; turn 3: —" (turns numbered from 1, as the rater saw them)."""
        turns = stored.get("turns")
        if turns is None:
            return ""
        parts = []
        for index, given in sorted(((int(k), v) for k, v in turns.items()), key=lambda kv: kv[0]):
            text = given if isinstance(given, str) else (", ".join(given) or "—")
            parts.append(f"turn {index + 1}: {text}")
        return "; ".join(parts)


PER_TURN = PerTurnKind()


def turn_index_of(name: str) -> int | None:
    """The turn index a per-turn field names (``…​.t<index>``), or None."""
    found = _TURN.search(name)
    return int(found[1]) if found else None
