"""The staff form that queues an MDD-Eval stage (``metrics.training.mdd``); runs then show in the
metrics page's training table like every TrainingRun."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from metrics.training import services as training
from metrics.web.views import numbers_given

FIELDS = {"epochs": int, "train_limit": int, "pairs_limit": int, "per_technique": int, "threshold": float,
          "learning_rate": float, "max_steps": int}
TEXT_FIELDS = ("init_from", "train_data", "sources", "mask_model", "translate_forward", "translate_backward",
               "generator_model")


@staff_member_required
@require_POST
def mdd_training_start(request):
    """Queue a stage; a bad value names its field and queues nothing."""
    given, errors = numbers_given(request.POST, FIELDS)
    given.update({f: request.POST[f].strip() for f in TEXT_FIELDS if request.POST.get(f, "").strip()})
    if errors:
        messages.error(request, "MDD-Eval stage not started: " + "; ".join(errors))
        return redirect("metrics:metric_list")
    try:
        run = training.training_run_create(metric="mdd_eval", stage=request.POST.get("stage", "teacher"),
                                           model_name=request.POST.get("model_name", "").strip(), **given)
    except ValueError as error:
        messages.error(request, f"MDD-Eval stage not started: {error}")
    else:
        messages.success(request, f"Training run {run.pk} (MDD-Eval {run.stage}) is queued for a worker; "
                                  f"it will register {run.model_name}.")
    return redirect("metrics:metric_list")
