"""The researcher's practice editing on the study page (its Practice card): add and remove practice
items, set the pass mark, share the practice with the experiment's other conditions. Thin: the services check everything; a refused form comes back to the
study page with what was typed and each problem under its own field."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from studies import access
from studies.authoring import rule_rows
from studies.errors import StudyStateError
from studies.models import PracticeItem
from studies.onboarding import services

FORM_FIELDS = ("context", "responses", "explanation", "reference", "reference_value", "pass_mark",
               "owner_wide", "max_wrong", "retakes")


def session_key(study) -> str:
    return f"practice-form-{study.pk}"


def field_of(key: str) -> str:
    """The form field a service's problem key belongs to: ``rules[0].value`` -> ``rules``."""
    return key.split("[", 1)[0].split(".", 1)[0]


def field_errors(error: ValidationError) -> dict[str, list[str]]:
    """Problems grouped by form field, each keeping its own key where it names a part (``rules[0].value``)."""
    grouped: dict[str, list[str]] = {}
    for key, texts in error.message_dict.items():
        field = field_of(key)
        prefix = f"{key}: " if key != field else ""
        grouped.setdefault(field, []).extend(prefix + t for t in texts)
    return grouped


def _do(request, study, action: str) -> str:
    post = request.POST
    if action == "create":  # the expected answer by rule rows (rule_rows), never typed JSON
        with rule_rows.rules_posted(post) as rules:
            services.practice_item_create(study=study, context=post.get("context", ""),
                                          responses=post.get("responses", ""), rules=rules,
                                          explanation=post.get("explanation", ""), reference=post.get("reference"),
                                          reference_value=post.get("reference_value") or None)
        return "Practice item added."
    if action == "delete":
        item = get_object_or_404(PracticeItem, study=study, pk=post.get("item") or 0)
        services.practice_item_delete(item=item)
        return "Practice item removed."
    if action == "configure":
        services.onboarding_configure(study=study, pass_mark=post.get("pass_mark"), owner_wide=post.get("owner_wide"),
                                      max_wrong=post.get("max_wrong"), retakes=post.get("retakes"))
        return "Practice settings saved."
    if action == "share":
        updated, skipped = services.practice_share(study=study)
        text = (f"Practice shared with {len(updated)} condition(s)"
                + (": " + ", ".join(s.title for s in updated) if updated else "") + ".")
        if skipped:
            text += " Not shared with " + "; ".join(f"{s.title} ({why})" for s, why in skipped) + "."
        return text
    raise ValidationError({"action": f"unknown action {action}"})


@login_required
@require_POST
def practice_action(request, slug: str, action: str):
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    try:
        messages.success(request, _do(request, study, action))
    except ValidationError as error:
        request.session[session_key(study)] = {
            "action": action, "errors": field_errors(error),
            "values": {k: request.POST.get(k, "") for k in FORM_FIELDS},
            "rule_rows": rule_rows.rows_posted(request.POST)}
        if action == "share":
            messages.error(request, "; ".join(t for texts in error.message_dict.values() for t in texts))
    except StudyStateError as error:
        messages.error(request, str(error))
    return redirect(reverse("studies:study_detail", args=[study.slug]) + "#practice")
