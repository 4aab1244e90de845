from django.urls import path

from studies import views

app_name = "studies"
urlpatterns = [
    path("", views.experiment_list, name="experiment_list"),
    path("experiments/new/", views.experiment_create, name="experiment_create"),
    path("experiments/<slug:experiment>/studies/new/", views.study_create, name="study_create"),
    path("studies/<slug:slug>/", views.study_detail, name="study_detail"),
    path("studies/<slug:slug>/<str:action>/", views.study_transition, name="study_transition"),
    path("studies/<slug:slug>/export.<str:export_format>", views.study_export, name="study_export"),
    path("import/", views.dialogues_import, name="import"),
]
