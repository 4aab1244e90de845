from django.apps import AppConfig


class StudiesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "studies"
    verbose_name = "Studies"

    def ready(self) -> None:
        # Services queue tasks by name (studies.jobs); registering them here makes the names resolve in
        # every process, web and worker alike.
        from studies import (
            checks,  # noqa: F401 - the deploy checks (manage.py check --deploy)
            tasks,  # noqa: F401
        )
        from studies.chat.report import report_section
        from studies.onboarding.report import report_section as practice_section
        from studies.onboarding.views import practice_begin
        from studies.rating.entry_views import practice_page_register
        from studies.reports import sections
        from studies.reports.span_views import report_section as span_section

        sections.register(report_section)  # the report's "Chats" section (chat studies only)
        sections.register(practice_section)  # the report's "Practice" section (studies with practice items only)
        sections.register(span_section)  # the report's "Marked spans" section (span criteria only)
        practice_page_register(practice_begin)  # a rater who must practise first gets the practice's page
