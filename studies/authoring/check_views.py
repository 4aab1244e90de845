"""Researcher pages for attention checks and gold items (studies.authoring.checks): list, add (a form or a
CSV), remove, and the placement / pass-rate settings. Thin: the service checks everything."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from studies import access
from studies.authoring import checks, dialogue_set_checks, gold_pool, rule_rows
from studies.designs import design_for
from studies.errors import StudyStateError, errors_text
from studies.models import CheckKind, StudyItem
from studies.pseudonyms import rater_pseudonym
from studies.rating import chat_checks
from studies.reports.check_selectors import study_checks_summary

MAX_UPLOAD = 5_000_000


def _study(request, slug):
    return get_object_or_404(access.studies_visible_to(request.user).prefetch_related("criteria"), slug=slug)


@login_required
def checks_page(request, slug):
    study = _study(request, slug)
    summary = study_checks_summary(study)
    flagged = [{"assignment": a, "rater": rater_pseudonym(study.experiment_id, a.rater_id)}
               for a in summary["flagged"]]
    form = request.session.pop(f"checks-form-{study.pk}", {})
    criteria = {c.name: c.question for c in study.criteria.all()}
    items = [{**row, "expected": rule_rows.rules_text(row["rules"], criteria,
                                                      noun="Conversation" if row.get("conversations") else "Response")}
             for row in checks.study_check_items(study)]
    return render(request, "studies/checks.html", {
        "study": study, "design": design_for(study), "items": items,
        "scripted_checks": chat_checks.scripted_turn_checks(study), "summary": summary,
        "checks_whole": dialogue_set_checks.whole_note(study),
        "flagged": flagged, "kinds": CheckKind.choices, "form": form,
        # the hand-written check item's expected answer, by controls (rule_rows), never typed JSON
        "rule_choices": rule_rows.rule_choices(study), "rule_rows": form.get("rule_rows") or rule_rows.rows_empty(),
        # regular items showing a check's or a practice item's conversation: they leave the pool at publish
        "shadowed": len(gold_pool.shadowed_item_ids(study)), "empty_rule_rows": rule_rows.rows_empty()[:1],
    })


def _do(request, study, action: str) -> str:
    post = request.POST
    if action == "create":  # the expected answer by rule rows (rule_rows)
        with rule_rows.rules_posted(post) as rules:
            compared = design_for(study).check_conversations  # conversation_<k> (and speaker_<k>) fields
            if chat_checks.scripted_turn_checks(study):  # a scripted bot reply in the rater's chat
                checks.check_item_create(study=study, kind=post.get("kind", ""), rules=rules,
                                         scripted_reply=post.get("scripted_reply", ""),
                                         position=post.get("position", ""))
            elif compared:
                checks.check_item_create(study=study, kind=post.get("kind", ""), rules=rules, conversations=[
                    {"turns": post.get(f"conversation_{k}", ""), "speaker": post.get(f"speaker_{k}", "")}
                    for k in range(1, compared + 1)])
            else:
                checks.check_item_create(study=study, kind=post.get("kind", ""), context=post.get("context", ""),
                                         responses=post.get("responses", ""), rules=rules,
                                         reference=post.get("reference"),
                                         reference_value=post.get("reference_value") or None)
        return "Check item added."
    if action == "delete":
        item = get_object_or_404(StudyItem, study=study, pk=post.get("item") or 0)
        checks.check_item_delete(item=item)
        return "Check item removed."
    if action == "rule_drop":  # the check no longer tests this answer
        item = get_object_or_404(StudyItem, study=study, check_kind__gt="", pk=post.get("item") or 0)
        checks.check_rule_drop(item=item, index=post.get("rule"))
        return "Rule dropped: the check no longer tests that answer."
    if action == "rule_add":
        item = get_object_or_404(StudyItem, study=study, check_kind__gt="", pk=post.get("item") or 0)
        with rule_rows.rules_posted(post) as rules:
            checks.check_rules_add(item=item, rules=rules)
        return "Rule added."
    if action == "configure":
        checks.study_checks_configure(study=study, per_assignment=post.get("per_assignment"),
                                      positions=post.get("positions", ""), min_pass_rate=post.get("min_pass_rate"))
        return "Check settings saved."
    if action == "import":
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationError({"file": "choose a CSV file"})
        if upload.size > MAX_UPLOAD:
            raise ValidationError({"file": "larger than 5 MB"})
        return f"{checks.check_items_import(study=study, stream=upload)} check item(s) imported."
    raise ValidationError({"action": f"unknown action {action}"})


@login_required
@require_POST
def checks_action(request, slug, action):
    study = _study(request, slug)
    try:
        messages.success(request, _do(request, study, action))
    except ValidationError as error:
        for text in errors_text(error):
            messages.error(request, text)
        if action == "create":  # keep what was typed
            request.session[f"checks-form-{study.pk}"] = {
                **{k: request.POST.get(k, "") for k in ("kind", "context", "responses", "reference", "reference_value",
                                                        "conversation_1", "conversation_2", "speaker_1", "speaker_2",
                                                        "scripted_reply", "position")},
                "rule_rows": rule_rows.rows_posted(request.POST)}
    except StudyStateError as error:
        messages.error(request, str(error))
    return redirect("studies:study_checks", slug=study.slug)
