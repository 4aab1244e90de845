"""The metrics page's "Make an LLM judge" form (``metrics.scoring.judges.judge_model_create``)."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from metrics.scoring.judges import judge_model_create
from studies import access


def judge_endpoints(user):
    """The user's own OpenAI-compatible endpoints, for the form's choice."""
    from studies.chat.selectors import endpoints_visible_to

    return endpoints_visible_to(user).filter(protocol="openai").select_related("system").order_by("system__name")


@login_required
@require_POST
def judge_start(request):
    study = get_object_or_404(access.studies_visible_to(request.user), slug=request.POST.get("study"))
    try:
        endpoint_id = int(request.POST.get("endpoint", ""))
    except ValueError:
        messages.error(request, "endpoint: choose one of your OpenAI-compatible endpoints")
        return redirect("metrics:metric_list")
    try:
        model = judge_model_create(owner=request.user, endpoint_id=endpoint_id, study=study,
                                   criterion=request.POST.get("criterion", "").strip(),
                                   name=request.POST.get("name", "").strip(), logprobs=request.POST.get("logprobs") == "on")
    except ValidationError as error:
        for field, problems in error.message_dict.items():
            messages.error(request, f"{field}: {'; '.join(problems)}")
        return redirect("metrics:metric_list")
    messages.success(request, f"Judge {model.name} made: choose it under “Score a study” to score {study.title}.")
    return redirect("metrics:metric_list")
