"""The rater API's entries (the rest is ``rater_views``): a study's link or the experiment's link,
as the entry pages take them (``studies.rating.entry_views``), with the rater's consent. The identity is the
link's own query parameters (``link``), checked and bound by the same services (``platforms.identity_from``,
``invites.invite_enter``, ``entry.assignment_enter`` / ``entry.experiment_enter``); every refusal is a 409
whose problem ``type`` names its reason (``AssignmentRefused``: full, closed, blocked, already_done,
other_condition, invite_claimed, invite_expired, busy), a bad link a 400 naming the parameter (``link.<name>``).
Nothing is written on a refusal, and nothing without consent. A study with practice items answers as its
entry page does (``rater_practice``): the identity's practice attempt, begun with the session's consent, in a
409 ``practice_required`` (``practice_failed`` once failed) that carries its ``practice`` token and key."""
from __future__ import annotations

from django.db.models import Q
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies.api.errors import Conflict
from studies.api.inputs import StrictInput
from studies.api.rater_practice import practice_refusal
from studies.api.rater_views import RaterAssignmentSerializer, RaterView, assignment_view
from studies.errors import AssignmentRefused, PracticeRequired
from studies.models import Assignment, PracticeAttempt, Study
from studies.onboarding import services as onboarding
from studies.rating import answers as answering
from studies.rating import closing, invites, links, platforms, review
from studies.rating import entry as rater_entry
from studies.rating.language import conditions_language_use, rater_language_use


class RaterSessionInputSerializer(StrictInput):
    link = serializers.DictField(child=serializers.CharField(allow_blank=True, trim_whitespace=False),
                                 help_text="the query parameters of the rater's link: invite, or workerId, "
                                           "assignmentId, hitId, turkSubmitTo, or PROLIFIC_PID, STUDY_ID, SESSION_ID")
    consent = serializers.BooleanField(help_text="the rater read the instructions and agrees: must be true")
    client_secret = serializers.CharField(required=False, min_length=16, max_length=128,
                                          help_text="an invitation's claim (stands for the browser): the first "
                                                    "secret claims it, the same one resumes")


class _SessionApi(RaterView):
    throttle_classes = tuple(api_settings.DEFAULT_THROTTLE_CLASSES)  # it may write: rate limited per client

    def given(self, request) -> dict:
        data = RaterSessionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if data.validated_data["consent"] is not True:
            raise ValidationError({"consent": [_("the rater must agree to take part (true) before starting")]})
        return data.validated_data

    @staticmethod
    def identity(link: dict, platform: str) -> platforms.Identity:
        try:
            identity = platforms.identity_from(link, platform)
        except platforms.IdentityError as error:
            raise ValidationError({f"link.{error.parameter}" if error.parameter else "link": [str(error)]}) from None
        if identity.preview:
            raise ValidationError({"link.assignmentId": [_("a HIT preview: accept the HIT first")]})
        return identity

    @staticmethod
    def refused(refusal: AssignmentRefused, identity: platforms.Identity, *, via_experiment: bool) -> Exception:
        if isinstance(refusal, PracticeRequired):
            # As the entry pages (``onboarding.views.practice_begin``): the identity's attempt, new or
            # remembered; the session's consent is the practice's, recorded before any practice item.
            identity = refusal.identity or identity
            try:
                attempt = onboarding.practice_attempt_begin(
                    study=refusal.study, platform=identity.platform, external_id=identity.external_id,
                    acceptance_id=identity.acceptance_id, platform_data=identity.platform_data,
                    via_experiment=via_experiment)
            except AssignmentRefused as other:
                return Conflict(str(other), code=other.reason)
            if attempt.status == PracticeAttempt.Status.STARTED:
                attempt = onboarding.practice_attempt_consent(attempt=attempt)
            return practice_refusal(attempt)
        if refusal.reason == AssignmentRefused.INVITE_INVALID:
            return ValidationError({"link.invite": [str(refusal)]})
        return Conflict(str(refusal), code=refusal.reason)

    @staticmethod
    def consented(assignment: Assignment) -> Response:
        """The assignment (past its time limit abandoned, as on access to its pages), consent recorded once:
        201 when this call recorded it, 200 for a resumed one."""
        assignment = review.assignment_expire_if_due(assignment=assignment)
        fresh = assignment.consented_at is None
        if assignment.status == Assignment.Status.STARTED and fresh:
            answering.assignment_consent(assignment=assignment)
        return Response(RaterAssignmentSerializer(assignment_view(assignment)).data,
                        status=status.HTTP_201_CREATED if fresh else status.HTTP_200_OK)


class RaterSessionApi(_SessionApi):
    """Enter a study by its link (``key``: the ``/r/c/<key>/`` of the link, or the study's slug) with the
    link's identity and the rater's consent: the assignment with its token and key (a resumed one: 200).
    A study with practice items, until this rater has passed them, answers 409 ``practice_required`` whose
    ``practice`` gives the practice's token and key (``/api/rate/practice/{token}/``; consent recorded), or
    409 ``practice_failed`` once failed, as the practice pages do."""

    @extend_schema(request=RaterSessionInputSerializer, responses={200: RaterAssignmentSerializer, 201: RaterAssignmentSerializer},
                   operation_id="rater_session_create")
    def post(self, request, key):
        study = links.enterable_studies().filter(Q(rater_key=key) | Q(slug=key)).first()
        if study is None:  # as on the pages: an unknown, draft or benchmark study alike
            raise NotFound(_("no study open to raters at this address"))
        rater_language_use(study)
        given = self.given(request)
        closing.study_close_if_done(study=study, check_items=False)
        identity = self.identity(given["link"], study.platform)
        try:
            if identity.platform == Study.Platform.INVITE:
                if not given.get("client_secret"):
                    raise ValidationError({"client_secret": [_("an invitation is claimed by a secret of 16 to 128 "
                                                               "characters; send the same one to resume")]})
                assignment = invites.invite_enter(study=study, token=identity.acceptance_id,
                                                  browser_secret=given["client_secret"])
            else:
                assignment = rater_entry.assignment_enter(
                    study=study, platform=identity.platform, external_id=identity.external_id,
                    acceptance_id=identity.acceptance_id, platform_data=identity.platform_data)
        except AssignmentRefused as refusal:
            raise self.refused(refusal, identity, via_experiment=False) from None
        return self.consented(assignment)


class RaterExperimentSessionApi(_SessionApi):
    """Enter an experiment by its link (``/r/x/<slug>/``): a new rater is placed in the least-filled open
    condition, a returning one resumes theirs (``entry.experiment_enter``); invitations are per study. The
    practice gate answers as for a study's link (409 ``practice_required`` with the ``practice`` to take)."""

    @extend_schema(request=RaterSessionInputSerializer, responses={200: RaterAssignmentSerializer, 201: RaterAssignmentSerializer},
                   operation_id="rater_experiment_session_create")
    def post(self, request, slug):
        link = links.experiment_link_open(slug)
        if link is None:
            raise NotFound(_("no experiment open to raters at this address"))
        conditions_language_use(link.linked)
        given = self.given(request)
        if link.problem:
            raise Conflict(_("this link is not set up correctly: %(problem)s") % {"problem": link.problem})
        if link.platform == Study.Platform.INVITE:
            raise ValidationError({"link": [_("this experiment takes raters by invitation: enter with the invitation's "
                                              "own study link")]})
        identity = self.identity(given["link"], link.platform)
        try:
            assignment = rater_entry.experiment_enter(
                experiment=link.experiment, platform=identity.platform, external_id=identity.external_id,
                acceptance_id=identity.acceptance_id, platform_data=identity.platform_data)
        except AssignmentRefused as refusal:
            raise self.refused(refusal, identity, via_experiment=True) from None
        return self.consented(assignment)
