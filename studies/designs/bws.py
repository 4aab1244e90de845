"""Best-worst scaling by ranking (design ``bws``): the targets of an item ranked 1 (best) .. m
(worst), without ties; ``tuple_size`` is m.

On responses the tuple size follows the systems chosen at item build (every response an item shows
is ranked); on dialogues (``units.dialogue``) ``tuple_size`` whole dialogues are cut into disjoint
tuples. Reports normalise a rank as m + 1 − rank. Check rules are ``best`` / ``worst``. Rater form:
templates/raters/designs/bws.html (drag or keyboard ranking)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Count, F, Q, Value
from django.utils.translation import gettext

from studies.designs.common import Errors, int_field
from studies.designs.ratings import RatingsDesign
from studies.designs.units import unit_for
from studies.designs.units.base import StudyUnit

if TYPE_CHECKING:
    from django.db.models import Expression

    from studies.models import AssignmentItem, Criterion, Study


TUPLE_SIZE = forms.IntegerField(
    label="Responses ranked per item (BWS)", min_value=2, max_value=10, required=False,
    help_text="Leave blank: it follows the number of responses each item shows when you build the items.")


def ranks_problem(ranks: Sequence[Any], size: int) -> str | None:
    """Why ``ranks`` is not a complete ranking 1..size without ties, or None if it is."""
    if len(ranks) != size:
        return f"rank all {size} responses (got {len(ranks)})"
    if any(isinstance(r, bool) or not isinstance(r, int) for r in ranks):
        return gettext("ranks must be whole numbers")
    if sorted(ranks) != list(range(1, size + 1)):
        return gettext("ranks must be 1..{size}, each used once (no ties)").format(size=size)
    return None


class BWS(RatingsDesign):
    key = "bws"
    explanation = "Best-worst scaling: raters rank all responses of an item from best to worst, without ties."
    defaults = {"tuple_size": 4}
    template = "raters/designs/bws.html"
    form_fields = {"bws_tuple_size": TUPLE_SIZE}
    ranks = True
    check_rule_kinds = ("best", "worst")
    normalisation = "m+1-rank"
    alpha_level = "ordinal"
    alpha_values = "m+1-rank"
    screen_nouns = {"response": "conversations", "dialogue": "sets of dialogues"}
    items_hint = ("Best-worst scaling ranks every response an item shows: the number ranked follows the systems "
                  "you choose (with the reference, if any).")

    def config_problems(self, config: dict[str, Any], errors: Errors) -> None:
        int_field(config, "tuple_size", errors, low=2, high=10)

    def describe(self, config: Mapping[str, Any], *, anchors: tuple[float, float] | None = None,
                 unit: StudyUnit | None = None) -> str:
        size = config["tuple_size"]
        if unit and unit.level == "dialogue":
            return gettext("Each screen shows %(size)s whole dialogues: you put its %(size)s dialogues "
                           "in order from best to worst, without ties.") % {"size": size}
        return gettext("For each conversation you put its %(size)s responses in order from best to worst, "
                       "without ties.") % {"size": size}

    def settings_summary(self, config: Mapping[str, Any]) -> str:
        return f"raters rank {config['tuple_size']} responses per item"

    def config_from_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {"tuple_size": data.get("bws_tuple_size") or 4}

    def form_initial(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return {"bws_tuple_size": config.get("tuple_size")}

    def config_change(self, study: Study, config: Mapping[str, Any]) -> tuple[Errors, bool]:
        """A new tuple size: tuples of whole dialogues follow it (they are cut again); a response
        item's size follows its systems instead, so a size other than the built items' is refused."""
        unit = unit_for(study)
        shown = unit.shown_count(study)
        if shown is None or shown == config["tuple_size"]:
            return {}, False
        if unit.level == "dialogue":
            return {}, True
        return {"design_config.tuple_size": (
            f"the items show {shown} responses each, and BWS ranks all of them: keep {shown}, "
            "or build the items again with other systems (the size follows them)")}, False

    def items_shown(self, study: Study, shown: int) -> None:
        """BWS ranks every response an item shows, so the tuple size follows the choice (a draft, no rater yet)."""
        if shown == study.design_config["tuple_size"]:
            return
        if not 2 <= shown <= 10:
            raise ValidationError({"systems": f"BWS ranks 2 to 10 responses per item; these choices show {shown}"})
        study.design_config = {**study.design_config, "tuple_size": shown}
        study.save(update_fields=["design_config"])

    def publish_problems(self, study: Study) -> list[str]:
        problems = super().publish_problems(study)
        size = study.design_config["tuple_size"]
        unit = unit_for(study)
        if unit.level == "dialogue":  # whole dialogues (a ranking item's), or a side-by-side chat's systems
            wrong = study.items.filter(check_kind="").annotate(n=Count(unit.shown_relation)).exclude(n=size).count()
            if wrong:
                problems.append(f"{wrong} item(s) do not show exactly {size} dialogues to rank")
        else:
            wrong = study.items.annotate(n=Count("item_responses")).exclude(n=size).count()
            if wrong:
                problems.append(f"{wrong} item(s) do not show exactly {size} responses to rank")
        return problems

    def check_item_problem(self, config: Mapping[str, Any], n_responses: int) -> str | None:
        if n_responses != config["tuple_size"]:
            return (f"this study ranks {config['tuple_size']} responses per item, a check item must show as many "
                    f"(got {n_responses})")
        return None

    # --- ranks as the scale --------------------------------------------------------------------------------

    def scale_parse(self, config: Mapping[str, Any], criterion: Criterion, post: Mapping[str, Any],
                    order: Sequence[int]) -> tuple[dict[int, Any], Errors]:
        from studies.designs.ratings import field_name

        answers: dict[int, Any] = {}
        errors: Errors = {}
        for rid in order:
            name = field_name(rid, criterion.name, order)
            raw = (post.get(name) or "").strip()
            if not raw:
                errors[name] = gettext("rank this response")
            elif not (raw.isascii() and raw.isdigit()) or len(raw) > 6:  # '²'.isdigit(), yet int('²') fails
                errors[name] = f"“{raw[:12]}” is not a rank"
            else:
                answers[rid] = int(raw)
        return answers, errors

    def scale_problems(self, config: Mapping[str, Any], criterion: Criterion, answers: Mapping[int, Any],
                       order: Sequence[int]) -> Errors:
        problem = ranks_problem([answers[r] for r in order], len(order))
        return {criterion.name: problem} if problem else {}

    def scale_fields(self, answer: Any) -> dict[str, Any]:
        return {"value": None, "rank": int(answer)}

    def scale_form_value(self, stored: Mapping[str, Any]) -> str:
        return str(stored["rank"]) if stored.get("rank") is not None else ""

    def scale_check_value(self, stored: Mapping[str, Any]) -> Any:
        return stored.get("rank")

    def normalised_value(self, shown: Any) -> tuple[Q, Expression] | None:
        return Q(), shown + Value(1.0) - F("rank")

    def scale_simulate(self, *, study: Study, slot: AssignmentItem, quality: Mapping[tuple[int, str], float],
                       reference_quality: Mapping[str, float], rng: Any,
                       criteria: Sequence[Criterion]) -> dict[str, Any]:
        """The targets ranked by the quality the rater sees, best first."""
        answers = {}
        for c in criteria:
            order = sorted(slot.response_order, key=lambda r: quality[(r, c.name)], reverse=True)
            answers[c.name] = {r: order.index(r) + 1 for r in slot.response_order}
        return answers


BWS_DESIGN = BWS()
