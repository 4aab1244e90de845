"""The login token endpoint: username and password -> a fresh API token (``studies.api.tokens``, kind
``login``, stored hashed, listed and revoked at ``/api/auth/tokens/``), expiring ``API_TOKEN_LIFETIME``
later. Throttled per client and locked out by django-axes (``config.auth``)."""
from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import renderers, serializers, status
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from studies.api.tokens import login_token_issue


class TokenObtainApi(APIView):
    """Username and password -> a new API token: its secret is in this answer only (send it as
    `Authorization: Token <secret>`); it is listed, and can be revoked, at /api/auth/tokens/."""

    permission_classes = ()
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "auth"
    parser_classes = api_settings.DEFAULT_PARSER_CLASSES
    renderer_classes = (renderers.JSONRenderer,)

    authentication_classes = ()  # a login needs no credentials (and the schema then declares none)

    @extend_schema(request=AuthTokenSerializer, auth=[], responses=inline_serializer("AuthTokenIssued", {
        "token": serializers.CharField(help_text="the secret, shown only now (only its hash is kept)"),
        "expires_at": serializers.DateTimeField(help_text="when it stops working (as in /api/auth/tokens/)"),
        "expires": serializers.DateTimeField(help_text="deprecated: the same as expires_at, kept for older clients"),
        "id": serializers.IntegerField(help_text="the token's id at /api/auth/tokens/<id>/ (DELETE revokes it)"),
        "name": serializers.CharField()}))
    def post(self, request, *args, **kwargs):
        serializer = AuthTokenSerializer(data=request.data, context={"request": request, "view": self})
        if not serializer.is_valid():
            # axes marks the DRF request it was given, which its middleware (on the HttpRequest) never sees
            if getattr(request, "axes_locked_out", False):
                minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
                return Response({"detail": f"Too many failed logins for this user from this address: "
                                           f"locked out for {minutes} minutes."}, status=status.HTTP_429_TOO_MANY_REQUESTS)
            raise ValidationError(serializer.errors)
        issued = login_token_issue(user=serializer.validated_data["user"])
        return Response({"token": issued.secret, "expires_at": issued.token.expires_at,
                         "expires": issued.token.expires_at, "id": issued.token.pk,
                         "name": issued.token.name})
