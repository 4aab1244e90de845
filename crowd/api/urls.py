from django.urls import path

from crowd.api import views

app_name = "crowd-api"
urlpatterns = [
    path("studies/<slug:slug>/", views.StudyCrowdApi.as_view(), name="study"),
    path("studies/<slug:slug>/publications/", views.PublicationConfigureApi.as_view(), name="publication-configure"),
    path("publications/<int:pk>/balance/", views.BalanceApi.as_view(), name="balance"),
    path("publications/<int:pk>/publish/", views.PublishApi.as_view(), name="publish"),
    path("publications/<int:pk>/sync/", views.SyncApi.as_view(), name="sync"),
    path("publications/<int:pk>/review/", views.ReviewApi.as_view(), name="review"),
    path("publications/<int:pk>/bonuses/", views.BonusApi.as_view(), name="bonus"),
    path("publications/<int:pk>/workers/block/", views.WorkerBlockApi.as_view(), name="worker-block"),
    path("publications/<int:pk>/workers/notify/", views.NotifyApi.as_view(), name="notify"),
    path("publications/<int:pk>/hits/<str:hit_id>/extend/", views.HitExtendApi.as_view(), name="hit-extend"),
    path("publications/<int:pk>/expire/", views.ExpireApi.as_view(), name="expire"),
    path("publications/<int:pk>/transition/", views.TransitionApi.as_view(), name="transition"),
]
