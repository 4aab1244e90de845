"""System descriptions per researcher: ``SystemDescription``. An existing description (set by
whoever first imported the name) moves to the owner of the earliest corpus holding that system's
responses, and leaves the shared row; Concord's own check-item system keeps its text."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

CHECK_SYSTEM = "attention-check"


def descriptions_to_owners(apps, schema_editor):
    System = apps.get_model("studies", "System")
    Response = apps.get_model("studies", "Response")
    SystemDescription = apps.get_model("studies", "SystemDescription")
    for system in System.objects.exclude(description="").exclude(name=CHECK_SYSTEM):
        first = (Response.objects.filter(system=system, conversation__corpus__owner__isnull=False)
                 .order_by("conversation__corpus__created_at", "conversation__corpus_id")
                 .values_list("conversation__corpus__owner", flat=True).first())
        if first is not None:
            SystemDescription.objects.get_or_create(system=system, owner_id=first, defaults={
                "description": system.description, "is_human": system.is_human})
        system.description = ""
        system.save(update_fields=["description"])


class Migration(migrations.Migration):

    dependencies = [
        ("studies", "0013_onboarding"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="SystemDescription",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("description", models.TextField(blank=True)),
                ("is_human", models.BooleanField(default=False)),
                ("owner", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                            to=settings.AUTH_USER_MODEL)),
                ("system", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="descriptions",
                                             to="studies.system")),
            ],
            options={
                "ordering": ["system", "owner"],
                "constraints": [models.UniqueConstraint(fields=("system", "owner"),
                                                        name="system_description_one_per_owner")],
            },
        ),
        migrations.RunPython(descriptions_to_owners, migrations.RunPython.noop),
    ]
