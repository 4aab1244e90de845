from django.urls import path

import studies.converters  # noqa: F401 - registers <id:...>, <position:...>, <token:...>
from studies.authoring import builder_views, check_views, practice_views, workflow_views
from studies.authoring import views as authoring_views
from studies.corpora import browser_views as corpus_browser
from studies.corpora import views as corpus_views
from studies.rating import views as rater_views
from studies.reports import label_studio_views, review_views, span_views
from studies.reports import views as report_views

app_name = "studies"
urlpatterns = [
    path("", authoring_views.experiment_list, name="experiment_list"),
    path("experiments/new/", authoring_views.experiment_create, name="experiment_create"),
    path("experiments/<slug:experiment>/studies/new/", authoring_views.study_create, name="study_create"),
    path("experiments/<slug:experiment>/studies/new/preview/", builder_views.new_study_preview,
         name="new_study_preview"),
    path("experiments/<slug:experiment>/report/", report_views.report_page, name="experiment_report"),
    path("experiments/<slug:experiment>/report.<str:export_format>", report_views.report_download,
         name="experiment_report_download"),
    path("experiments/<slug:experiment>/report/figures/<str:name>.svg", report_views.report_figure,
         name="experiment_report_figure"),
    path("experiments/<slug:experiment>/export.<str:export_format>", report_views.ratings_export,
         name="experiment_export"),
    path("studies/<slug:study>/report/", report_views.report_page, name="study_report"),
    path("studies/<slug:study>/report/figures/<str:name>.svg", report_views.report_figure, name="study_report_figure"),
    path("studies/<slug:study>/report.<str:export_format>", report_views.report_download, name="study_report_download"),
    path("studies/<slug:slug>/label-studio.json", label_studio_views.label_studio_tasks_download,
         name="study_label_studio_tasks"),
    path("studies/<slug:slug>/label-studio.xml", label_studio_views.label_studio_config_download,
         name="study_label_studio_config"),
    path("studies/<slug:slug>/preview/", rater_views.preview, name="study_preview"),
    path("studies/<slug:slug>/preview/<position:position>/", rater_views.preview, name="study_preview_item"),
    path("studies/<slug:slug>/", authoring_views.study_detail, name="study_detail"),
    path("studies/<slug:slug>/live/", authoring_views.study_live_config, name="study_live_config"),
    path("studies/<slug:slug>/live/panel/", authoring_views.study_live_panel, name="study_live_panel"),
    path("studies/<slug:slug>/checks/", check_views.checks_page, name="study_checks"),
    path("studies/<slug:slug>/checks/<str:action>/", check_views.checks_action, name="study_checks_action"),
    path("studies/<slug:slug>/practice/<str:action>/", practice_views.practice_action, name="study_practice_action"),
    path("studies/<slug:slug>/invites/new/", authoring_views.invite_create, name="invite_create"),
    path("studies/<slug:slug>/rater-settings/", authoring_views.study_rater_settings, name="study_rater_settings"),
    path("experiments/<slug:experiment>/collaborators/<str:action>/", workflow_views.experiment_collaborators,
         name="experiment_collaborators"),
    path("studies/<slug:slug>/edit/", workflow_views.study_edit, name="study_edit"),
    path("studies/<slug:slug>/builder/preview/", builder_views.builder_preview, name="builder_preview"),
    path("studies/<slug:slug>/builder/expected/", builder_views.builder_expected, name="builder_expected"),
    path("studies/<slug:slug>/duplicate/", workflow_views.study_duplicate, name="study_duplicate"),
    path("studies/<slug:slug>/delete/", workflow_views.study_delete, name="study_delete"),
    path("studies/<slug:slug>/review/", review_views.review_page, name="study_review"),
    path("studies/<slug:slug>/raters/<id:rater>/", review_views.rater_page, name="study_rater"),
    path("studies/<slug:slug>/raters/<id:rater>/decide/", review_views.rater_decide, name="study_rater_decide"),
    path("studies/<slug:slug>/decisions/<id:decision>/revert/", review_views.decision_revert,
         name="study_decision_revert"),
    path("studies/<slug:slug>/browse/", workflow_views.study_items_browser, name="study_items_browser"),
    path("studies/<slug:slug>/state/<str:action>/", workflow_views.study_state, name="study_state"),
    path("studies/<slug:slug>/<str:action>/", authoring_views.study_transition, name="study_transition"),
    path("studies/<slug:slug>/export.<str:export_format>", report_views.study_export, name="study_export"),
    path("studies/<slug:slug>/spans.<str:export_format>", span_views.span_export, name="study_span_export"),
    path("import/", corpus_views.dialogues_import, name="import"),
    path("corpora/", corpus_browser.corpus_list, name="corpus_list"),
    path("corpora/<slug:slug>/", corpus_browser.corpus_detail, name="corpus_detail"),
    path("corpora/<slug:slug>/conversations/<id:pk>/", corpus_browser.conversation_detail,
         name="corpus_conversation"),
]
