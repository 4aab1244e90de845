"""What onboarding tells other apps: ``practice_passed`` is sent (after the commit) when a platform
identity passes a study's practice, with ``attempt`` (a PracticeAttempt). The crowd app connects a
receiver from ``CrowdConfig.ready`` to grant an MTurk qualification, so studies imports no crowd."""
from django.dispatch import Signal

practice_passed = Signal()
