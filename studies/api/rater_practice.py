"""The rater API's practice: a study with practice items (``studies.onboarding``) gates the rater
API as it gates the pages, and the practice is taken over JSON with the pages' own services.

The order is the pages': the entry (a session, ``rater_sessions``) finds the identity has not passed and
begins its attempt (``practice_attempt_begin``: a new one, or the one it already has); the session carries the
rater's consent, which is recorded on the attempt (``practice_attempt_consent``) before any practice item, and
it answers 409 ``practice_required`` with the attempt's ``practice`` token and key (a failed attempt: 409
``practice_failed`` with the outcome the result page gives). Then, addressed by the attempt's token with its key
in ``X-Concord-Rater-Key`` (a wrong token or key is a 404, so one rater never reads another's practice):

- ``GET /api/rate/practice/<token>/``: the attempt (started, passed or failed; agreed, pass mark; a failed
  Prolific rater's screened-out code and return link, as the result page);
- ``GET .../items/`` and ``.../items/<n>/``: the practice items as the item endpoints show items, with the
  feedback once answered;
- ``PUT .../items/<n>/answer/``: the answer, parsed and checked as the page's (``answers.<field>`` on a 400,
  nothing stored), stored once (``practice_answer``: a second answer returns the first, so nobody retries
  after reading the explanation), answered with the feedback the page shows: agreed or not, the expected
  answer, the rater's own, the explanation. The last answer scores the attempt against the pass mark;
- ``POST .../continue/``: after a pass, the assignment through the entry the rater came by
  (``practice_continue``), consent carried over, as the pass page's button; before it a 409."""
from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies.api.errors import Conflict
from studies.api.inputs import PAGE_PARAMETERS, StrictInput, paginate, query_params_checked
from studies.api.rater_items import answers_as_post, api_values, content_view
from studies.api.rater_views import (
    KEY_HEADER,
    KEY_PARAMETER,
    RaterAssignmentSerializer,
    RaterItemSerializer,
    RaterView,
    assignment_view,
)
from studies.designs.rater_reads import study_criteria
from studies.errors import AssignmentRefused, ConsentRequired, StudyStateError
from studies.models import Assignment, PracticeAnswer, PracticeAttempt, PracticeItem, Study, StudyItem
from studies.onboarding import selectors, services
from studies.rating import form_tokens, platforms
from studies.rating.language import rater_language_use

SCOPE = "api-practice"


def practice_key(attempt: PracticeAttempt) -> str:
    return form_tokens.form_token(attempt.token, SCOPE)


def outcome(attempt: PracticeAttempt) -> dict:
    """What the result page tells a rater who failed: the study's screened-out code and Prolific's return
    link for a Prolific participant, MTurk's request to return the HIT (``onboarding.views._failed_page``)."""
    if attempt.status != PracticeAttempt.Status.FAILED:
        return {"screened_out_code": None, "completion_url": None, "message": None}
    config = attempt.study.platform_config or {}
    prolific = attempt.platform == Study.Platform.PROLIFIC
    code = platforms.screened_out_code(config) if prolific else ""
    messages: dict[str, str] = {Study.Platform.MTURK: _("Please return this HIT on Mechanical Turk."),
                                Study.Platform.PROLIFIC: "" if code else _("Please return your submission on Prolific."),
                                Study.Platform.INVITE: _("There is nothing more to do.")}
    message = messages.get(attempt.platform, "")
    return {"screened_out_code": code or None,
            "completion_url": platforms.prolific_completion_url(config, code) if prolific else None,
            "message": (_("You agreed with %(agreed)s of %(shown)s practice items and this study needs "
                          "%(pass_mark)s, so it cannot offer you its task.")
                        % {"agreed": attempt.agreed, "shown": attempt.shown, "pass_mark": attempt.pass_mark}
                        + " " + message).strip()}


def attempt_view(attempt: PracticeAttempt) -> dict:
    return {"token": attempt.token, "key": practice_key(attempt), "status": attempt.status,
            "consented": attempt.consented_at is not None, "instructions": attempt.study.instructions,
            "items": PracticeItem.objects.filter(study=attempt.study_id).count(), "answered": attempt.shown,
            "agreed": attempt.agreed, "pass_mark": selectors.effective_pass_mark(attempt.study),
            "next_position": selectors.attempt_next_position(attempt)
            if attempt.status == PracticeAttempt.Status.STARTED else None,
            "retakes_left": selectors.retakes_left(attempt), **outcome(attempt)}


def practice_refusal(attempt: PracticeAttempt) -> Conflict:
    """The session's 409 for a rater who must take (or has failed) the practice, carrying its token and key."""
    if attempt.status == PracticeAttempt.Status.FAILED:
        error = Conflict(_("this rater did not pass the study's practice: %(why)s") % {"why": outcome(attempt)["message"]},
                         code="practice_failed")
    else:
        error = Conflict(_("this study starts with practice items: take them at %(url)s with the key in `practice` as "
                           "%(header)s, then POST its continue/ (or start a session again)")
                         % {"url": f"/api/rate/practice/{attempt.token}/", "header": KEY_HEADER}, code="practice_required")
    error.extensions = {"practice": {"token": attempt.token, "key": practice_key(attempt),
                                     "status": attempt.status}}
    return error


def _attempt(request, token: str) -> PracticeAttempt:
    attempt = PracticeAttempt.objects.select_related("study", "experiment").filter(token=token).first()
    if attempt is None or not form_tokens.form_token_valid(token, SCOPE, request.headers.get(KEY_HEADER)):
        raise NotFound(_("no practice with this token and %(header)s") % {"header": KEY_HEADER})
    rater_language_use(attempt.study)  # only for the key's holder
    return attempt


def _item(attempt: PracticeAttempt, position: int) -> PracticeItem:
    items = selectors.practice_items(attempt.study)
    if not 0 <= position < len(items):
        raise NotFound(_("this practice has no item at position %(position)s") % {"position": position})
    return items[position]


def feedback_view(attempt: PracticeAttempt, item: PracticeItem, answer: PracticeAnswer, criteria) -> dict:
    """The feedback page's content: agreed, the expected answer and the rater's, the explanation (Markdown)."""
    questions = {c.name: c.question for c in criteria}
    return {"agreed": answer.agreed, "expected": selectors.expected_answer_text(item, questions),
            "given": selectors.given_answer_text(answer.values or {}, questions), "explanation": item.explanation,
            "practice_status": attempt.status}


def practice_item_view(attempt: PracticeAttempt, item: PracticeItem, criteria=None,
                       answers: dict[int, PracticeAnswer] | None = None) -> dict:
    study = attempt.study
    criteria = study_criteria(study) if criteria is None else criteria
    # shown as its page shows it: an unsaved StudyItem carrying the practice conversation (``_item_page``)
    shown = StudyItem(pk=-item.pk, study=study, conversation=item.conversation,
                      reference_response=item.reference_response, reference_value=item.reference_value)
    answer = (selectors.answers_of(attempt) if answers is None else answers).get(item.pk)
    content = content_view(study, shown, item.response_ids, criteria)
    return {"position": item.position, "answered": answer is not None, "pending_url": None, **content,
            "values": api_values(answer.values or {}, content["fields"]) if answer is not None else {},
            "feedback": feedback_view(attempt, item, answer, criteria) if answer is not None else None}


class PracticeFeedbackSerializer(serializers.Serializer):
    agreed = serializers.BooleanField(help_text="the answer agreed with the expected one")
    expected = serializers.ListField(child=serializers.CharField(), help_text="the expected answer, one line a rule")
    given = serializers.ListField(child=serializers.CharField(), help_text="the rater's answer, as the page shows it")
    explanation = serializers.CharField(help_text="why the expected answer is right (Markdown)")
    practice_status = serializers.CharField(help_text="the attempt after this answer: started, passed or failed")


class RaterPracticeItemSerializer(RaterItemSerializer):
    feedback = PracticeFeedbackSerializer(allow_null=True, help_text="once answered: the page's feedback")


class RaterPracticeSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="the practice's token: its address in this API")
    key = serializers.CharField(help_text=f"send it in the {KEY_HEADER} header of every practice request")
    status = serializers.CharField(help_text="started, passed or failed")
    consented = serializers.BooleanField()
    instructions = serializers.CharField(help_text="the study's instructions (Markdown)")
    items = serializers.IntegerField(help_text="how many practice items")
    answered = serializers.IntegerField()
    agreed = serializers.IntegerField(help_text="answers that agreed with the expected ones")
    pass_mark = serializers.IntegerField(help_text="agreements needed to pass")
    next_position = serializers.IntegerField(allow_null=True)
    screened_out_code = serializers.CharField(allow_null=True, help_text="failed, on Prolific: the study's code")
    completion_url = serializers.CharField(allow_null=True, help_text="failed, on Prolific: where to go back to")
    message = serializers.CharField(allow_null=True, help_text="failed: what the result page says")
    retakes_left = serializers.IntegerField(help_text="failed: how many times the practice may be started again "
                                                      "(POST retake/)")


class RaterPracticeApi(RaterView):
    """The practice attempt: where it stands, and the outcome once every item is answered."""

    @extend_schema(responses=RaterPracticeSerializer, parameters=[KEY_PARAMETER], operation_id="rater_practice")
    def get(self, request, token):
        return Response(RaterPracticeSerializer(attempt_view(_attempt(request, token))).data)


class RaterPracticeItemListApi(RaterView):
    """The practice items in the order the page shows them, each with its feedback once answered."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=RaterPracticeItemSerializer(many=True), parameters=[KEY_PARAMETER],
                   operation_id="rater_practice_items")
    def get(self, request, token):
        attempt = _attempt(request, token)
        query_params_checked(request, PAGE_PARAMETERS)
        criteria, answers = study_criteria(attempt.study), selectors.answers_of(attempt)
        rows = [practice_item_view(attempt, item, criteria, answers) for item in selectors.practice_items(attempt.study)]
        return paginate(self, rows, request, _Rows)


class _Rows(serializers.BaseSerializer):
    def to_representation(self, instance):
        return RaterPracticeItemSerializer(instance).data


class RaterPracticeItemApi(RaterView):
    """One practice item, with its feedback once answered (a reload never offers a second try)."""

    @extend_schema(responses=RaterPracticeItemSerializer, parameters=[KEY_PARAMETER], operation_id="rater_practice_item")
    def get(self, request, token, position):
        attempt = _attempt(request, token)
        return Response(RaterPracticeItemSerializer(practice_item_view(attempt, _item(attempt, position))).data)


class RaterPracticeAnswerApi(RaterView):
    """Answer one practice item (``answers``: field -> value, as an item's answer), once: the feedback."""

    class InputSerializer(StrictInput):
        answers = serializers.DictField(child=serializers.JSONField(),
                                        help_text="field name -> value (text, a number, or a list of labels)")

    @extend_schema(request=InputSerializer, responses=RaterPracticeItemSerializer, parameters=[KEY_PARAMETER],
                   operation_id="rater_practice_answer")
    def put(self, request, token, position):
        attempt = _attempt(request, token)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = _item(attempt, position)
        criteria = study_criteria(attempt.study)
        fields = practice_item_view(attempt, item, criteria, answers={})["fields"]
        post, errors = answers_as_post(data.validated_data["answers"], fields)
        if errors:
            raise ValidationError({"answers": {name: [message] for name, message in errors.items()}})
        try:
            answer, errors = services.practice_answer(attempt=attempt, item=item, post=post)
        except ConsentRequired:
            raise Conflict(_("the rater has not consented yet: start a session with consent true first"),
                           code="consent_required") from None
        except StudyStateError as error:
            raise Conflict(str(error)) from None
        except DjangoValidationError as error:
            raise ValidationError({"answers": error.message_dict}) from None
        if answer is None:
            raise ValidationError({"answers": {name: [message] for name, message in errors.items()}})
        return Response(RaterPracticeItemSerializer(practice_item_view(attempt, item, criteria)).data)


class RaterPracticeRetakeApi(RaterView):
    """A failed practice started again while the researcher allows retakes (the fail page's button); 409
    ``practice_failed`` when none are left (a soft block: the platform is never told)."""

    throttle_classes = tuple(api_settings.DEFAULT_THROTTLE_CLASSES)

    @extend_schema(request=None, responses=RaterPracticeSerializer, parameters=[KEY_PARAMETER],
                   operation_id="rater_practice_retake")
    def post(self, request, token):
        attempt = _attempt(request, token)
        try:
            attempt = services.practice_retake(attempt=attempt)
        except StudyStateError as error:
            raise Conflict(str(error), code="practice_failed" if attempt.status == PracticeAttempt.Status.FAILED
                           else "practice_not_failed") from None
        return Response(RaterPracticeSerializer(attempt_view(attempt)).data)


class RaterPracticeContinueApi(RaterView):
    """After a pass, the assignment (201; 200 for one the rater already holds), as the pass page's button;
    a practice not passed is a 409 (``practice_failed`` with the result page's outcome)."""

    throttle_classes = tuple(api_settings.DEFAULT_THROTTLE_CLASSES)  # it may write: rate limited per client

    @extend_schema(request=None, responses={200: RaterAssignmentSerializer, 201: RaterAssignmentSerializer},
                   parameters=[KEY_PARAMETER], operation_id="rater_practice_continue")
    def post(self, request, token):
        attempt = _attempt(request, token)
        if attempt.status == PracticeAttempt.Status.FAILED:
            raise practice_refusal(attempt)
        if attempt.status != PracticeAttempt.Status.PASSED:
            raise Conflict(_("the practice is not passed yet: %(shown)s of %(items)s items answered")
                           % {"shown": attempt.shown, "items": attempt_view(attempt)["items"]}, code="practice_required")
        held = Assignment.objects.filter(study__experiment_id=attempt.experiment_id, rater__platform=attempt.platform,
                                         rater__external_id=attempt.external_id).exists()
        try:
            assignment = services.practice_continue(attempt=attempt)
        except AssignmentRefused as refusal:
            raise Conflict(str(refusal), code=refusal.reason) from None
        return Response(RaterAssignmentSerializer(assignment_view(assignment)).data,
                        status=status.HTTP_200_OK if held else status.HTTP_201_CREATED)
