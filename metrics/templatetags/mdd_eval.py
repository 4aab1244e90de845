"""``{% mdd_eval_training %}``: the staff form that queues MDD-Eval's stages, with the teachers and the
augmented data sets to choose from (its own queries, so the metrics page's view stays as it is)."""
from django import template

from metrics.models import MetricModel, TrainingDataset

register = template.Library()


@register.inclusion_tag("metrics/mdd_eval_training.html", takes_context=True)
def mdd_eval_training(context):
    return {"csrf_token": context.get("csrf_token"),
            "teachers": MetricModel.objects.filter(metric__key="mdd_eval").order_by("-created_at")[:50],
            "datasets": TrainingDataset.objects.filter(metric__key="mdd_eval")[:50]}
