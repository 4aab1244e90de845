from django.urls import path

from studies.onboarding import views as practice_views
from studies.rating import entry_views
from studies.rating import views as rater_views

app_name = "raters"
urlpatterns = [
    path("a/<str:token>/", entry_views.start, name="start"),
    path("a/<str:token>/items/<int:position>/", rater_views.item, name="item"),
    path("a/<str:token>/items/<int:position>/draft/", rater_views.draft, name="draft"),
    path("a/<str:token>/questionnaire/", rater_views.questionnaire, name="questionnaire"),
    path("a/<str:token>/done/", rater_views.done, name="done"),
    path("p/<str:token>/", practice_views.practice, name="practice"),
    path("p/<str:token>/items/<int:position>/", practice_views.practice_item, name="practice_item"),
    path("p/<str:token>/continue/", practice_views.practice_continue, name="practice_continue"),
    path("x/<slug:slug>/", entry_views.experiment_entry, name="experiment_entry"),
    path("<slug:slug>/", entry_views.entry, name="entry"),
]
