from django.apps import AppConfig


class MetricsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "metrics"
    verbose_name = "Metrics"

    def ready(self):
        # The report page (studies) shows the human + metric estimates without studies importing metrics.
        from metrics.ppi_views import report_section
        from studies.reports import sections

        sections.register(report_section)
