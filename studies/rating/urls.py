from django.urls import path

import studies.converters  # noqa: F401 - registers <token:...>
from studies.rating import entry_views
from studies.rating import views as rater_views

app_name = "raters"
urlpatterns = [
    path("a/<token:token>/", entry_views.start, name="start"),
    path("a/<token:token>/items/<position:position>/", rater_views.item, name="item"),
    path("a/<token:token>/items/<position:position>/draft/", rater_views.draft, name="draft"),
    path("a/<token:token>/questionnaire/", rater_views.questionnaire, name="questionnaire"),
    path("a/<token:token>/done/", rater_views.done, name="done"),
    path("x/<slug:slug>/", entry_views.experiment_entry, name="experiment_entry"),
    path("<slug:slug>/", entry_views.entry, name="entry"),
]
