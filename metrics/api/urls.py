from django.urls import path

import studies.converters  # noqa: F401 - registers <id:...>, <position:...>, <token:...>
from metrics.api import bme_views, download_views, ranking_views, run_views, views

app_name = "metrics-api"
urlpatterns = [
    path("metrics/models/", views.MetricModelListApi.as_view(), name="model-list"),
    path("metrics/models/<slug:name>/", views.MetricModelDetailApi.as_view(), name="model-detail"),
    path("metrics/models/<slug:name>/card/", download_views.ModelCardApi.as_view(), name="model-card"),
    path("metrics/judges/", run_views.JudgesApi.as_view(), name="judge-create"),
    path("metrics/runs/", run_views.ScoringRunCreateApi.as_view(), name="run-create"),
    path("metrics/runs/<id:pk>/", views.ScoringRunDetailApi.as_view(), name="run-detail"),
    path("metrics/runs/<id:pk>/cancel/", views.ScoringRunCancelApi.as_view(), name="run-cancel"),
    path("metrics/runs/<id:pk>/retry/", views.ScoringRunRetryApi.as_view(), name="run-retry"),
    path("metrics/runs/<id:pk>/rerun/", views.ScoringRunRerunApi.as_view(), name="run-rerun"),
    path("metrics/training/", views.TrainingRunCreateApi.as_view(), name="training-create"),
    path("metrics/training/<id:pk>/", views.TrainingRunDetailApi.as_view(), name="training-detail"),
    path("metrics/training/<id:pk>/cancel/", views.TrainingRunCancelApi.as_view(), name="training-cancel"),
    path("studies/<slug:slug>/bme-anchors/", bme_views.BmeAnchorsApi.as_view(), name="bme-anchors"),
    path("experiments/<slug:slug>/judges/ranking/", ranking_views.JudgeRankingApi.as_view(), name="judge-ranking"),
    path("experiments/<slug:slug>/metrics/<slug:model>/", views.HumanMetricReportApi.as_view(), name="human-metric"),
    path("experiments/<slug:slug>/metrics/<slug:model>/prediction-powered/", views.PredictionPoweredApi.as_view(),
         name="ppi"),
    path("experiments/<slug:slug>/metrics/<slug:model>/download/", download_views.HumanMetricDownloadApi.as_view(),
         name="human-metric-download"),
    path("experiments/<slug:slug>/metrics/<slug:model>/prediction-powered/download/",
         download_views.PredictionPoweredDownloadApi.as_view(), name="ppi-download"),
]
