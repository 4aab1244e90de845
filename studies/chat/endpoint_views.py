"""Researcher pages for system endpoints: the list, the form (a key is write-only: the page says
whether one is set, never what it is), and "Try it" (one greeting sent, the reply or the failure shown).
These pages need the ``studies.change_systemendpoint`` permission (every chat researcher holds it) and
show a researcher their own endpoints only (``selectors.endpoints_visible_to``: another's is a 404,
as if it did not exist); admins see and change all."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from studies import endpoint_owners
from studies.chat import endpoints, selectors
from studies.chat.client import BotError
from studies.models import System, SystemEndpoint

PERMISSION = "studies.change_systemendpoint"


class EndpointForm(forms.Form):
    system = forms.CharField(max_length=80, help_text="The system's name (a new one is created).")
    protocol = forms.ChoiceField(choices=SystemEndpoint.Protocol.choices)
    url = forms.CharField(max_length=500, label="URL", help_text="Concord: the URL the dialogue is posted to. "
                          "OpenAI-compatible: the base URL (…/v1) or the full …/v1/chat/completions.")
    model_name = forms.CharField(max_length=200, required=False, help_text="Sent as the request's model.")
    key = forms.CharField(required=False, max_length=4000, label="Key", strip=True,
                          widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
                          help_text="Stored encrypted and never shown again. Leave empty to keep the stored key.")
    key_env = forms.CharField(required=False, max_length=100, label="Or: key from the environment variable",
                              help_text="e.g. CONCORD_BOT_KEY_MYBOT, set on the server (web and workers).")
    clear_key = forms.BooleanField(required=False, label="Remove the stored key")
    timeout_seconds = forms.FloatField(initial=10, min_value=0.5, max_value=60, label="Timeout per attempt (s)")
    retries = forms.IntegerField(initial=2, min_value=0, max_value=5)
    owner = forms.CharField(required=False, max_length=150, label="Owner (admins only)",
                            help_text="The user name of the researcher this endpoint belongs to (empty: unchanged).")


_UNCHANGED = object()


def _owner_given(user, name: str, endpoint: SystemEndpoint | None):
    """The owner an admin typed (a user) or ``_UNCHANGED`` (left empty, or not an admin)."""
    if not user.is_superuser or endpoint is None:
        return _UNCHANGED
    name = (name or "").strip()
    if not name:
        return _UNCHANGED
    found = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: name}).first()
    if found is None:
        raise ValidationError({"owner": f"no user named {name[:150]}"})
    return found


@permission_required(PERMISSION)
def endpoint_list(request):
    return render(request, "studies/endpoint_list.html", {"endpoints": selectors.systems_with_endpoints(request.user)})


@permission_required(PERMISSION)
def endpoint_edit(request, pk: int | None = None):
    """A new endpoint (the researcher's own, for a system named on the form), or one the user may see."""
    endpoint = get_object_or_404(selectors.endpoints_visible_to(request.user), pk=pk) if pk is not None else None
    name = endpoint.system.name if endpoint is not None else None
    initial = {"system": name or "", "timeout_seconds": 10, "retries": 2}
    if endpoint is not None:
        initial |= {"protocol": endpoint.protocol, "url": endpoint.url, "model_name": endpoint.model_name,
                    "key_env": endpoint.key_env, "timeout_seconds": endpoint.timeout_seconds,
                    "retries": endpoint.retries}
    if endpoint is not None:
        initial["owner"] = endpoint.owner.get_username() if endpoint.owner else ""
    form = EndpointForm(request.POST or None, initial=initial)
    if not request.user.is_superuser or endpoint is None:
        del form.fields["owner"]  # a new endpoint is its maker's; only an admin gives one to someone else
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        system_name = name or slugify(data["system"])
        if not system_name:
            form.add_error("system", "give the system a name (letters, digits, - and _)")
        elif endpoint is None and endpoint_owners.endpoints_of(request.user.pk).filter(system__name=system_name).exists():
            form.add_error("system", f"you already have an endpoint for {system_name}: change that one")
        else:
            try:
                new_owner = _owner_given(request.user, data.get("owner", ""), endpoint)
                with transaction.atomic():
                    system = endpoint.system if endpoint is not None else System.objects.get_or_create(
                        name=system_name)[0]
                    saved = endpoints.endpoint_set(
                        owner=endpoint.owner_id if endpoint is not None else request.user, system=system,
                        protocol=data["protocol"], url=data["url"], model_name=data["model_name"], key=data["key"],
                        key_env=data["key_env"], clear_key=data["clear_key"], timeout_seconds=data["timeout_seconds"],
                        retries=data["retries"])
                    if new_owner is not _UNCHANGED:
                        saved = endpoints.endpoint_owner_set(endpoint=saved, owner=new_owner)
            except ValidationError as error:
                for field, problems in error.message_dict.items():
                    form.add_error(field if field in form.fields else None, problems)
            else:
                messages.success(request, f"Endpoint of {system_name} saved.")
                return redirect("chat:endpoint_edit", pk=saved.pk)
    return render(request, "studies/endpoint_edit.html", {"form": form, "endpoint": endpoint, "name": name},
                  status=400 if form.errors else 200)


@permission_required(PERMISSION)
@require_POST
def endpoint_try(request, pk: int):
    endpoint = get_object_or_404(selectors.endpoints_visible_to(request.user), pk=pk)
    try:
        reply = endpoints.endpoint_try(endpoint=endpoint)
    except BotError as error:
        messages.error(request, f"No reply after {error.attempts} attempt(s), {error.seconds:.1f} s: "
                                f"{endpoints.try_message(error)}")
    else:
        messages.success(request, f"Reply in {reply.seconds:.2f} s ({reply.attempts} attempt(s)): “{reply.text}”")
    return redirect("chat:endpoint_edit", pk=pk)
