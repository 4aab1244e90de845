from django.urls import path

from crowd import views

app_name = "crowd"
urlpatterns = [
    path("studies/<slug:slug>/crowd/", views.crowd_page, name="study_crowd"),
    path("studies/<slug:slug>/crowd/<str:action>/", views.crowd_action, name="study_crowd_action"),
]
