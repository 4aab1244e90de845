"""Researcher API for bot endpoints, the page ``/systems/endpoints/`` (``studies.chat.endpoint_views``)
through the same services (``studies.chat.endpoints``): list, create, read, change (PATCH: the fields
sent), delete, and "Try it" (one greeting sent; the reply or the failure with what to change).

A key is write-only: answers say whether one is set and where it comes from (``key_source``), never
the key. Like the page, these routes need the ``studies.change_systemendpoint`` permission (an admin
grants it; docs/reference/api.md, "Researcher accounts"): without it a 403. A researcher sees their own endpoints only;
another's is a 404, as if it did not exist; an admin sees and changes all, and may give one to another
researcher (``owner``)."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.shortcuts import get_object_or_404
from django.utils.text import slugify
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies import endpoint_owners
from studies.api.base import ApiView, service_refusals
from studies.api.inputs import PAGE_PARAMETERS, StrictInput, paginate, query_params_checked
from studies.chat import endpoints
from studies.chat.client import BotError
from studies.chat.endpoint_views import PERMISSION
from studies.models import System, SystemEndpoint


class EndpointPermission(BasePermission):
    message = (f"bot endpoints need the {PERMISSION} permission: an admin grants it "
               "(python manage.py researcher_invite --endpoints, or the admin's user page)")

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.has_perm(PERMISSION))


class EndpointOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    system = serializers.CharField(source="system.name")
    owner = serializers.CharField(source="owner.username", allow_null=True, default=None,
                                  help_text="null: an admin-only endpoint")
    protocol = serializers.ChoiceField(choices=SystemEndpoint.Protocol.choices)
    url = serializers.CharField()
    model_name = serializers.CharField()
    has_key = serializers.BooleanField()
    key_source = serializers.SerializerMethodField(help_text="where the key comes from; the key is never shown")
    key_env = serializers.CharField(help_text="the environment variable the key is read from, if any")
    timeout_seconds = serializers.FloatField()
    retries = serializers.IntegerField()
    updated_at = serializers.DateTimeField()

    def get_key_source(self, endpoint) -> str:
        return "environment" if endpoint.key_env else ("stored" if endpoint.key_encrypted else "none")


class EndpointInput(StrictInput):
    protocol = serializers.ChoiceField(choices=SystemEndpoint.Protocol.choices)
    url = serializers.CharField(max_length=500)
    model_name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    key = serializers.CharField(max_length=4000, required=False, allow_blank=True, write_only=True,
                                help_text="stored encrypted, never shown again; absent or empty: unchanged")
    key_env = serializers.CharField(max_length=100, required=False, allow_blank=True,
                                    help_text="or: the CONCORD_BOT_KEY_* environment variable holding the key")
    clear_key = serializers.BooleanField(required=False, default=False, help_text="remove the stored key")
    timeout_seconds = serializers.FloatField(min_value=0.5, max_value=60, required=False,
                                             help_text="per attempt (default 10)")
    retries = serializers.IntegerField(min_value=0, max_value=5, required=False, help_text="default 2")


def _visible_endpoint(request, pk: int) -> SystemEndpoint:
    return get_object_or_404(endpoint_owners.endpoints_visible_to(request.user), pk=pk)


def _saved(**values) -> SystemEndpoint:
    with service_refusals():
        return endpoints.endpoint_set(**values)


class EndpointListApi(ApiView):
    """Your bot endpoints (an admin: every one), by system; ``system`` filters by the system's name.
    POST makes a new one, yours, for a system named (made when new)."""

    permission_classes = (IsAuthenticated, EndpointPermission)
    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    class InputSerializer(EndpointInput):
        system = serializers.CharField(max_length=80, help_text="the system's name (made when new)")

    @extend_schema(responses=EndpointOutputSerializer(many=True), operation_id="endpoint_list",
                   parameters=[OpenApiParameter("system", str, description="a system's name")])
    def get(self, request):
        query_params_checked(request, {*PAGE_PARAMETERS, "system"})
        found = endpoint_owners.endpoints_visible_to(request.user).order_by("system__name", "owner_id", "pk")
        if name := request.query_params.get("system"):
            found = found.filter(system__name=name)
        return paginate(self, found, request, EndpointOutputSerializer)

    @extend_schema(request=InputSerializer, responses={201: EndpointOutputSerializer}, operation_id="endpoint_create")
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        name = slugify(values.pop("system"))
        if not name:
            raise ValidationError({"system": ["give the system a name (letters, digits, - and _)"]})
        if endpoint_owners.endpoints_of(request.user.pk).filter(system__name=name).exists():
            raise ValidationError({"system": [f"you already have an endpoint for {name}: change that one"]})
        with transaction.atomic():
            system = System.objects.get_or_create(name=name)[0]
            endpoint = _saved(owner=request.user, system=system, **values)
        return Response(EndpointOutputSerializer(_visible_endpoint(request, endpoint.pk)).data,
                        status=status.HTTP_201_CREATED)


class EndpointDetailApi(ApiView):
    """One endpoint: read it, change the fields sent (PATCH; the key only when ``key``, ``key_env`` or
    ``clear_key`` is sent), or delete it."""

    permission_classes = (IsAuthenticated, EndpointPermission)

    class InputSerializer(EndpointInput):
        owner = serializers.CharField(max_length=150, required=False,
                                      help_text="admins only: the user name of the researcher it is given to")

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            for field in self.fields.values():
                field.required = False

    @extend_schema(responses=EndpointOutputSerializer, operation_id="endpoint_read")
    def get(self, request, pk):
        return Response(EndpointOutputSerializer(_visible_endpoint(request, pk)).data)

    @extend_schema(request=InputSerializer, responses=EndpointOutputSerializer, operation_id="endpoint_update")
    def patch(self, request, pk):
        endpoint = _visible_endpoint(request, pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        owner_name = values.pop("owner", None)
        new_owner = None
        if owner_name is not None:
            if not request.user.is_superuser:
                raise ValidationError({"owner": ["only an admin gives an endpoint to another researcher"]})
            user_model = get_user_model()
            new_owner = user_model.objects.filter(**{user_model.USERNAME_FIELD: owner_name.strip()}).first()
            if new_owner is None:
                raise ValidationError({"owner": [f"no user named {owner_name[:150]}"]})
        current = {"protocol": endpoint.protocol, "url": endpoint.url, "model_name": endpoint.model_name,
                   "timeout_seconds": endpoint.timeout_seconds, "retries": endpoint.retries}
        with transaction.atomic():
            saved = _saved(owner=endpoint.owner_id, system=endpoint.system, **(current | values))
            if new_owner is not None:
                with service_refusals():
                    saved = endpoints.endpoint_owner_set(endpoint=saved, owner=new_owner)
        return Response(EndpointOutputSerializer(_visible_endpoint(request, saved.pk)).data)

    @extend_schema(request=None, responses={204: None}, operation_id="endpoint_destroy")
    def delete(self, request, pk):
        endpoints.endpoint_delete(endpoint=_visible_endpoint(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class EndpointTryApi(ApiView):
    """Send the endpoint one greeting, as the page's "Try it". A bot that fails is an answer, not an
    error of the request: 200 with ``ok`` false, the failure's kind and what to change."""

    permission_classes = (IsAuthenticated, EndpointPermission)

    class OutputSerializer(serializers.Serializer):
        ok = serializers.BooleanField()
        reply = serializers.CharField(allow_null=True, help_text="the bot's reply (null when it failed)")
        seconds = serializers.FloatField()
        attempts = serializers.IntegerField()
        kind = serializers.CharField(allow_null=True, help_text="the failure's kind: timeout, connection, status, "
                                     "reply, redirect, key, address; null when it answered")
        message = serializers.CharField(help_text="what happened and, on a failure, what to change")

    @extend_schema(request=None, responses=OutputSerializer, operation_id="endpoint_try")
    def post(self, request, pk):
        endpoint = _visible_endpoint(request, pk)
        try:
            reply = endpoints.endpoint_try(endpoint=endpoint)
        except BotError as error:
            body = {"ok": False, "reply": None, "seconds": error.seconds, "attempts": error.attempts,
                    "kind": error.kind, "message": endpoints.try_message(error)}
        else:
            body = {"ok": True, "reply": reply.text, "seconds": reply.seconds, "attempts": reply.attempts,
                    "kind": None, "message": f"reply in {reply.seconds:.2f} s ({reply.attempts} attempt(s))"}
        return Response(self.OutputSerializer(body).data)
