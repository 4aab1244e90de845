"""Researcher pages for self-chats (``studies.chat.selfchat``): the researcher's runs and a form for a new
one, a run's progress (HTML, or JSON for polling) and "run again". A run is its owner's: another
researcher gets a 404 (admins see every run); the systems offered are ``endpoints_visible_to(user)``."""
from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from studies.chat import selfchat
from studies.chat.selectors import endpoints_visible_to
from studies.models import SelfChatRun


class SelfChatForm(forms.Form):
    title = forms.CharField(max_length=200)
    system_a = forms.ChoiceField(label="Bot A (judged in ACUTE-Eval)")
    system_b = forms.ChoiceField(label="Bot B (its partner; the same bot for a self-chat)")
    openers = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), help_text="One opener per line, used in turn.")
    conversations = forms.IntegerField(min_value=1, max_value=10000, initial=20)
    turns = forms.IntegerField(min_value=1, max_value=100, initial=6, help_text="Bot turns after the opener.")
    bot_settings = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                                   help_text='JSON, e.g. {"a": {"system_prompt": "…", "temperature": 0.7, '
                                             '"requests_per_minute": 30}, "b": {…}}')

    def __init__(self, *args, systems: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        choices = [(s, s) for s in systems]
        self.fields["system_a"].choices = self.fields["system_b"].choices = choices


def _runs_of(user):
    runs = SelfChatRun.objects.select_related("system_a", "system_b", "corpus")
    return runs if user.is_superuser else runs.filter(owner=user)


@login_required
def selfchat_list(request):
    systems = sorted(endpoints_visible_to(request.user).values_list("system__name", flat=True))
    form = SelfChatForm(request.POST or None, systems=systems)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            raw = json.loads(data["bot_settings"]) if data["bot_settings"].strip() else {}
        except ValueError as error:
            form.add_error("bot_settings", f"not JSON: {error}")
        else:
            try:
                run = selfchat.selfchat_create(
                    owner=request.user, title=data["title"], system_a=data["system_a"], system_b=data["system_b"],
                    openers=data["openers"].splitlines(), conversations=data["conversations"], turns=data["turns"],
                    bot_settings=raw)
            except ValidationError as error:
                for field, problems in error.message_dict.items():
                    form.add_error(field if field in form.fields else None, problems)
            else:
                messages.success(request, f"Self-chat “{run.title}” queued.")
                return redirect("chat:selfchat_detail", pk=run.pk)
    runs = [{"run": run, "progress": selfchat.selfchat_progress(run)} for run in _runs_of(request.user)]
    return render(request, "studies/selfchat_list.html", {"form": form, "runs": runs, "systems": systems},
                  status=400 if form.errors else 200)


@login_required
def selfchat_detail(request, pk: int):
    run = get_object_or_404(_runs_of(request.user), pk=pk)
    progress = selfchat.selfchat_progress(run)
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse(progress)
    failed = run.dialogues.filter(status="failed").order_by("index")[:20]
    return render(request, "studies/selfchat_detail.html", {"run": run, "progress": progress, "failed": failed})


@login_required
@require_POST
def selfchat_rerun(request, pk: int):
    run = get_object_or_404(_runs_of(request.user), pk=pk)
    try:
        selfchat.selfchat_rerun(run=run)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, "Queued again: it continues from the stored turns.")
    return redirect("chat:selfchat_detail", pk=run.pk)
