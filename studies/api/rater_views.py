"""The rater API: a bot, an LLM rater or a test takes part in a study over JSON, as a person does
on the rater pages, under the same rules (Label Studio's annotation API is the model).

- ``POST /api/rate/studies/<key>/sessions/`` (or ``/api/rate/experiments/<slug>/sessions/``) enters with the
  identity the link carries and the rater's consent (``rater_sessions``): the same refusals and practice gate
  as the entry pages; it answers the assignment's token and its ``key``.
- Everything after is addressed by the assignment's token, and needs the key in the ``X-Concord-Rater-Key``
  header (``form_tokens.form_token(token, "api")``, as the pages' forms carry theirs): a wrong token or key
  is a 404, so one rater never reads another's assignment. No researcher's token is an identity here: these
  views authenticate nobody.
- ``GET .../items/`` lists the items (their texts and the fields to answer, ``rater_items``);
  ``PUT .../items/<position>/answer/`` answers one as JSON, parsed, checked and stored by the page's own
  service (``studies.rating.item_answers``): every field's problem is a 400 naming it (``answers.<field>``)
  with nothing stored, and the same answers twice store once. ``POST .../submit/`` finishes with the
  study's questionnaire, scores the attention checks and gives the completion code the done page gives."""
from __future__ import annotations

from django.db.models import Count, Q
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies.api.base import ApiView
from studies.api.errors import Conflict
from studies.api.inputs import PAGE_PARAMETERS, StrictInput, paginate, query_params_checked
from studies.api.rater_items import answers_as_post, content_view, item_view
from studies.designs import unit_for
from studies.designs.rater_reads import study_criteria
from studies.errors import StudyStateError
from studies.models import Assignment, AssignmentItem, Study
from studies.rating import answers as answering
from studies.rating import form_tokens, item_answers, platforms, review
from studies.rating.language import rater_language_use
from studies.rating.questionnaire import questionnaire_clean

KEY_HEADER = "X-Concord-Rater-Key"
KEY_PARAMETER = OpenApiParameter(KEY_HEADER, str, OpenApiParameter.HEADER, required=True,
                                 description="the assignment's key, as the session answered it")


class RaterView(ApiView):
    # Raters are anonymous: no researcher's credentials count here (a token is no rater identity).
    authentication_classes: tuple = ()
    permission_classes = (AllowAny,)
    throttle_classes: tuple = ()  # like the rater pages: the assignment's token and key are the capability
    # No Idempotency-Key (it is kept per user, and raters are nobody's user): a retry is safe by nature here,
    # as on the pages: a session resumes, the same answers store once, a second submit answers the first.
    idempotency_header = False


def rater_key(assignment: Assignment) -> str:
    return form_tokens.form_token(assignment.token, "api")


def _assignment(request, token: str) -> Assignment:
    """The assignment with this token whose key the request carries (404 otherwise), past its time limit
    abandoned on access as its pages do (``review.assignment_expire_if_due``)."""
    assignment = Assignment.objects.select_related("study", "rater").filter(token=token).first()
    if assignment is None or not form_tokens.form_token_valid(token, "api", request.headers.get(KEY_HEADER)):
        raise NotFound(_("no assignment with this token and %(header)s") % {"header": KEY_HEADER})
    rater_language_use(assignment.study)  # only for the key's holder
    return review.assignment_expire_if_due(assignment=assignment)


def _started(assignment: Assignment) -> None:
    if assignment.status != Assignment.Status.STARTED:
        raise Conflict(_("this assignment is already %(status)s; nothing more can be answered")
                       % {"status": assignment.status})
    if assignment.consented_at is None:  # entered on the pages without agreeing yet
        raise Conflict(_("the rater has not consented yet: start a session with consent true first"))


def _done_view(assignment: Assignment) -> dict:
    """What the done page shows: the completion code (a screened-out Prolific rater's own code, where the
    researcher set one), and where a Prolific participant goes back to."""
    screened = assignment.screened_out
    code = assignment.completion_code
    if screened and assignment.status == Assignment.Status.ABANDONED and assignment.rater.platform != Study.Platform.PROLIFIC:
        code = ""  # asked to return the task: no code to take back
    url = (platforms.prolific_completion_url(assignment.study.platform_config, code)
           if code and assignment.rater.platform == Study.Platform.PROLIFIC else None)
    return {"completion_code": code or None, "screened_out": screened, "completion_url": url}


class RaterQuestionSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="the key of its answer in `questionnaire`")
    question = serializers.CharField()
    kind = serializers.CharField(help_text="yes_no (answer yes or no), choice (one of `choices`) or text")
    required = serializers.BooleanField(default=False)
    choices = serializers.ListField(child=serializers.CharField(), default=list)


class RaterAssignmentSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="the assignment's token: its address in this API and on the pages")
    key = serializers.CharField(help_text=f"send it in the {KEY_HEADER} header of every later request")
    # A CharField, not the choices: the researcher's AssignmentOutput names that enum (one name per choice set).
    status = serializers.CharField(help_text="started, submitted, approved, rejected or abandoned")
    instructions = serializers.CharField(help_text="the study's instructions (Markdown)")
    items = serializers.IntegerField(help_text="how many items the assignment has")
    answered = serializers.IntegerField()
    next_position = serializers.IntegerField(allow_null=True, help_text="the first item not answered yet")
    questionnaire = RaterQuestionSerializer(many=True, help_text="asked at submit")
    completion_code = serializers.CharField(allow_null=True)
    screened_out = serializers.BooleanField(help_text="failed the study's attention checks (or screened out)")
    completion_url = serializers.CharField(allow_null=True, help_text="where a Prolific participant goes back to")


def assignment_view(assignment: Assignment) -> dict:
    slots = assignment.assignment_items.aggregate(n=Count("id"), done=Count("id", filter=Q(answered_at__isnull=False)))
    following = assignment.assignment_items.filter(answered_at__isnull=True).order_by("position").first()
    return {"token": assignment.token, "key": rater_key(assignment), "status": assignment.status,
            "instructions": assignment.study.instructions, "items": slots["n"], "answered": slots["done"],
            "next_position": following.position if following else None,
            "questionnaire": [{"required": False, "choices": [], "kind": "text", **q}
                              for q in assignment.study.questionnaire or []], **_done_view(assignment)}


class TurnSerializer(serializers.Serializer):
    speaker = serializers.CharField()
    text = serializers.CharField()


class RaterTargetSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="the letter the page shows it by (A, B, ...)")
    text = serializers.CharField()
    turns = TurnSerializer(many=True, help_text="a whole dialogue, where the target is one")


class RaterReferenceSerializer(serializers.Serializer):
    text = serializers.CharField()
    turns = TurnSerializer(many=True)
    value = serializers.CharField(allow_null=True, help_text="the reference's value (magnitude estimation)")


class RaterFieldSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="the key of its answer in `answers`")
    criterion = serializers.CharField()
    question = serializers.CharField()
    target = serializers.CharField(allow_null=True, help_text="the target's letter, where the field concerns one")
    kind = serializers.ChoiceField(choices=["scale", "rank", "categorical", "multilabel", "free_text", "spans",
                                            "rationale", "choice", "reason", "best", "worst", "per_turn"],
                                   help_text="spans: a list of {start, end, label} character offsets into the "
                                             "target's text ({turn} too in a dialogue), [] for nothing to mark")
    required = serializers.BooleanField()
    choices = serializers.ListField(child=serializers.CharField(), help_text=(
        "the values it takes, where they are few. A pairwise (or ACUTE-Eval) choice takes the targets' keys (A or "
        "B) or tie; left and right are taken too, as A and B"))
    min = serializers.FloatField(allow_null=True, help_text="the lowest value (a scale) or length (text)")
    max = serializers.FloatField(allow_null=True)
    many = serializers.BooleanField(help_text="takes a list of labels (a list, never one string)")
    none_allowed = serializers.BooleanField(help_text="a list of labels that may be empty: [] answers none of these")
    turn = serializers.IntegerField(required=False, help_text="per_turn: the judged turn's index in the dialogue, from 0")
    mode = serializers.CharField(required=False, help_text="per_turn: binary (any labels, [] for none), multilabel "
                                                           "(labels, or [] for none of these) or categorical (one label)")


class RaterItemSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    answered = serializers.BooleanField()
    pending_url = serializers.CharField(allow_null=True, help_text="a page to visit before this item can be answered "
                                       "(a chat with a system): the API cannot answer it until then")
    chat_url = serializers.CharField(allow_null=True, help_text="a chat-then-rate item's chat in this API (GET its "
                                     "state, POST turns/ and end/), where the item has one")
    context = TurnSerializer(many=True, help_text="the conversation the targets reply to (or the dialogue judged)")
    targets = RaterTargetSerializer(many=True)
    reference = RaterReferenceSerializer(allow_null=True)
    fields = RaterFieldSerializer(many=True)
    values = serializers.DictField(child=serializers.JSONField(), help_text="the stored answers, by field")


class RaterAssignmentApi(RaterView):
    """The assignment: its status, how far it is, the questionnaire, and once submitted the completion code."""

    @extend_schema(responses=RaterAssignmentSerializer, parameters=[KEY_PARAMETER], operation_id="rater_assignment")
    def get(self, request, token):
        return Response(RaterAssignmentSerializer(assignment_view(_assignment(request, token))).data)


def _slots(assignment: Assignment):
    return (AssignmentItem.objects.filter(assignment=assignment)
            .select_related("assignment__study", "item__conversation", "item__reference_response",
                            "item__reference_conversation").order_by("position"))


class RaterItemListApi(RaterView):
    """The assignment's items in the order the rater gets them, each with what its page shows."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=RaterItemSerializer(many=True), parameters=[KEY_PARAMETER], operation_id="rater_items")
    def get(self, request, token):
        assignment = _assignment(request, token)
        query_params_checked(request, PAGE_PARAMETERS)
        return paginate(self, _slots(assignment), request, _ItemOut)


class _ItemOut(serializers.BaseSerializer):
    def to_representation(self, instance):
        return RaterItemSerializer(item_view(instance)).data


def _slot(assignment: Assignment, position: int) -> AssignmentItem:
    slot = _slots(assignment).filter(position=position).first()
    if slot is None:
        raise NotFound(_("this assignment has no item at position %(position)s") % {"position": position})
    slot.assignment = assignment
    return slot


class RaterItemApi(RaterView):
    """One item, as its page shows it; like opening its page, this starts the item's clock."""

    @extend_schema(responses=RaterItemSerializer, parameters=[KEY_PARAMETER], operation_id="rater_item")
    def get(self, request, token, position):
        assignment = _assignment(request, token)
        slot = _slot(assignment, position)
        if assignment.status == Assignment.Status.STARTED and assignment.consented_at is not None \
                and slot.answered_at is None:
            answering.assignment_item_open(slot=slot)
        return Response(RaterItemSerializer(item_view(slot)).data)


class RaterAnswerApi(RaterView):
    """Answer one item: ``answers`` maps each of its fields (``fields[].name``) to a value (text or a number;
    a list of labels for a multi-label field), checked as its page checks them; nothing is stored unless all
    are acceptable. The same answers again store nothing new; changed answers replace the earlier ones."""

    class InputSerializer(StrictInput):
        answers = serializers.DictField(child=serializers.JSONField(),
                                        help_text="field name -> value (text, a number, or a list of labels)")
        active_ms = serializers.FloatField(required=False, allow_null=True, min_value=0,
                                           max_value=answering.MAX_ITEM_SECONDS * 1000,
                                           help_text="milliseconds the rater was active on the item")

    @extend_schema(request=InputSerializer, responses=RaterItemSerializer, parameters=[KEY_PARAMETER],
                   operation_id="rater_answer")
    def put(self, request, token, position):
        assignment = _assignment(request, token)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        _started(assignment)
        slot = _slot(assignment, position)
        study = assignment.study
        if (pending := unit_for(study).pending_url(slot)) is not None:
            raise Conflict(_("this item needs its chat first: chat and end it through %(api)s (its page: %(page)s)")
                           % {"api": reverse("studies-api:rater-chat", args=[token, position]), "page": pending})
        criteria = study_criteria(study)  # the fields only: the stored answers are read once, for the answer
        fields = content_view(study, slot.item, slot.response_order, criteria)["fields"]
        post, errors = answers_as_post(data.validated_data["answers"], fields)
        if errors:
            raise ValidationError({"answers": {name: [message] for name, message in errors.items()}})
        answering.assignment_item_open(slot=slot)
        active_ms = data.validated_data.get("active_ms")
        try:
            errors = item_answers.item_answer_record(slot=slot, post=post,
                                                     active_seconds=active_ms / 1000 if active_ms else None)
        except StudyStateError as error:
            raise Conflict(str(error)) from None
        if errors:
            raise ValidationError({"answers": {name: [message] for name, message in errors.items()}})
        slot.refresh_from_db(fields=["answered_at", "started_at"])
        return Response(RaterItemSerializer(item_view(slot, criteria=criteria)).data)


class RaterSubmitApi(RaterView):
    """Finish the assignment once every item is answered, with the questionnaire's answers (``name`` -> text;
    ``yes`` or ``no`` for a yes/no question): the attention checks are scored and the completion code issued,
    as on the pages. Submitting again answers the same."""

    class InputSerializer(StrictInput):
        questionnaire = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False,
                                              default=dict, help_text="question name -> answer")

    @extend_schema(request=InputSerializer, responses=RaterAssignmentSerializer, parameters=[KEY_PARAMETER],
                   operation_id="rater_submit")
    def post(self, request, token):
        assignment = _assignment(request, token)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if assignment.status == Assignment.Status.STARTED:
            _started(assignment)
            spec = assignment.study.questionnaire or []
            given = data.validated_data["questionnaire"]
            names = {question["name"] for question in spec}
            errors = {f"questionnaire.{name}": [f"unknown question; this asks {', '.join(sorted(names)) or 'none'}"]
                      for name in given if name not in names}
            if unanswered := assignment.assignment_items.filter(answered_at__isnull=True).count():
                raise Conflict(ngettext("%(count)d item is not answered yet", "%(count)d items are not answered yet",
                                        unanswered) % {"count": unanswered})
            answers, problems = questionnaire_clean(spec, given)
            errors.update({f"questionnaire.{name}": [message] for name, message in problems.items()})
            if errors:
                raise ValidationError(errors)
            assignment = answering.assignment_submit(assignment=assignment, questionnaire=answers)
        return Response(RaterAssignmentSerializer(assignment_view(assignment)).data)
