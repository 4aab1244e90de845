from django.urls import path

import studies.converters  # noqa: F401 - registers <id:...>
from crowd import views

app_name = "crowd"
urlpatterns = [
    path("studies/<slug:slug>/crowd/", views.crowd_page, name="study_crowd"),
    path("studies/<slug:slug>/crowd/raters/<id:rater>/decide/", views.rater_decide, name="rater_decide"),
    path("studies/<slug:slug>/crowd/<str:action>/", views.crowd_action, name="study_crowd_action"),
]
