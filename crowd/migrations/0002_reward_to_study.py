"""The reward per assignment moves from draft publications' settings to Study.reward (one source of
truth: studies.authoring.planning and crowd's effective settings both read the study). A study takes the reward
of its production publication first (MTurk in USD; Prolific reward_cents / 100), and keeps its own if
it already has one. Publications already sent keep theirs: the record of what the platform was told."""
from decimal import Decimal

from django.db import migrations


def _amount(publication):
    settings = publication.settings or {}
    if publication.platform == "prolific" and settings.get("reward_cents") not in (None, ""):
        return (Decimal(str(settings["reward_cents"])) / 100).quantize(Decimal("0.01"))
    if publication.platform == "mturk" and settings.get("reward") not in (None, ""):
        return Decimal(str(settings["reward"])).quantize(Decimal("0.01"))
    return None


def forwards(apps, schema_editor):
    Publication = apps.get_model("crowd", "Publication")
    Study = apps.get_model("studies", "Study")
    chosen = {}
    for publication in Publication.objects.order_by("sandbox", "pk"):  # production before sandbox
        amount = _amount(publication)
        if amount is not None and amount > 0:
            chosen.setdefault(publication.study_id, amount)
        if publication.status == "draft" and amount is not None:
            publication.settings = {k: v for k, v in publication.settings.items() if k not in ("reward", "reward_cents")}
            publication.save(update_fields=["settings"])
    for study_id, amount in chosen.items():
        Study.objects.filter(pk=study_id, reward__isnull=True).update(reward=amount)


def backwards(apps, schema_editor):
    Publication = apps.get_model("crowd", "Publication")
    for publication in Publication.objects.filter(status="draft").select_related("study"):
        reward = publication.study.reward
        if reward is None:
            continue
        key, value = ("reward_cents", int(reward * 100)) if publication.platform == "prolific" else ("reward", str(reward))
        publication.settings = {**publication.settings, key: value}
        publication.save(update_fields=["settings"])


class Migration(migrations.Migration):
    dependencies = [
        ("crowd", "0001_crowd_platforms"),
        ("studies", "0005_study_workflow"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
