"""API tokens (``studies.api.tokens``): several per user, one per script or notebook, beside
the login tokens of ``POST /api/auth/token/`` (``kind``). ``POST /api/auth/tokens/`` makes a named one
and shows its secret once; the list and the detail show only a token's first characters (``prefix``);
``DELETE /api/auth/tokens/<id>/`` revokes one of either kind (it answers 401 from then on). A user sees
and revokes only their own tokens: another user's is a 404."""
from __future__ import annotations

from django.db.models import Q
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies.api import tokens
from studies.api.base import ApiView
from studies.api.inputs import PAGE_PARAMETERS, StrictInput, choice_param, paginate, query_params_checked
from studies.models import ApiToken

STATUSES = ("active", "expired", "revoked")


class ApiTokenOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=ApiToken.Kind.choices, help_text="named: made here; login: issued by "
                                   "POST /api/auth/token/ for a username and password")
    prefix = serializers.CharField(help_text="the secret's first characters (the secret is never shown again)")
    status = serializers.SerializerMethodField(help_text="active, expired or revoked")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)

    def get_status(self, token) -> str:
        return tokens.token_status(token)


def _own(request):
    return ApiToken.objects.filter(user=request.user)


class ApiTokenListApi(ApiView):
    """Your API tokens, named and login ones, newest first (``status``: active, expired or revoked); POST
    makes a named one."""

    class InputSerializer(StrictInput):
        name = serializers.CharField(max_length=tokens.NAME_MAX, help_text="what uses it (unique among your "
                                                                           "active tokens)")
        expires_in_days = serializers.IntegerField(min_value=1, max_value=tokens.DAYS_MAX, required=False,
                                                   allow_null=True, default=None, help_text="null: until revoked")

    class OutputSerializer(ApiTokenOutputSerializer):
        token = serializers.CharField(allow_null=True, help_text="the secret: send it as `Authorization: Token "
                                      "<secret>`. Shown only now, only its hash is kept: null when an Idempotency-Key "
                                      "replays the answer (revoke that token and make another)")

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=ApiTokenOutputSerializer(many=True), operation_id="api_token_list",
                   parameters=[OpenApiParameter("status", str, enum=list(STATUSES))])
    def get(self, request):
        query_params_checked(request, {*PAGE_PARAMETERS, "status"})
        listed = _own(request).order_by("-created_at", "-pk")
        now = timezone.now()
        live = Q(revoked_at__isnull=True)
        lapsed = Q(expires_at__isnull=False, expires_at__lte=now)
        wanted = choice_param(request, "status", STATUSES)
        if wanted == "active":
            listed = listed.filter(live & ~lapsed)
        elif wanted == "expired":
            listed = listed.filter(live & lapsed)
        elif wanted == "revoked":
            listed = listed.filter(revoked_at__isnull=False)
        return paginate(self, listed, request, ApiTokenOutputSerializer)

    def idempotent_body(self, data):
        return {**data, "token": None} if isinstance(data, dict) and "token" in data else data

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer}, operation_id="api_token_create")
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        issued = tokens.api_token_create(user=request.user, **data.validated_data)
        issued.token.token = issued.secret
        return Response(self.OutputSerializer(issued.token).data, status=status.HTTP_201_CREATED)


class ApiTokenDetailApi(ApiView):
    """One of your named tokens (never its secret); DELETE revokes it: it answers 401 from then on."""

    @extend_schema(responses=ApiTokenOutputSerializer, operation_id="api_token_read")
    def get(self, request, pk):
        return Response(ApiTokenOutputSerializer(get_object_or_404(_own(request), pk=pk)).data)

    @extend_schema(request=None, responses={204: None}, operation_id="api_token_revoke")
    def delete(self, request, pk):
        tokens.api_token_revoke(token=get_object_or_404(_own(request), pk=pk))
        return Response(status=status.HTTP_204_NO_CONTENT)
