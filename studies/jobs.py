"""Queueing studies' Celery tasks from services, by the task's name.

``studies.tasks`` imports the services (a task is a thin shell around one), so a service that queues
work names the task instead of importing it; Celery's registry finds it (``StudiesConfig.ready``
imports ``studies.tasks``, so every process has it registered). Queued after the transaction
commits, so a worker never looks for a row that a rollback removed.

Also what every job with a row shares: ``failure_text`` (an exception as the reason the row shows) and
``Lease`` (the row's lease, renewed while its worker lives; docs/architecture.md, "Background jobs")."""
from __future__ import annotations

from django.db import transaction


def queue_after_commit(task_name: str, *args, robust: bool = False, queue: str | None = None) -> None:
    """``<task_name>.delay(*args)`` once the current transaction commits (at once outside one), on
    ``queue`` where given (else the task's route); ``robust``: a broker that refuses the message is logged,
    not raised into the committed request."""
    from celery import current_app

    def send() -> None:
        task = current_app.tasks[task_name]
        task.apply_async(args, queue=queue) if queue else task.delay(*args)

    transaction.on_commit(send, robust=robust)


def failure_text(error: BaseException) -> str:
    """An exception as the reason a researcher reads (type and message, at most 500 characters), storable:
    a lone surrogate or NUL in the message is escaped, never raised again while recording it."""
    text = f"{type(error).__name__}: {error}"[:500]
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


def lease_end():
    """When a lease taken or renewed now ends (``settings.JOB_LEASE_SECONDS`` from now)."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    return timezone.now() + timedelta(seconds=settings.JOB_LEASE_SECONDS)


class Lease:
    """A running job's lease on its row (a model with ``lease_until`` and ``status``), held while the task
    runs: a daemon thread renews it every ``settings.JOB_HEARTBEAT_SECONDS`` and sets ``stopped`` once the
    row's status is one of ``stop_statuses`` (a Cancel), so the job stops within seconds. A worker that is
    killed stops renewing; the beat's recover task finds the lease past its end (``lease_until``) and queues
    the job again or fails it. Used as ``with Lease(ScoringRun, run_id) as lease: ... lease.stopped``."""

    def __init__(self, model, pk: int, *, stop_statuses: tuple[str, ...] = ()):
        import threading

        self.model, self.pk, self.stop_statuses = model, pk, stop_statuses
        self.stopped = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-{model.__name__}-{pk}", daemon=True)

    def renew(self) -> None:
        rows = self.model.objects.filter(pk=self.pk)
        rows.update(lease_until=lease_end())
        if self.stop_statuses and rows.filter(status__in=self.stop_statuses).exists():
            self.stopped.set()

    def _beat(self) -> None:
        import logging

        from django.conf import settings
        from django.db import connection

        try:
            while not self._done.wait(settings.JOB_HEARTBEAT_SECONDS):
                try:
                    self.renew()
                except Exception:  # noqa: BLE001 - a lost beat is retried at the next; the lease allows several
                    logging.getLogger(__name__).warning("renewing the lease of %s %s failed", self.model.__name__,
                                                        self.pk, exc_info=True)
        finally:
            connection.close()  # this thread's own connection

    def __enter__(self) -> Lease:
        self.model.objects.filter(pk=self.pk).update(lease_until=lease_end())
        self._thread.start()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self._done.set()
        self._thread.join()
        if exc_type is None:  # an exception leaves the lease to end, so the recover task finds the job
            self.model.objects.filter(pk=self.pk).update(lease_until=None)
