from django.apps import AppConfig


class MetricsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "metrics"
    verbose_name = "Metrics"

    def ready(self):
        from django.conf import settings
        from django.core.signals import setting_changed

        from ml import embedding_cache  # no torch: the web process configures the cache too

        embedding_cache.configure(settings.EMBEDDING_CACHE_DIR)

        def follow(setting, value, **kwargs):
            if setting == "EMBEDDING_CACHE_DIR":
                embedding_cache.configure(value)

        setting_changed.connect(follow, weak=False)

        # The report page (studies) shows the human + metric estimates without studies importing metrics.
        from metrics.web.ppi_views import report_section
        from studies.reports import sections

        sections.register(report_section)

        # Services queue tasks by name (studies.jobs); importing the tasks registers the names in every process.
        # The built-in metrics exist after every migrate (a fresh database included), never by a page view.
        from django.db.models.signals import post_migrate

        from metrics import tasks  # noqa: F401
        from metrics.scoring.services import builtin_metrics_register

        post_migrate.connect(builtin_metrics_register, sender=self, dispatch_uid="metrics-builtin")
