from django.urls import path

import studies.converters  # noqa: F401 - registers <id:...>, <position:...>, <token:...>
from crowd.api import decision_views, views

app_name = "crowd-api"
urlpatterns = [
    path("studies/<slug:slug>/", views.StudyCrowdApi.as_view(), name="study"),
    path("studies/<slug:slug>/publications/", views.PublicationConfigureApi.as_view(), name="publication-configure"),
    path("studies/<slug:slug>/raters/<id:rater>/decisions/", decision_views.RaterPlatformDecisionApi.as_view(),
         name="rater-decide"),
    path("publications/<id:pk>/balance/", views.BalanceApi.as_view(), name="balance"),
    path("publications/<id:pk>/publish/", views.PublishApi.as_view(), name="publish"),
    path("publications/<id:pk>/sync/", views.SyncApi.as_view(), name="sync"),
    path("publications/<id:pk>/review/", views.ReviewApi.as_view(), name="review"),
    path("publications/<id:pk>/bonuses/", views.BonusApi.as_view(), name="bonus"),
    path("publications/<id:pk>/workers/block/", views.WorkerBlockApi.as_view(), name="worker-block"),
    path("publications/<id:pk>/workers/notify/", views.NotifyApi.as_view(), name="notify"),
    path("publications/<id:pk>/hits/<str:hit_id>/extend/", views.HitExtendApi.as_view(), name="hit-extend"),
    path("publications/<id:pk>/expire/", views.ExpireApi.as_view(), name="expire"),
    path("publications/<id:pk>/transition/", views.TransitionApi.as_view(), name="transition"),
]
