from django.urls import path

import studies.converters  # noqa: F401 - registers <id:...>, <position:...>, <token:...>
from metrics.web import judge_views, mdd_views, ppi_views, views

app_name = "metrics"
urlpatterns = [
    path("metrics/", views.metric_list, name="metric_list"),
    path("metrics/models/<slug:name>/", views.model_detail, name="model_detail"),
    path("metrics/models/<slug:name>/card/", views.model_card_start, name="model_card_start"),
    path("metrics/runs/start/", views.run_start, name="run_start"),
    path("metrics/judges/start/", judge_views.judge_start, name="judge_start"),
    path("metrics/runs/<id:pk>/cancel/", views.run_cancel, name="run_cancel"),
    path("metrics/runs/<id:pk>/retry/", views.run_retry, name="run_retry"),
    path("metrics/runs/<id:pk>/rerun/", views.run_rerun, name="run_rerun"),
    path("metrics/training/start/", views.training_start, name="training_start"),
    path("metrics/training/mdd-eval/start/", mdd_views.mdd_training_start, name="mdd_training_start"),
    path("metrics/training/<id:pk>/cancel/", views.training_cancel, name="training_cancel"),
    path("metrics/training/<id:pk>/curve.svg", views.training_curve, name="training_curve"),
    path("metrics/bme/<slug:slug>/", views.bme_fill, name="bme_fill"),
    path("experiments/<slug:slug>/metrics/<slug:model>/", views.human_metric_page, name="human_metric"),
    path("experiments/<slug:slug>/metrics/<slug:model>.csv", views.human_metric_csv, name="human_metric_csv"),
    path("experiments/<slug:slug>/metrics/<slug:model>/prediction-powered.<str:export_format>", ppi_views.ppi_download,
         name="ppi_download"),
    path("experiments/<slug:slug>/metrics/<slug:model>/prediction-powered/<slug:condition>/<slug:criterion>.svg",
         ppi_views.ppi_figure, name="ppi_figure"),
    path("metrics/prediction-powered/<slug:slug>/extend/", ppi_views.ppi_extend, name="ppi_extend"),
    path("experiments/<slug:slug>/metrics/<slug:model>/scatter/<slug:condition>/<slug:criterion>.svg",
         views.human_metric_scatter, name="human_metric_scatter"),
]
