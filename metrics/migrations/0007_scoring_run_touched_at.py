import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('metrics', '0006_human_metric_summary'),
    ]

    operations = [
        migrations.AddField(
            model_name='scoringrun',
            name='touched_at',
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
    ]
