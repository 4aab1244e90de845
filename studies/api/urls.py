from django.urls import path

import studies.converters  # noqa: F401 - registers <id:...>, <position:...>, <token:...>
from studies.api import check_views, corpus_views, place_views, practice_views, resource_views, views, workflow_views

app_name = "studies-api"
urlpatterns = [
    path("experiments/", views.ExperimentListApi.as_view(), name="experiment-list"),
    path("experiments/create/", views.ExperimentCreateApi.as_view(), name="experiment-create"),
    path("experiments/<slug:slug>/link/", views.ExperimentLinkApi.as_view(), name="experiment-link"),
    path("experiments/<slug:slug>/report/", views.ExperimentReportApi.as_view(), name="experiment-report"),
    path("studies/", views.StudyListApi.as_view(), name="study-list"),
    path("studies/create/", views.StudyCreateApi.as_view(), name="study-create"),
    path("studies/<slug:slug>/", resource_views.StudyApi.as_view(), name="study-detail"),  # GET, PATCH, DELETE
    path("studies/<slug:slug>/publish/", views.StudyPublishApi.as_view(), name="study-publish"),
    path("studies/<slug:slug>/settings/", workflow_views.StudySettingsApi.as_view(), name="study-settings"),
    path("studies/<slug:slug>/duplicate/", workflow_views.StudyDuplicateApi.as_view(), name="study-duplicate"),
    path("studies/<slug:slug>/delete/", workflow_views.StudyDeleteApi.as_view(), name="study-delete"),
    path("studies/<slug:slug>/pause/", workflow_views.StudyPauseApi.as_view(), name="study-pause"),
    path("studies/<slug:slug>/resume/", workflow_views.StudyResumeApi.as_view(), name="study-resume"),
    path("studies/<slug:slug>/reopen/", workflow_views.StudyReopenApi.as_view(), name="study-reopen"),
    path("studies/<slug:slug>/pay-plan/", workflow_views.StudyPayPlanApi.as_view(), name="study-pay-plan"),
    path("studies/<slug:slug>/browse/", workflow_views.StudyBrowserApi.as_view(), name="study-browse"),
    path("experiments/<slug:slug>/collaborators/", workflow_views.ExperimentCollaboratorsApi.as_view(),
         name="experiment-collaborators"),
    path("experiments/<slug:slug>/collaborators/remove/", workflow_views.ExperimentCollaboratorRemoveApi.as_view(),
         name="experiment-collaborators-remove"),
    path("studies/<slug:slug>/close/", views.StudyCloseApi.as_view(), name="study-close"),
    path("studies/<slug:slug>/invites/", views.InviteCreateApi.as_view(), name="study-invite-create"),
    path("studies/<slug:slug>/invites/<id:pk>/revoke/", place_views.InviteRevokeApi.as_view(), name="invite-revoke"),
    path("studies/<slug:slug>/assignments/", place_views.AssignmentListApi.as_view(), name="study-assignments"),
    path("studies/<slug:slug>/assignments/<id:pk>/free/", place_views.AssignmentFreeApi.as_view(),
         name="assignment-free"),
    path("studies/<slug:slug>/rater-settings/", views.StudyRaterSettingsApi.as_view(), name="study-rater-settings"),
    path("studies/<slug:slug>/progress/", views.StudyProgressApi.as_view(), name="study-progress"),
    path("studies/<slug:slug>/items/", views.StudyItemListApi.as_view(), name="study-items"),
    path("studies/<slug:slug>/items/build/", views.StudyItemsBuildApi.as_view(), name="study-items-build"),
    path("studies/<slug:slug>/checks/", check_views.CheckListApi.as_view(), name="study-checks"),
    path("studies/<slug:slug>/checks/create/", check_views.CheckCreateApi.as_view(), name="study-check-create"),
    path("studies/<slug:slug>/checks/settings/", check_views.ChecksSettingsApi.as_view(), name="study-checks-settings"),
    path("studies/<slug:slug>/checks/<id:pk>/delete/", check_views.CheckDeleteApi.as_view(), name="study-check-delete"),
    path("studies/<slug:slug>/practice/", practice_views.PracticeListApi.as_view(), name="study-practice"),
    path("studies/<slug:slug>/practice/results/", practice_views.PracticeResultsApi.as_view(),
         name="study-practice-results"),
    path("studies/<slug:slug>/ratings/", views.RatingsExportApi.as_view(), name="study-ratings"),
    path("studies/<slug:slug>/report/", views.StudyReportApi.as_view(), name="study-report"),
    path("imports/", corpus_views.ImportsApi.as_view(), name="import"),  # POST: import; GET: the background ones
    path("imports/<id:pk>/", views.ImportJobDetailApi.as_view(), name="import-job"),
    # Resources on their own paths (issue 39; the action routes above keep working)
    path("experiments/<slug:slug>/", resource_views.ExperimentDetailApi.as_view(), name="experiment-detail"),
    path("experiments/<slug:slug>/collaborators/<str:user>/", resource_views.CollaboratorDetailApi.as_view(),
         name="experiment-collaborator"),
    path("studies/<slug:slug>/invites/<id:pk>/", resource_views.InviteDetailApi.as_view(), name="invite-detail"),
    path("studies/<slug:slug>/checks/<id:pk>/", resource_views.CheckDetailApi.as_view(), name="study-check"),
    path("corpora/", corpus_views.CorpusListApi.as_view(), name="corpus-list"),
    path("corpora/<slug:slug>/", corpus_views.CorpusDetailApi.as_view(), name="corpus-detail"),
    path("corpora/<slug:slug>/systems/", corpus_views.CorpusSystemListApi.as_view(), name="corpus-systems"),
    path("systems/", corpus_views.SystemListApi.as_view(), name="system-list"),
]
