"""The new-study page's live preview: the rater's page for a sample item, built from the study form
as it stands and never saved (no study, criterion or item is written; nothing is read but the form).

The edit page previews one of the study's real items (``studies.authoring.builder``); a study being
created has none yet, so a fixed sample conversation with two candidate responses stands in. The
sample is shown for the designs and units whose rater page needs nothing stored (a Likert scale on
responses, the default); any other choice gets a line saying the edit page shows it once the draft
has items. A form that would be refused on saving is refused here with the same messages, each
naming its field.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

from studies.authoring.builder_defaults import default_rows
from studies.authoring.criteria_rows import rows_specs
from studies.authoring.forms import StudyForm
from studies.designs import design_for
from studies.designs.kinds import criterion_kind_clean
from studies.designs.units.sides import context_sides
from studies.errors import errors_text
from studies.models import Criterion, Design, Experiment, Study, StudyItem, Unit
from studies.rating.views import item_preview_context

SAMPLE_TURNS = [
    {"speaker": "user", "text": "Hi! Can you suggest something to cook tonight? I only have rice, eggs and spinach."},
]
SAMPLE_RESPONSES = {
    1: "How about egg fried rice with spinach? Fry the spinach, add cooked rice, then scramble in the eggs.",
    2: "I like cooking too. What is your favourite food?",
}
# What the sample can show: a design and unit whose rater page reads only the form's settings.
PREVIEWED = {(Design.LIKERT, Unit.RESPONSE)}
UNTITLED = "Untitled study"  # the preview needs no title; the save still does


def _field_messages(form: StudyForm) -> list[str]:
    """Each of the form's problems as "<field label>: <message>" (the whole form's problems alone)."""
    messages = []
    for name, errors in form.errors.items():
        field = form.fields.get(name)
        label = (field.label or name.replace("_", " ").capitalize()) if field else ""
        messages += [f"{label}: {text}" if label else text for text in errors]
    return messages


def _criteria(study: Study, form: StudyForm) -> tuple[list[Criterion], list[str]]:
    """The form's criteria as unsaved rows (the chosen design's and unit's own for untouched defaults),
    and the problems of those left out, each naming its criterion (as the edit page's preview does)."""
    specs = form.criteria_specs() or rows_specs(default_rows(study.design, study.unit))[0]
    takes_kinds = design_for(study).takes_kinds
    criteria, problems = [], []
    for position, spec in enumerate(specs):
        settings, found = criterion_kind_clean(spec, takes_kinds=takes_kinds, prefix=spec["name"])
        if found:
            problems += [f"{spec['name']}: {message}" for message in found.values()]
            continue
        criteria.append(Criterion(study=study, name=spec["name"], position=position,
                                  question=spec.get("question") or spec["name"].replace("-", " ").capitalize(),
                                  help_text=spec.get("help_text", ""), **settings))
    return criteria, problems


def new_study_preview(experiment: Experiment, data: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """What ``studies/_builder_preview.html`` shows for the posted new-study form, and the status: 200
    with the sample item as raters would get it, or 400 with ``refused`` naming the fields to fix."""
    data = data.copy()
    if not str(data.get("title", "")).strip():
        data["title"] = UNTITLED
    form = StudyForm(data)
    if not form.is_valid():
        return {"refused": "Fix the form to see the rater's page: " + "; ".join(_field_messages(form)),
                "new_study": True}, 400
    design, unit = form.cleaned_data["design"], form.cleaned_data["unit"] or Unit.RESPONSE
    try:
        config = design_for(design).config_clean(form.design_config())
    except ValidationError as error:
        return {"refused": "Fix the form to see the rater's page: " + "; ".join(errors_text(error)),
                "new_study": True}, 400
    study = Study(experiment=experiment, title=form.cleaned_data["title"], design=design, unit=unit,
                  design_config=config, unit_config=form.unit_config(),
                  instructions=form.cleaned_data["instructions"])
    if (design, unit) not in PREVIEWED:
        return {"study": study, "new_study": True,
                "not_previewed": f"The rater's page for {study.get_design_display()} on {study.get_unit_display()} "
                                 "is shown on the edit page once the draft is created and its items are built."}, 200
    item = StudyItem(study=study, position=0)
    item.sample_texts = SAMPLE_RESPONSES
    criteria, problems = _criteria(study, form)
    context = item_preview_context(study, item, criteria=criteria, order=list(SAMPLE_RESPONSES), total=1)
    context.update({"turns": context_sides(SAMPLE_TURNS), "study": study, "new_study": True,
                    "item_number": 0, "item_count": 1, "builder_problems": problems, "builder_notes": [
                        "A sample conversation: your study's own items are shown on its edit page once they are built."]})
    return context, 200
