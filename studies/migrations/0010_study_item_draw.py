from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("studies", "0009_rater_block"),
    ]

    operations = [
        migrations.AddField(
            model_name="study",
            name="item_draw",
            field=models.JSONField(blank=True, default=dict, editable=False,
                                   help_text="How the items were drawn from their corpus (studies.authoring.item_draws)."),
        ),
    ]
