"""Queueing studies' Celery tasks from services, by the task's name.

``studies.tasks`` imports the services (a task is a thin shell around one), so a service that queues
work names the task instead of importing it; Celery's registry finds it (``StudiesConfig.ready``
imports ``studies.tasks``, so every process has it registered). Queued after the transaction
commits, so a worker never looks for a row that a rollback removed."""
from __future__ import annotations

from django.db import transaction


def queue_after_commit(task_name: str, *args, robust: bool = False) -> None:
    """``<task_name>.delay(*args)`` once the current transaction commits (at once outside one);
    ``robust``: a broker that refuses the message is logged, not raised into the committed request."""
    from celery import current_app

    transaction.on_commit(lambda: current_app.tasks[task_name].delay(*args), robust=robust)
