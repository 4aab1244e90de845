"""Crowd's receiver of ``studies.onboarding.signals.practice_passed`` (connected in
``CrowdConfig.ready``, so studies imports no crowd): a pass queues the grant of the experiment's
practice qualification (``crowd.platforms.mturk_practice``); the platform call runs in a worker, never
in the rater's request."""
from __future__ import annotations

from studies import jobs


def on_practice_passed(sender, attempt, **kwargs) -> None:
    jobs.queue_after_commit("crowd.tasks.crowd_practice_grant", attempt.experiment_id, robust=True)
