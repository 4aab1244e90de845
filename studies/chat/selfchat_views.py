"""Researcher pages for self-chats (``studies.chat.selfchat``): the researcher's runs and a form for a new
one (``selfchat_forms``), a run's progress (HTML, or JSON for polling), the conversations it made, one
conversation as the corpus holds it, "cancel" and "run again". A run is its owner's: another researcher
gets a 404 (admins see every run); the systems offered are ``endpoints_visible_to(user)``, the corpora
the user's own self-chat corpora (``selectors.selfchat_corpora``)."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from studies.chat import selfchat, selfchat_selectors
from studies.chat.selectors import endpoints_visible_to
from studies.chat.selfchat_forms import NEW_CORPUS, SelfChatForm, form_field_of, selfchat_create_kwargs


@login_required
def selfchat_list(request):
    systems = sorted(set(endpoints_visible_to(request.user).values_list("system__name", flat=True)))
    corpora = selfchat_selectors.selfchat_corpora(request.user)
    form = SelfChatForm(request.POST or None, systems=systems, corpora=[(c.slug, c.title) for c in corpora],
                        initial={"corpus": request.GET.get("corpus", NEW_CORPUS)})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        corpus = corpora.filter(slug=data["corpus"]).first() if data["corpus"] else None
        try:
            run = selfchat.selfchat_create(owner=request.user, corpus=corpus, **selfchat_create_kwargs(data))
        except ValidationError as error:
            for key, problems in error.message_dict.items():
                field = form_field_of(key)
                form.add_error(field if field in form.fields else None, problems)
        else:
            messages.success(request, f"Self-chat “{run.title}” queued.")
            return redirect("chat:selfchat_detail", pk=run.pk)
    runs = [{"run": run, "progress": selfchat.selfchat_progress(run)}
            for run in selfchat_selectors.selfchat_runs_of(request.user)]
    return render(request, "studies/selfchat_list.html", {"form": form, "runs": runs, "systems": systems},
                  status=400 if form.errors else 200)


@login_required
def selfchat_detail(request, pk: int):
    run = get_object_or_404(selfchat_selectors.selfchat_runs_of(request.user), pk=pk)
    progress = selfchat.selfchat_progress(run)
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse(progress)
    dialogues = run.dialogues.select_related("conversation").order_by("index")[:500]
    return render(request, "studies/selfchat_detail.html", {
        "run": run, "progress": progress, "dialogues": dialogues, "more": max(0, run.conversations - 500),
        "stoppable": run.status in (run.Status.QUEUED, run.Status.RUNNING),
        "settings": selfchat_selectors.run_settings(run)})


@login_required
def selfchat_conversation(request, pk: int, index: int):
    run = get_object_or_404(selfchat_selectors.selfchat_runs_of(request.user), pk=pk)
    dialogue = get_object_or_404(run.dialogues.select_related("conversation"), index=index)
    return render(request, "studies/selfchat_conversation.html", {
        "run": run, "dialogue": dialogue, "turns": selfchat_selectors.dialogue_turns(run, dialogue),
        "speakers": selfchat.speakers(run), "settings": selfchat_selectors.run_settings(run)})


@login_required
@require_POST
def selfchat_rerun(request, pk: int):
    run = get_object_or_404(selfchat_selectors.selfchat_runs_of(request.user), pk=pk)
    try:
        selfchat.selfchat_rerun(run=run)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, "Queued again: it continues from the stored turns.")
    return redirect("chat:selfchat_detail", pk=run.pk)


@login_required
@require_POST
def selfchat_cancel(request, pk: int):
    run = get_object_or_404(selfchat_selectors.selfchat_runs_of(request.user), pk=pk)
    try:
        selfchat.selfchat_cancel(run=run)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, "Cancelled: it stops before its next call; “Run again” continues it.")
    return redirect("chat:selfchat_detail", pk=run.pk)
