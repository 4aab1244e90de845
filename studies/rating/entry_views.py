"""Rater entry: a study link or the experiment link (platform identity, invites, MTurk's preview), consent and instructions, then the first item.\n\nEvery page after the entry is addressed by the assignment's unguessable token."""
from __future__ import annotations

import math
import secrets
from collections.abc import Callable

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext

from studies.errors import AssignmentRefused, PracticeRequired, StudyStateError
from studies.models import Study
from studies.rating import allocation, closing, form_tokens, framing, invites, links, platforms
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating import selectors as rater_selectors
from studies.rating.language import conditions_language_use, rater_language_use
from studies.rating.pages import (
    _BROWSER_SECRET,
    BROWSER_COOKIE,
    NOT_FOUND,
    _assignment,
    _form_refused,
    _guard,
    _message,
    _next_url,
    identity_problem,
    rater_page,
    render_markdown,
    sentence,
    start_context,
)
from studies.rating.views import _canonical_order, _item_context

# The page that answers PracticeRequired: the practice's first page (``studies.onboarding.views.practice_begin``).
# The practice builds on the rater pages here, so it is handed in at start-up (``StudiesConfig.ready``) rather
# than imported from below.
_practice: dict[str, Callable[..., HttpResponse]] = {}


def practice_page_register(begin: Callable[..., HttpResponse]) -> None:
    """Set the view that begins the practice: ``begin(request, refusal, identity, via_experiment=...)``."""
    _practice["begin"] = begin


def _practice_begin(request, required: PracticeRequired, identity: platforms.Identity, *, via_experiment: bool):
    return _practice["begin"](request, required, identity, via_experiment=via_experiment)


def _refusal_page(request, study: Study, refusal: AssignmentRefused):
    reason, platform = refusal.reason, study.platform
    if reason == AssignmentRefused.ALREADY_DONE:
        if platform == Study.Platform.MTURK:
            return _message(request, gettext("You have already done this study"),
                            gettext("Our records show that you have already taken part in this study with another HIT. "
                            "Please return this HIT so that another worker can take it."), status=403)
        return _message(request, gettext("You have already done this study"),
                        gettext("Our records show that you have already taken part in this study in another session. "
                        "Please return this submission on Prolific."), status=403)
    if reason == AssignmentRefused.INVITE_CLAIMED:
        return _message(request, gettext("This invitation is already in use"),
                        gettext("This invitation link has already been opened in another browser, and each link is for one "
                        "person. Open it in the browser you used first, or ask the researcher for a link of your "
                        "own."), status=403)
    if reason == AssignmentRefused.INVITE_EXPIRED:
        return _message(request, gettext("This invitation has expired"),
                        gettext("Please ask the researcher for a new link."), status=410)
    if reason == AssignmentRefused.INVITE_INVALID:
        return _message(request, gettext("We could not start the task"), sentence(refusal), status=400)
    hand_back = gettext(" Please return this HIT.") if platform == Study.Platform.MTURK else ""
    return _message(request, gettext("Thank you for your interest"),
                    gettext("We cannot offer you this task: %(refusal)s.") % {"refusal": refusal} + hand_back,
                    status=409 if reason == AssignmentRefused.BUSY else 403)


def _framed_refusal(request):
    """The page for a load framed by a site the rater pages may not be framed by, or None. Checked
    before any assignment is made: the browser will not show the page, so a "working" assignment
    made now would hold places until its time limit."""
    if (framer := framing.refused_framer(request)) is None:
        return None
    if framer == framing.UNKNOWN_FRAMER:
        return render(request, "raters/framed_start.html", {"start_url": request.get_full_path()})
    return _message(request, gettext("This task cannot be shown inside this page"),
                    gettext("The task was opened in a frame of %(framer)s, which may not show it. Nothing was stored: "
                            "open the task from Mechanical Turk, Prolific or your invitation link.") % {"framer": framer},
                    status=403)


def _mturk_preview(request, study: Study):
    """What a worker sees before accepting the HIT: instructions and the first item; nothing stored."""
    if study.status != Study.Status.PUBLISHED:
        return _message(request, gettext("This study has closed"), gettext("It takes no new workers. Thank you for your interest."),
                        status=410)
    if not rater_selectors.study_has_room(study):
        return _message(request, gettext("This study is complete"), gettext("It has all the ratings it needs. Thank you for your "
                                                           "interest."), status=410)
    item = study.items.order_by("position").select_related("conversation", "reference_response").first()
    context = _item_context(study, item, _canonical_order(item), {}, {}, preview=True)
    context["preview_note"] = "This is a preview. Accept the HIT to start; nothing you do here is saved."
    context["instructions"] = render_markdown(study.instructions)
    context["instructions_open"] = True
    return render(request, "raters/item.html", context)


@rater_page
def entry(request, slug: str):
    """A study's link by its slug (``/r/<slug>/``): links handed out before the opaque key; still open."""
    return _enter(request, links.enterable_studies().filter(slug=slug).first())


@rater_page
def condition_entry(request, key: str):
    """A study's link (``/r/c/<rater_key>/``, ``studies.rating.links``): it names no condition."""
    return _enter(request, links.enterable_studies().filter(rater_key=key).first())


def _enter(request, study: Study | None):
    if study is None:
        return _message(request, *NOT_FOUND, status=404)
    rater_language_use(study)
    closing.study_close_if_done(study=study, check_items=False)  # on access: past its closing time
    try:
        identity = platforms.identity_from(request.GET, study.platform)
    except platforms.IdentityError as error:
        return _message(request, gettext("We could not start the task"), identity_problem(error), status=400)
    if identity.preview:
        return _mturk_preview(request, study)
    if (page := _framed_refusal(request)) is not None:
        return page
    new_secret = None
    try:
        if identity.platform == Study.Platform.INVITE:
            secret = request.COOKIES.get(BROWSER_COOKIE, "")
            if not _BROWSER_SECRET.match(secret):
                secret = new_secret = secrets.token_urlsafe(32)
            assignment = invites.invite_enter(study=study, token=identity.acceptance_id, browser_secret=secret)
        else:
            assignment = rater_entry.assignment_enter(
                study=study, platform=identity.platform, external_id=identity.external_id,
                acceptance_id=identity.acceptance_id, platform_data=identity.platform_data)
    except PracticeRequired as required:  # no slot yet: the practice first (studies.onboarding)
        response = _practice_begin(request, required, identity, via_experiment=False)
    except AssignmentRefused as refusal:
        return _refusal_page(request, study, refusal)
    else:
        response = _guard(request, assignment) or redirect("raters:start", token=assignment.token)
    if new_secret:  # also on the way to the practice: the invite is claimed by this browser either way
        # First-party and HttpOnly: binds the invite to this browser; only its hash is stored.
        response.set_cookie(BROWSER_COOKIE, new_secret, max_age=365 * 24 * 3600, path="/r/", httponly=True,
                            samesite="Lax", secure=settings.SESSION_COOKIE_SECURE or request.is_secure())
    return response


@rater_page
def experiment_entry(request, slug: str):
    """The experiment-level link (``/r/x/<experiment>/``, same platform parameters as a study's
    link): a new rater is placed in the least-filled open condition, a returning one goes back to
    theirs (rater_entry.experiment_enter)."""
    link = links.experiment_link_open(slug)
    if link is None:
        return _message(request, *NOT_FOUND, status=404)
    experiment, linked, open_ones = link.experiment, link.linked, link.open_ones
    conditions_language_use(linked)
    if link.problem:
        return _message(request, gettext("This link is not set up correctly"),
                        gettext("We cannot start the task: %(problem)s. Nothing was stored; please tell the researcher.")
                        % {"problem": link.problem},
                        status=409)
    platform = link.platform
    if platform == Study.Platform.INVITE:
        return _message(request, gettext("We could not start the task"), gettext("This experiment takes raters by invitation: "
                        "please open the invitation link you were given."), status=400)
    try:
        identity = platforms.identity_from(request.GET, platform)
    except platforms.IdentityError as error:
        return _message(request, gettext("We could not start the task"), identity_problem(error), status=400)
    if identity.preview:
        loads = allocation.condition_loads(open_ones)
        roomy = [s for s in sorted(open_ones, key=lambda s: loads.get(s.pk, math.inf)) if rater_selectors.study_has_room(s)]
        return _mturk_preview(request, roomy[0] if roomy else linked[0])
    if (page := _framed_refusal(request)) is not None:
        return page
    try:
        assignment = rater_entry.experiment_enter(
            experiment=experiment, platform=identity.platform, external_id=identity.external_id,
            acceptance_id=identity.acceptance_id, platform_data=identity.platform_data)
    except PracticeRequired as required:
        return _practice_begin(request, required, identity, via_experiment=True)
    except AssignmentRefused as refusal:
        return _refusal_page(request, linked[0], refusal)
    except StudyStateError as error:
        return _message(request, gettext("This link is not set up correctly"),
                        gettext("We cannot start the task: %(problem)s. Nothing was stored; please tell the researcher.")
                        % {"problem": error},
                        status=409)
    return _guard(request, assignment) or redirect("raters:start", token=assignment.token)


@rater_page
def start(request, token: str):
    assignment = _assignment(token)
    if (page := _guard(request, assignment)) is not None:
        return page
    error = None
    if request.method == "POST":
        if (refused := _form_refused(request, assignment, "consent")) is not None:
            return refused
        if request.POST.get("agree") == "yes":
            answering.assignment_consent(assignment=assignment)
            return redirect(_next_url(assignment))
        error = gettext("Please tick the box to say you agree before starting.")
    elif assignment.consented_at is not None:
        return redirect(_next_url(assignment))
    context = {"assignment": assignment, **start_context(
        assignment.study, items=assignment.assignment_items.count(), error=error,
        form_token=form_tokens.form_token(assignment.token, "consent"))}
    return render(request, "raters/start.html", context, status=400 if error else 200)
