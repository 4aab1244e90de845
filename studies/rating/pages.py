"""What every rater page shares: Markdown and sentences for messages, the message page, the token-addressed assignment with its guard (ended, screened out, expired), and where the rater goes next."""
from __future__ import annotations

import re
from functools import wraps

import markdown
import nh3
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.csrf import csrf_exempt

from studies.designs import design_for, unit_for
from studies.models import Assignment, Study
from studies.rating import form_tokens, platforms, review
from studies.rating.framing import frameable_by_platforms
from studies.rating.language import rater_language_use
from studies.rating.screen_words import screen_words


def render_markdown(text: str) -> str:
    """Researcher-written Markdown as HTML with anything unsafe removed (nh3)."""
    return mark_safe(nh3.clean(markdown.markdown(text or "", extensions=["extra", "sane_lists"])))


def sentence(text: str) -> str:
    """``text`` as a sentence: its first letter upper-cased and nothing else touched (``str.capitalize``
    would lower-case the rest: "The link lacks hitid", "mechanical turk"), ending in one full stop."""
    text = str(text).strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def identity_problem(error: platforms.IdentityError) -> str:
    """A bad link's message for the rater. One that starts with the parameter's name says so, and the
    name keeps its exact spelling (``workerId``, ``PROLIFIC_PID``) instead of being capitalised."""
    text = str(error)
    if error.parameter and text.startswith(error.parameter + " "):
        return sentence(gettext("the link parameter %(name)s %(problem)s")
                        % {"name": error.parameter, "problem": text[len(error.parameter) + 1:]})
    return sentence(text)


def _message(request, title: str, message: str, status: int = 200):
    return render(request, "raters/message.html", {"title": title, "message": message}, status=status)


NOT_FOUND = (gettext_lazy("Task not found"),
             gettext_lazy("There is no task at this address. Please check the link you were given."))


BROWSER_COOKIE = "concord_browser"


_BROWSER_SECRET = re.compile(r"^[A-Za-z0-9_-]{43}$")


def rater_page(view):
    """A rater page: frameable by the platforms (studies.rating.framing), exempt from Django's cookie CSRF
    check (the views check a per-assignment form token instead), and a missing assignment or study
    answers with the rater's own 404 page, framed like the rest."""
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except Http404:
            return _message(request, *NOT_FOUND, status=404)
    return csrf_exempt(frameable_by_platforms(wrapped))


def _assignment(token: str) -> Assignment:
    assignment = get_object_or_404(Assignment.objects.select_related("study", "rater"), token=token)
    rater_language_use(assignment.study)
    return assignment


def _form_refused(request, assignment: Assignment, purpose: str):
    """None when the POST carries this assignment's form token for ``purpose``, else the 403 page."""
    if form_tokens.form_token_valid(assignment.token, purpose, request.POST.get(form_tokens.FIELD)):
        return None
    return _message(request, gettext("This form could not be accepted"),
                    gettext("It was not sent from this task's own page (or the page is out of date). Reload the page and "
                    "try again; nothing was saved."), status=403)


def _next_url(assignment: Assignment, after: int | None = None, total: int | None = None) -> str:
    """The next item to show: the one after ``after`` if any, else the first unanswered, else the questionnaire.
    With ``total`` (the assignment's number of items, positions 0..total-1) the following item needs no query."""
    slots = assignment.assignment_items.order_by("position")
    if after is not None:
        if total is not None:
            if after + 1 < total:
                return reverse("raters:item", args=[assignment.token, after + 1])
        elif (following := slots.filter(position=after + 1).first()) is not None:
            return reverse("raters:item", args=[assignment.token, following.position])
    unanswered = slots.filter(answered_at__isnull=True).first()
    if unanswered is not None:
        return reverse("raters:item", args=[assignment.token, unanswered.position])
    return reverse("raters:questionnaire", args=[assignment.token])


def _ended_page(request, assignment: Assignment):
    """The page for an assignment that can no longer be worked on or paid, or None. An assignment
    past its time limit is abandoned here, on access (its items go back to the pool at once)."""
    return_it = {Study.Platform.MTURK: gettext(" Please return the HIT on Mechanical Turk."),
                 Study.Platform.PROLIFIC: gettext(" Please return your submission on Prolific.")}.get(assignment.rater.platform, "")
    review.assignment_expire_if_due(assignment=assignment)
    # A submitted MTurk/invite assignment screened out later is left to the reviewer: its page stays the done page.
    if assignment.screened_out and (assignment.status == Assignment.Status.ABANDONED
                                    or assignment.rater.platform == Study.Platform.PROLIFIC):
        return _screened_out_page(request, assignment, return_it)
    if assignment.status == Assignment.Status.ABANDONED and assignment.platform_data.get("abandon_kind") == review.EXPIRED:
        return _message(request, gettext("Time is up"), gettext("The time allowed for this task has passed, so it can no longer be "
                                               "completed. Thank you for your interest.") + return_it, status=410)
    if assignment.status == Assignment.Status.ABANDONED:
        return _message(request, gettext("This task was abandoned"),
                        gettext("This assignment was given up or ran out of time, so it can no longer be completed.")
                        + return_it, status=410)
    if assignment.status == Assignment.Status.REJECTED:
        return _message(request, gettext("This work was not accepted"),
                        gettext("This assignment was reviewed and rejected; it cannot be completed again. If you think this "
                        "is a mistake, contact the researcher through the platform."), status=410)
    return None


def _screened_out_page(request, assignment: Assignment, return_it: str):
    """A rater screened out (e.g. failed attention checks): the study's screened-out code when the
    researcher set one (Prolific), else a request to return the task."""
    code = assignment.completion_code if assignment.rater.platform == Study.Platform.PROLIFIC else ""
    if not code:
        return _message(request, gettext("Thank you for your time"),
                        gettext("Your answers did not pass this study's checks, so this task has ended.") + return_it)
    context = {"assignment": assignment, "code": code, "screened_out": True,
               "prolific_url": platforms.prolific_completion_url(assignment.study.platform_config, code)}
    return render(request, "raters/done.html", context)


def _guard(request, assignment: Assignment):
    """A page to show instead of the requested one, or None."""
    if (page := _ended_page(request, assignment)) is not None:
        return page
    if assignment.status != Assignment.Status.STARTED:
        return redirect("raters:done", token=assignment.token)
    return None


def start_context(study: Study, *, items: int, error: str | None, form_token: str) -> dict:
    """What the start page shows (instructions, what the rater will do, the consent box), for a slot or,
    before any practice item, for a practice attempt: consent comes first either way."""
    design, unit = design_for(study), unit_for(study)
    chats = (gettext("For each item you first chat with a dialogue system, then judge the conversation you had.")
             if unit.collects_dialogues else "")
    return {
        "study": study, "error": error, "instructions": render_markdown(study.instructions),
        "design_explanation": " ".join(filter(None, [chats, design.description(study)])),
        "screen_noun": screen_words(design.screen_noun(unit))[0],  # what one screen shows, counted
        "screen_noun_one": screen_words(design.screen_noun(unit))[1],  # "There is 1 pair of conversations", not "are 1 pairs"
        "items": items, "criteria": study.criteria.all(), "form_token": form_token,
    }
