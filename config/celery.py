"""The Celery app. Settings come from Django's (prefix CELERY_); tasks live in each app's tasks.py."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("concord")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _filesystem_broker_folders() -> None:
    """The filesystem transport needs its folders to exist before anyone sends or consumes."""
    from pathlib import Path

    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)


@app.on_after_configure.connect
def _prepare_broker(sender, **kwargs) -> None:
    if str(sender.conf.broker_url).startswith("filesystem"):
        _filesystem_broker_folders()
