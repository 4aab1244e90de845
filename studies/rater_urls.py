"""The rater's addresses (``/r/``): the entry links, the assignment's pages and the practice before them.
Wired here, above both, because the practice (studies.onboarding) builds on the rating pages."""
from django.urls import path

import studies.converters  # noqa: F401 - registers <token:...>
from studies.onboarding import views as practice_views
from studies.rating import entry_views
from studies.rating import views as rater_views

app_name = "raters"
urlpatterns = [
    path("a/<token:token>/", entry_views.start, name="start"),
    path("a/<token:token>/items/<position:position>/", rater_views.item, name="item"),
    path("a/<token:token>/items/<position:position>/draft/", rater_views.draft, name="draft"),
    path("a/<token:token>/questionnaire/", rater_views.questionnaire, name="questionnaire"),
    path("a/<token:token>/done/", rater_views.done, name="done"),
    path("p/<token:token>/", practice_views.practice, name="practice"),
    path("p/<token:token>/items/<position:position>/", practice_views.practice_item, name="practice_item"),
    path("p/<token:token>/retake/", practice_views.practice_retake, name="practice_retake"),
    path("p/<token:token>/continue/", practice_views.practice_continue, name="practice_continue"),
    path("x/<slug:slug>/", entry_views.experiment_entry, name="experiment_entry"),
    path("c/<token:key>/", entry_views.condition_entry, name="condition_entry"),
    path("<slug:slug>/", entry_views.entry, name="entry"),
]
