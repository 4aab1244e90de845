"""The rater's practice pages, addressed by the attempt's unguessable token: one practice item at a
time, the feedback after each (agreed or not, and the explanation), then the result: a pass goes on
to the slot, a fail is told so politely with the platform's screened-out code or page."""
from __future__ import annotations

import contextlib

from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext

from studies.designs import design_for
from studies.designs.rater_reads import study_criteria
from studies.errors import AssignmentRefused, ConsentRequired, PracticeRequired, StudyStateError
from studies.models import PracticeAttempt, PracticeItem, Study, StudyItem
from studies.onboarding import selectors, services
from studies.rating import form_tokens, platforms
from studies.rating.language import rater_language_use
from studies.rating.pages import _message, rater_page, render_markdown, start_context
from studies.rating.screens import screens_per_assignment


def practice_begin(request, refusal: PracticeRequired, identity: platforms.Identity, *, via_experiment: bool):
    """The entry's answer to PracticeRequired: the identity's attempt (new or remembered), then its page.
    An invitation's identity is the invite's rater, which the refusal carries (the link has only a token)."""
    identity = refusal.identity or identity
    attempt = services.practice_attempt_begin(
        study=refusal.study, platform=identity.platform, external_id=identity.external_id,
        acceptance_id=identity.acceptance_id, platform_data=identity.platform_data, via_experiment=via_experiment)
    return redirect("raters:practice", token=attempt.token)


def _attempt(token: str) -> PracticeAttempt:
    attempt = get_object_or_404(PracticeAttempt.objects.select_related("study", "experiment"), token=token)
    rater_language_use(attempt.study)
    return attempt


def _failed_page(request, attempt: PracticeAttempt):
    """Polite, with the screened-out code of the study (Prolific: its completion link) or MTurk's request
    to return the HIT; status 200: this is an answer, not an error."""
    study = attempt.study
    code = platforms.screened_out_code(study.platform_config) if attempt.platform == Study.Platform.PROLIFIC else ""
    left = selectors.retakes_left(attempt)
    context = {"attempt": attempt, "study": study, "code": code, "retakes_left": left,
               "wrong": attempt.shown - attempt.agreed, "max_wrong": selectors.max_wrong(study),
               "retake_token": form_tokens.form_token(attempt.token, "practice-retake") if left else "",
               "prolific_url": platforms.prolific_completion_url(study.platform_config, code)
               if attempt.platform == Study.Platform.PROLIFIC else None,
               "mturk": attempt.platform == Study.Platform.MTURK}
    return render(request, "raters/practice_result.html", context)


@rater_page
def practice(request, token: str):
    """Where an attempt stands: the next practice item, the pass page (go on), or the fail page."""
    attempt = _attempt(token)
    if attempt.status == PracticeAttempt.Status.FAILED:
        return _failed_page(request, attempt)
    if attempt.status == PracticeAttempt.Status.PASSED:
        return render(request, "raters/practice_result.html", {
            "attempt": attempt, "study": attempt.study, "passed": True,
            "form_token": form_tokens.form_token(attempt.token, "practice-continue")})
    if attempt.consented_at is None:  # consent first: the instructions and "I agree" before any practice item
        return _consent_page(request, attempt, asked=request.GET.get("consent") == CONSENT_NEEDED)
    position = selectors.attempt_next_position(attempt)
    return redirect("raters:practice_item", token=token, position=position or 0)


CONSENT_NEEDED = "needed"


def _to_consent(token: str):
    """A practice item asked for (or answered) before consent: the consent page, saying why."""
    return redirect(reverse("raters:practice", args=[token]) + f"?consent={CONSENT_NEEDED}")


def _consent_page(request, attempt: PracticeAttempt, *, asked: bool = False):
    """The study's start page (instructions, what the rater will do, consent) before the practice; a
    tick goes on to the first practice item. ``asked``: the rater came from a practice item, which
    waits for their consent (nothing they sent there was saved)."""
    error = gettext("Please read the instructions and tick the box to agree first: practice answers are taken only "
                    "after you agree (nothing was saved).") if asked and request.method != "POST" else None
    status = 200
    if request.method == "POST":
        if not form_tokens.form_token_valid(attempt.token, "practice-consent", request.POST.get(form_tokens.FIELD)):
            return _message(request, gettext("This form could not be accepted"), gettext("Reload the page and try again."), status=403)
        if request.POST.get("agree") == "yes":
            services.practice_attempt_consent(attempt=attempt)
            return redirect("raters:practice", token=attempt.token)
        error, status = gettext("Please tick the box to say you agree before starting."), 400
    study = attempt.study
    # the screens the assignment will hold after the practice: its items and the checks among them
    context = {**start_context(study, items=screens_per_assignment(study)["screens"],
                               error=error, form_token=form_tokens.form_token(attempt.token, "practice-consent")),
               "practice_first": True}
    return render(request, "raters/start.html", context, status=status)


def _item_page(request, attempt: PracticeAttempt, item: PracticeItem, number: int, total: int, *,
               values: dict, errors: dict, status: int = 200):
    study = attempt.study
    # The design's own form, shown for an unsaved StudyItem that carries the practice conversation (its
    # negative id keeps the response-text cache apart from real items).
    shown = StudyItem(pk=-item.pk, study=study, conversation=item.conversation,
                      reference_response=item.reference_response, reference_value=item.reference_value)
    page_url = reverse("raters:practice_item", args=[attempt.token, number - 1])
    context = {
        "study": study, "item": shown, "practice": True, "turns": item.conversation.turns,
        "errors": errors, "position": number - 1, "number": number, "total": total,
        "progress": round(100 * (number - 1) / total), "page_url": page_url,
        "form_token": form_tokens.form_token(attempt.token, "practice"),
        "preview_note": gettext("Practice %(number)s of %(total)s: after you answer, you will see whether your answer "
                                "matches ours and why. Practice answers are not part of the study's results.")
        % {"number": number, "total": total},
        "instructions": render_markdown(study.instructions),
        **design_for(study).form_context(study=study, item=shown, order=item.response_ids, values=values,
                                         errors=errors, criteria=study_criteria(study)),
    }
    return render(request, "raters/item.html", context, status=status)


def _feedback_page(request, attempt: PracticeAttempt, item: PracticeItem, answer, number: int, total: int):
    last = number >= total
    criteria = {c.name: c.question for c in study_criteria(attempt.study)}
    return render(request, "raters/practice_feedback.html", {
        "attempt": attempt, "study": attempt.study, "agreed": answer.agreed, "number": number, "total": total,
        "expected": selectors.expected_answer_text(item, criteria),
        "given": selectors.given_answer_text(answer.values or {}, criteria),
        "rows": selectors.feedback_rows(item, answer.values or {}, criteria),
        "explanation": render_markdown(item.explanation), "turns": item.conversation.turns,
        "next_url": reverse("raters:practice", args=[attempt.token]) if last
        else reverse("raters:practice_item", args=[attempt.token, number]), "last": last})


@rater_page
def practice_item(request, token: str, position: int):
    """GET: the practice item, or its feedback once answered (a reload never offers a second try).
    POST: the answer (form token checked), stored once, answered with the feedback page."""
    attempt = _attempt(token)
    items = selectors.practice_items(attempt.study)
    if not 0 <= position < len(items):
        raise Http404
    item, number, total = items[position], position + 1, len(items)
    if attempt.consented_at is None:  # consent first
        return _to_consent(token)
    answered = attempt.answers.filter(item=item).first()
    if request.method != "POST":
        if answered is not None:
            return _feedback_page(request, attempt, item, answered, number, total)
        if attempt.status != PracticeAttempt.Status.STARTED:
            return redirect("raters:practice", token=token)
        return _item_page(request, attempt, item, number, total, values={}, errors={})
    if not form_tokens.form_token_valid(attempt.token, "practice", request.POST.get(form_tokens.FIELD)):
        return _message(request, gettext("This form could not be accepted"),
                        gettext("It was not sent from this practice's own page (or the page is out of date). Reload the page "
                        "and try again; nothing was saved."), status=403)
    try:
        answer, errors = services.practice_answer(attempt=attempt, item=item, post=request.POST)
    except ConsentRequired:
        return _to_consent(token)
    except StudyStateError:
        return redirect("raters:practice", token=token)
    except ValidationError as error:
        errors, answer = {k: "; ".join(v) for k, v in error.message_dict.items()}, None
    if answer is None:
        return _item_page(request, attempt, item, number, total, values=dict(request.POST.items()), errors=errors,
                          status=400)
    return _feedback_page(request, attempt, item, answer, number, total)


@rater_page
def practice_retake(request, token: str):
    """POST on the fail page, while retakes are left: the practice again from its first item."""
    attempt = _attempt(token)
    if request.method != "POST":
        return redirect("raters:practice", token=token)
    if not form_tokens.form_token_valid(attempt.token, "practice-retake", request.POST.get(form_tokens.FIELD)):
        return _message(request, gettext("This form could not be accepted"), gettext("Reload the page and try again."), status=403)
    with contextlib.suppress(StudyStateError):  # no retake left, or not failed: the practice page says where it stands
        services.practice_retake(attempt=attempt)
    return redirect("raters:practice", token=token)


@rater_page
def practice_continue(request, token: str):
    """POST after a pass: the slot through the entry the rater came by, then the study's start page."""
    attempt = _attempt(token)
    if request.method != "POST":
        return redirect("raters:practice", token=token)
    if not form_tokens.form_token_valid(attempt.token, "practice-continue", request.POST.get(form_tokens.FIELD)):
        return _message(request, gettext("This form could not be accepted"), gettext("Reload the page and try again."), status=403)
    try:
        assignment = services.practice_continue(attempt=attempt)
    except StudyStateError:
        return redirect("raters:practice", token=token)
    except AssignmentRefused as refusal:
        hand_back = gettext(" Please return this HIT.") if attempt.platform == Study.Platform.MTURK else ""
        return _message(request, gettext("Thank you for your interest"),
                        gettext("We cannot offer you this task: %(refusal)s.") % {"refusal": refusal} + hand_back,
                        status=403)
    return redirect("raters:start", token=assignment.token)
