"""The study builder's endpoints: the live preview of a draft (the rater's page for a real
item, rendered with the criteria as typed and never saved) and an expected answer authored in it.
Thin: ``studies.authoring.builder`` renders and converts, the practice and check services write."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_http_methods, require_POST

from studies import access
from studies.authoring import builder, editing
from studies.authoring.criteria_rows import rows_posted
from studies.authoring.new_study_preview import new_study_preview as new_study_preview_context
from studies.errors import StudyStateError

ITEM_FIELD = "builder_item"


def _study(request, slug: str):
    return get_object_or_404(access.studies_visible_to(request.user), slug=slug)


def _number(data) -> int:
    text = str(data.get(ITEM_FIELD) or "0").strip()
    return int(text) if text.isdigit() and len(text) <= 6 else 0


@login_required
@require_http_methods(["GET", "POST"])
def builder_preview(request, slug: str):
    """GET: the saved study's preview; POST (the study form as it stands): the draft's. A study whose
    structure is locked (published, or raters started) refuses draft criteria with the reason."""
    study = _study(request, slug)
    data = request.POST if request.method == "POST" else request.GET
    if rows_posted(data) and (lock := editing.structure_lock_reason(study)):
        return render(request, "studies/_builder_preview.html",
                      {"study": study, "refused": f"The criteria cannot change: {lock}."}, status=409)
    return render(request, "studies/_builder_preview.html", builder.preview_context(study, data, _number(data)))


@login_required
@require_POST
def builder_expected(request, slug: str):
    """The researcher's answers to the previewed item saved as a practice item or a gold check item;
    JSON: {"saved": true, "message"} or {"saved": false, "errors": {field: text}} (nothing written)."""
    study = _study(request, slug)
    number = _number(request.POST)
    item = builder.preview_item(study, number)
    if item is None:
        return JsonResponse({"saved": False, "errors": {ITEM_FIELD: "build the study's items first"}}, status=400)
    use = request.POST.get("expected_use", "")
    try:
        _, new = builder.expected_answer_save(study=study, item=item, post=request.POST, use=use,
                                     explanation=request.POST.get("expected_explanation", ""),
                                     tolerance=request.POST.get("expected_tolerance", ""))
    except ValidationError as error:
        errors = {key: "; ".join(texts) for key, texts in error.message_dict.items()} \
            if hasattr(error, "error_dict") else {"expected": "; ".join(error.messages)}
        return JsonResponse({"saved": False, "errors": errors}, status=400)
    except StudyStateError as error:
        return JsonResponse({"saved": False, "errors": {"study": str(error)}}, status=409)
    what = builder.USES[use]
    count = study.practice_items.count() if use == "practice" else study.items.exclude(check_kind="").count()
    if not new:
        return JsonResponse({"saved": True, "message": f"Already saved: item {number + 1} is a {what} with this "
                                                       f"expected answer."})
    return JsonResponse({"saved": True, "message": f"Your answer to item {number + 1} is now the expected answer of "
                                                   f"{what} {count}."})


@login_required
@require_POST
def new_study_preview(request, experiment: str):
    """POST (the new-study form as it stands): the rater's page for a sample item with the draft's
    settings, or the form's problems naming their fields (400). Nothing is saved."""
    found = get_object_or_404(access.experiments_visible_to(request.user), slug=experiment)
    context, status = new_study_preview_context(found, request.POST)
    return render(request, "studies/_builder_preview.html", context, status=status)
