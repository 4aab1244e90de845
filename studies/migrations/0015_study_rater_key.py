"""A rater's link names the study by an opaque key, not its slug: existing studies get one."""
import secrets

from django.db import migrations, models

import studies.models.studies


def fill(apps, schema_editor):
    Study = apps.get_model("studies", "Study")
    for study in Study.objects.filter(rater_key__isnull=True).only("pk"):
        Study.objects.filter(pk=study.pk).update(rater_key=secrets.token_urlsafe(9))


class Migration(migrations.Migration):
    dependencies = [("studies", "0014_system_owner")]

    operations = [
        migrations.AddField(model_name="study", name="rater_key",
                            field=models.CharField(max_length=16, null=True, editable=False)),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AlterField(model_name="study", name="rater_key",
                              field=models.CharField(max_length=16, unique=True, editable=False,
                                                     default=studies.models.studies.new_rater_key)),
    ]
