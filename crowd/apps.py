from django.apps import AppConfig


class CrowdConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "crowd"
    verbose_name = "Crowd platforms (Mechanical Turk, Prolific)"

    def ready(self) -> None:
        # studies announces a passed practice; crowd grants the MTurk qualification (studies imports no crowd).
        # Services queue tasks by name (studies.jobs): registered here, the names resolve in every process.
        from crowd import tasks  # noqa: F401
        from crowd.practice import on_practice_passed
        from studies.onboarding.signals import practice_passed

        practice_passed.connect(on_practice_passed, dispatch_uid="crowd.practice_qualification")
