"""The API token endpoint: throttled per client, locked out by django-axes, rotating expired tokens."""
from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle


class TokenObtainApi(ObtainAuthToken):
    """Username and password -> an API token (a fresh one once the previous has expired)."""

    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "auth"
    parser_classes = api_settings.DEFAULT_PARSER_CLASSES  # ObtainAuthToken names DRF's own JSON parser

    @extend_schema(request=AuthTokenSerializer, responses=inline_serializer("AuthTokenIssued", {
        "token": serializers.CharField(), "expires": serializers.DateTimeField()}))
    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        if not serializer.is_valid():
            # axes marks the DRF request it was given, which its middleware (on the HttpRequest) never sees
            if getattr(request, "axes_locked_out", False):
                minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
                return Response({"detail": f"Too many failed logins for this user from this address: "
                                           f"locked out for {minutes} minutes."}, status=status.HTTP_429_TOO_MANY_REQUESTS)
            raise ValidationError(serializer.errors)
        user = serializer.validated_data["user"]
        Token.objects.filter(user=user, created__lte=timezone.now() - settings.API_TOKEN_LIFETIME).delete()
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key, "expires": token.created + settings.API_TOKEN_LIFETIME})
