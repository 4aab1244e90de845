"""Researcher forms. They only collect and type-check input; services validate and write."""
import copy
import re
from typing import Any

from django import forms
from django.conf import settings

from studies.authoring import builder_defaults, questionnaire_rows
from studies.authoring.criteria_rows import (
    FIELDS,
    kind_choices,
    rows_of_criteria,
    rows_parse,
    rows_posted,
    rows_read,
)
from studies.designs import DESIGNS, UNITS, design_for, unit_for
from studies.designs.kinds import criterion_kind_clean
from studies.designs.kinds.abc_eval import abc_eval_criterion
from studies.models import (
    DEFAULT_ITEMS_PER_ASSIGNMENT,
    DEFAULT_RATERS_PER_ITEM,
    Design,
    Study,
    Unit,
    default_questionnaire,
)
from studies.rating.invites import INVITES_AT_ONCE_MAX


def design_form_fields() -> dict[str, forms.Field]:
    """Every registered design's study-form fields, in registry order (a field two designs share is
    declared by the first)."""
    fields: dict[str, forms.Field] = {}
    for design in DESIGNS.values():
        for name, field in design.form_fields.items():
            fields.setdefault(name, field)
    return fields


def unit_form_fields() -> dict[str, forms.Field]:
    """Every registered unit's study-form fields (its settings, ``Study.unit_config``), in registry order."""
    fields: dict[str, forms.Field] = {}
    for unit in UNITS.values():
        for name, field in unit.form_fields.items():
            fields.setdefault(name, field)
    return fields


class ExperimentForm(forms.Form):
    title = forms.CharField(max_length=200)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)


class InviteForm(forms.Form):
    label = forms.CharField(max_length=120, required=False, help_text="Whom it is for (only you see it).")
    expires_in_days = forms.IntegerField(min_value=1, max_value=365, initial=14, help_text="Days the link can be opened.")
    count = forms.IntegerField(min_value=1, max_value=INVITES_AT_ONCE_MAX, initial=1, required=False,
                               help_text="How many links to make (each works once).")


QUESTION_KINDS = ("yes_no", "choice", "text")


# How a criterion is answered, written after its question (studies.designs.kinds): "categorical: safe, unsafe",
# "multilabel: a, b, c" (with "none: no" for no "None of these"), "free_text: 10-500", and "why: optional|required".
_KIND_PART = re.compile(r"^(scale|categorical|multilabel|free_text)\s*(?::\s*(.*))?$", re.IGNORECASE)
_WHY_PART = re.compile(r"^why\s*:\s*(\S+)$", re.IGNORECASE)
_NONE_PART = re.compile(r"^none\s*:\s*(yes|no)$", re.IGNORECASE)
_LENGTHS = re.compile(r"^(\d+)\s*-\s*(\d+)$")


def _kind_text(c) -> list[str]:
    """A criterion's kind, options and reason as the form writes them (none for a plain scale)."""
    options = c.options or {}
    parts = []
    if c.kind in ("categorical", "multilabel"):
        parts.append(f"{c.kind}: {', '.join(options.get('labels', []))}")
        if c.kind == "multilabel" and options.get("none_option") is False:
            parts.append("none: no")
    elif c.kind == "free_text":
        parts.append(f"free_text: {options.get('min_length', 1)}-{options.get('max_length', 1000)}")
    if c.rationale:
        parts.append(f"why: {c.rationale}")
    return parts


def criteria_text(criteria) -> str:
    """Criteria as the form shows them: one per line, ``name | question | help text``, then the kind
    and the reason where a criterion is not a plain scale (``categorical: safe, unsafe | why: required``)."""
    lines = []
    for c in criteria:
        kind = _kind_text(c)
        parts = [c.name, c.question] if c.question else [c.name]
        if c.help_text or kind:
            parts.append(c.help_text)  # kept even when empty: the kind's part must not be read as help text
        lines.append(" | ".join([*parts, *kind]).replace("|  |", "| |"))
    return "\n".join(lines)


def _kind_parse(parts: list[str], number: int) -> tuple[dict[str, Any], list[str]]:
    """The kind, options and reason among a line's parts after the question; the other parts (help text)."""
    spec: dict[str, Any] = {}
    rest = []
    for part in parts:
        if match := _KIND_PART.match(part):
            kind, given = match.group(1).lower(), (match.group(2) or "").strip()
            spec["kind"] = kind
            if kind in ("categorical", "multilabel"):
                spec.setdefault("options", {})["labels"] = given
            elif kind == "free_text" and given:
                lengths = _LENGTHS.match(given)
                if not lengths:
                    raise forms.ValidationError(f"line {number}: write free text lengths as free_text: 10-500")
                spec["options"] = {"min_length": int(lengths.group(1)), "max_length": int(lengths.group(2))}
        elif match := _WHY_PART.match(part):
            spec["rationale"] = match.group(1).lower()
        elif match := _NONE_PART.match(part):
            spec.setdefault("options", {})["none_option"] = match.group(1).lower() == "yes"
        else:
            rest.append(part)
    return spec, rest


def questionnaire_text(questions) -> str:
    """The questionnaire as the form shows it: ``name | kind | required/optional | question | choice, choice``."""
    lines = []
    for q in questions or []:
        parts = [q.get("name", ""), q.get("kind", "text"), "required" if q.get("required") else "optional",
                 q.get("question", "")]
        if q.get("kind") == "choice":
            parts.append(", ".join(q.get("choices", [])))
        lines.append(" | ".join(parts))
    return "\n".join(lines)


def criteria_parse(text: str) -> list[dict[str, str]]:
    """``a, b`` or one criterion a line, ``name | question | help text``; blank lines are skipped. A piece or
    line without a name, no criterion at all, or a name given twice is a ValidationError naming it."""
    if "\n" not in text.strip() and "|" not in text:
        pieces = [c.strip() for c in text.split(",")]
        unnamed = [n for n, piece in enumerate(pieces, start=1) if not piece]
        if len(pieces) > 1 and unnamed:
            raise forms.ValidationError(
                f"criterion {unnamed[0]} of {len(pieces)} (between commas) has no name: remove the extra comma "
                f"or name it")
        specs = [{"name": piece} for piece in pieces if piece]
    else:
        specs = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            parts = [p.strip() for p in line.split("|")]
            if not parts[0]:
                raise forms.ValidationError(f"line {number} has no criterion name before the first |: {line.strip()!r}")
            kind, rest = _kind_parse(parts[2:], number)
            specs.append({"name": parts[0], "question": parts[1] if len(parts) > 1 else "",
                          "help_text": " | ".join(p for p in rest if p), **kind})
    if not specs:
        raise forms.ValidationError("name at least one criterion (e.g. readability, coherence)")
    names = [spec["name"] for spec in specs]
    if twice := sorted({name for name in names if names.count(name) > 1}):
        raise forms.ValidationError(f"each criterion once: {', '.join(twice)} is given twice")
    problems = []
    for spec in specs:  # each kind's settings, with the criterion named (the service checks them again)
        _, found = criterion_kind_clean(spec, takes_kinds=True, prefix=spec["name"])
        problems += [f"{field.replace('.options.', ': ').replace('.', ': ')}: {message}" for field, message in found.items()]
    if problems:
        raise forms.ValidationError(problems)
    return specs


class StudyForm(forms.Form):
    """Every setting of a study, with labels a researcher reads (no field names). ``locked`` (a
    reason) disables the design, its settings and the criteria (studies.authoring.editing explains why)."""

    title = forms.CharField(max_length=200)
    design = forms.ChoiceField(choices=Design.choices, widget=forms.RadioSelect)
    unit = forms.ChoiceField(
        choices=Unit.choices, initial=Unit.RESPONSE, widget=forms.RadioSelect, label="Unit of judgement", required=False,
        help_text="Response: raters judge candidate next turns of a conversation. Dialogue: raters read a whole "
                  "conversation and rate it (Likert or RME; the items are the corpus's conversations). Chat: raters "
                  "chat with a system (or two side by side) through its endpoint, then rate the conversation they "
                  "had (Likert, or BWS for two); the items are systems. ACUTE-Eval always judges dialogues.",
    )
    # The builder's rows (``studies.authoring.criteria_rows``: ``c-<i>-<field>``) replace this text on the
    # page; a post without rows (the API's clients, older scripts) may still give the criteria as text.
    criteria = forms.CharField(initial="readability, coherence", required=False, widget=forms.HiddenInput,
                               label="Questions raters answer")
    raters_per_item = forms.IntegerField(
        min_value=1, initial=DEFAULT_RATERS_PER_ITEM,
        help_text="Target number of raters for every item. Start with a pilot: the live panel then says how many "
                  "raters reach your target reliability (the seed study used 40).")
    items_per_assignment = forms.IntegerField(
        label="Items per rater", min_value=1, initial=DEFAULT_ITEMS_PER_ASSIGNMENT,
        help_text="Items one rater judges in one assignment (the seed study: 50 conversations, 33–43 minutes).")
    platform = forms.ChoiceField(choices=[c for c in Study.Platform.choices if c[0] != "benchmark"],
                                 help_text="Where raters come from.")
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), required=False,
                                   help_text="Markdown shown to raters before the first item.")
    consent_text = forms.CharField(label="Consent text", widget=forms.Textarea(attrs={"rows": 4}), required=False,
                                   help_text="Markdown shown above the “I agree” box (who you are, what is stored, "
                                             "how to withdraw).")
    language = forms.ChoiceField(
        label="Language of the rater pages", choices=settings.LANGUAGES, initial="en", required=False,
        help_text="Buttons, progress, errors and the other words of the rater pages. Write your instructions, "
                  "questions and consent text in this language yourself: they are shown as written.")
    language_from_browser = forms.BooleanField(
        label="Use the rater's browser language where available", required=False,
        help_text="A rater whose browser asks for another language the rater pages have sees the pages' own words "
                  "in it; everyone else sees the language above.")
    reward = forms.DecimalField(label="Reward per assignment", min_value=0, max_digits=8, decimal_places=2,
                                required=False, help_text="In the platform's currency (USD on Mechanical Turk); "
                                                          "crowd publications pay this.")
    estimated_minutes = forms.IntegerField(label="Estimated minutes per assignment", min_value=1, required=False,
                                           help_text="Replaced by the pilot's median time once raters have submitted.")
    time_limit_minutes = forms.IntegerField(label="Time limit per rater (minutes, optional)", min_value=1,
                                            max_value=7 * 24 * 60, required=False)
    closes_at = forms.DateTimeField(label="Deadline (optional, UTC)", required=False,
                                    widget=forms.DateTimeInput(attrs={"type": "datetime-local"},
                                                               format="%Y-%m-%dT%H:%M"),
                                    input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"],
                                    help_text="After it, the study takes no new raters; assignments in progress "
                                              "may finish.")
    questionnaire = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}), required=False,
        help_text="Asked after the last item. One question per line: name | yes_no, choice or text | "
                  "required or optional | question | choices (comma-separated, for choice). Blank: no questionnaire.")

    # The builder's menu of judgement kinds and the row a new question starts from.
    KIND_CHOICES = kind_choices()
    BLANK_ROW = {**dict.fromkeys(FIELDS, ""), "kind": "scale", "none_option": "on"}
    ABC_EVAL_ROW = rows_of_criteria([abc_eval_criterion()])[0]  # the builder's ready-made per-turn behaviours
    RATIONALE_CHOICES = (("", "No"), ("optional", "Optional"), ("required", "Required"))
    QUESTION_KIND_CHOICES = questionnaire_rows.KINDS
    BLANK_QUESTION = {**dict.fromkeys(questionnaire_rows.FIELDS, ""), "kind": "yes_no"}

    # Settings that belong to some designs only (each design's ``form_fields``; the page shows those
    # of the chosen design): field name -> the designs that use it, space-separated.
    DESIGN_FIELDS = {name: " ".join(d.key for d in DESIGNS.values() if name in d.form_fields)
                     for name in design_form_fields()}
    STRUCTURE = ("design", "criteria", "platform", *design_form_fields())
    # The units' settings (each unit's ``form_fields``), shown for the chosen unit: name -> units.
    UNIT_FIELDS = {name: " ".join(u.key for u in UNITS.values() if name in u.form_fields) for name in unit_form_fields()}
    # One line per design for the chooser; the questions and units the builder's script switches to.
    DESIGN_EXPLANATIONS = builder_defaults.design_explanations()

    def __init__(self, *args, locked: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        # The designs' own settings go right after the criteria.
        fields = list(self.fields.items())
        after = [name for name, _ in fields].index("criteria") + 1
        self.fields = {**dict(fields[:after]), **{n: copy.deepcopy(f) for n, f in design_form_fields().items()},
                       **dict(fields[after:])}
        # The units' settings go right after the unit.
        fields = list(self.fields.items())
        after = [name for name, _ in fields].index("unit") + 1
        self.fields = {**dict(fields[:after]), **{n: copy.deepcopy(f) for n, f in unit_form_fields().items()},
                       **dict(fields[after:])}
        self.locked = locked
        if locked:
            for name in self.STRUCTURE:
                self.fields[name].disabled = True
                self.fields[name].required = False
        if "unit" in self.initial:  # an existing study: the unit is chosen once (duplicate the study to change it)
            self.fields["unit"].disabled = True
            self.fields["unit"].help_text = "Chosen when the study was created."
            for name in unit_form_fields():  # so are its settings
                self.fields[name].disabled = True
        if not self.is_bound and "questionnaire" not in self.initial:
            self.initial["questionnaire"] = questionnaire_text(default_questionnaire())

    def clean_unit(self) -> str:
        return self.cleaned_data.get("unit") or Unit.RESPONSE  # not given: responses, as before units existed

    def clean(self):
        """A design that cannot judge the default unit (ACUTE-Eval compares whole dialogues) takes the
        first unit it can, as the page's script switches it (a unit the researcher picked stays, and the
        service says why it does not fit)."""
        data = super().clean()
        design, unit = data.get("design"), data.get("unit")
        allowed = builder_defaults.design_units().get(design or "", [])
        if unit == Unit.RESPONSE and allowed and unit not in allowed and not self.fields["unit"].disabled:
            data["unit"] = allowed[0]
        return data

    @property
    def prefilled(self) -> bool:
        """A new study's builder, showing the default design's questions: the page's script swaps them for
        the chosen design's until the researcher edits a row."""
        return not self.is_bound and "criteria_rows" not in self.initial and not self.locked

    def builder_defaults(self) -> dict:
        return builder_defaults.builder_defaults()

    def unit_config(self) -> dict:
        return unit_for(self.cleaned_data["unit"]).config_from_form(self.cleaned_data)

    def design_config(self) -> dict:
        return design_for(self.cleaned_data["design"]).config_from_form(self.cleaned_data)

    def clean_criteria(self) -> str:
        """Every criterion the researcher wrote, or an error naming the one without a name (nothing is
        dropped silently, and an empty list is not replaced by the default criteria)."""
        text = self.cleaned_data.get("criteria") or ""
        if self.fields["criteria"].disabled:
            return text
        if rows_posted(self.data):
            rows = rows_read(self.data)
            specs, problems = rows_parse(rows)
            if problems:
                raise forms.ValidationError(problems)
            self._criteria = specs
            if "criteria_rows" not in self.initial and _same_rows(rows, self._default_rows()):
                self._criteria = []  # the page's untouched defaults: the chosen design's own (services)
            return text
        self._criteria = criteria_parse(text)
        return text

    def builder_rows(self) -> list[dict[str, str]]:
        """The builder's rows: as posted (a refused form shows what was typed), else the study's criteria,
        else the default names (their questions are worded for the unit when the study is created)."""
        if self.is_bound and rows_posted(self.data) and not self.fields["criteria"].disabled:
            return rows_read(self.data)
        if "criteria_rows" in self.initial:
            return self.initial["criteria_rows"]
        return self._default_rows()

    @staticmethod
    def _default_rows() -> list[dict[str, str]]:
        return builder_defaults.default_rows(builder_defaults.DEFAULT_DESIGN, builder_defaults.DEFAULT_UNIT)

    def criteria_specs(self) -> list[dict[str, str]]:
        """The criteria as posted; empty for the page's untouched default rows (the service then gives the
        chosen design's and unit's own questions, e.g. ACUTE-Eval's four)."""
        specs = getattr(self, "_criteria", None)
        return specs if specs is not None else criteria_parse(self.cleaned_data["criteria"] or "")

    def criteria_names(self) -> list[str]:
        return [c["name"] for c in self.criteria_specs()]

    def questionnaire_builder_rows(self) -> list[dict[str, str]]:
        """The questionnaire's rows: as posted, else the study's questions, else the default ones."""
        if self.is_bound and questionnaire_rows.rows_posted(self.data):
            return questionnaire_rows.rows_read(self.data)
        if "questionnaire_list" in self.initial:
            return questionnaire_rows.rows_of_questions(self.initial["questionnaire_list"])
        return questionnaire_rows.rows_of_questions(default_questionnaire())

    def clean_questionnaire(self) -> list[dict]:
        if questionnaire_rows.rows_posted(self.data):  # the builder's rows (none left: no questionnaire)
            questions, problems = questionnaire_rows.rows_parse(questionnaire_rows.rows_read(self.data))
            if problems:
                raise forms.ValidationError(problems)
            return questions
        questions = []
        for number, line in enumerate((self.cleaned_data.get("questionnaire") or "").splitlines(), start=1):
            if not line.strip():
                continue
            parts = [p.strip() for p in line.split("|")]
            if len(parts) < 4:
                raise forms.ValidationError(f"line {number}: write name | kind | required or optional | question")
            name, kind, need, question = parts[:4]
            if kind not in QUESTION_KINDS:
                raise forms.ValidationError(f"line {number}: the kind is one of {', '.join(QUESTION_KINDS)}, "
                                            f"not {kind!r}")
            if need not in ("required", "optional"):
                raise forms.ValidationError(f"line {number}: write required or optional, not {need!r}")
            entry = {"name": name, "kind": kind, "required": need == "required", "question": question}
            if kind == "choice":
                entry["choices"] = [c.strip() for c in (parts[4] if len(parts) > 4 else "").split(",") if c.strip()]
            questions.append(entry)
        return questions

    def settings_values(self) -> dict:
        """The text-and-limits settings as ``studies.authoring.editing.study_update`` takes them."""
        data = self.cleaned_data
        closes_at = data.get("closes_at")
        return {
            "title": data["title"], "instructions": data.get("instructions", ""),
            "language": data.get("language") or "en", "language_from_browser": bool(data.get("language_from_browser")),
            "consent_text": data.get("consent_text", ""), "questionnaire": data.get("questionnaire") or [],
            "raters_per_item": data["raters_per_item"], "items_per_assignment": data["items_per_assignment"],
            "reward": data.get("reward"), "estimated_minutes": data.get("estimated_minutes"),
            "time_limit_minutes": data.get("time_limit_minutes") or "",
            "closes_at": closes_at.isoformat() if closes_at else "",
        }

    def structure_values(self) -> dict:
        if self.locked:
            return {}
        return {"design": self.cleaned_data["design"], "design_config": self.design_config(),
                "criteria": self.criteria_specs(), "platform": self.cleaned_data["platform"]}


def _same_rows(posted: list[dict[str, str]], shown: list[dict[str, str]]) -> bool:
    """Whether the posted rows are the shown ones, unedited (what a question is and how it is answered)."""
    keys = ("name", "question", "help", "kind", "labels", "rationale")
    return [[r.get(k, "") for k in keys] for r in posted] == [[r.get(k, "") for k in keys] for r in shown]


def study_form_initial(study: Study) -> dict:
    """The edit form's starting values, read from the study."""
    config, c = study.design_config or {}, study.platform_config or {}
    initial = {
        "title": study.title, "design": study.design, "unit": study.unit, "criteria": criteria_text(study.criteria.all()),
        "criteria_rows": rows_of_criteria(study.criteria.all()),
        "raters_per_item": study.raters_per_item, "items_per_assignment": study.items_per_assignment,
        "platform": study.platform, "instructions": study.instructions, "consent_text": study.consent_text,
        "reward": study.reward, "estimated_minutes": study.estimated_minutes,
        "time_limit_minutes": c.get("time_limit_minutes"), "questionnaire": questionnaire_text(study.questionnaire),
        "questionnaire_list": study.questionnaire or [],
        "language": study.language, "language_from_browser": study.language_from_browser,
    }
    from studies.rating import allocation

    initial["closes_at"] = allocation.study_closes_at(study)
    initial.update(design_for(study).form_initial(config))
    initial.update(unit_for(study).form_initial(study.unit_config or {}))
    return initial


class CollaboratorForm(forms.Form):
    user = forms.CharField(label="Username or e-mail", max_length=254)


class StudyDuplicateForm(forms.Form):
    title = forms.CharField(max_length=200, required=False, help_text="Blank: the title with “(copy)”.")
    experiment = forms.ChoiceField(required=False, label="Into experiment",
                                   help_text="Blank: the same experiment (a new condition beside this one).")

    def __init__(self, *args, experiments=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["experiment"].choices = [("", "the same experiment")] + [(e.slug, e.title) for e in experiments]


class ItemsBuildForm(forms.Form):
    corpus = forms.ChoiceField(choices=(), required=False, help_text="Not needed for a chat study (its items are "
                                                                     "the systems raters chat with).")
    systems = forms.CharField(required=False, help_text="Comma-separated; empty = every system except the reference. "
                                                        "A chat study: the systems with endpoints to chat with.")
    reference_system = forms.SlugField(required=False, help_text="The human reference (anchor for RME/BME; for a "
                                                                 "dialogue study, its first dialogue is the RME anchor).")
    limit = forms.IntegerField(min_value=1, required=False, help_text="Sample this many conversations (seeded).")

    def __init__(self, *args, corpora=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["corpus"].choices = [("", "—")] + [(c.slug, c.slug) for c in corpora]
