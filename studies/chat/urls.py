"""The chat unit's rater pages (included under /r/ by config.urls) and researcher pages."""
from django.urls import path

import studies.converters  # noqa: F401 - registers <token:...>, <id:...>
from studies.chat import endpoint_views, selfchat_views, turn_question_views, views

app_name = "chat"
urlpatterns = [
    path("r/a/<token:token>/items/<position:position>/chat/", views.chat_page, name="page"),
    path("r/a/<token:token>/items/<position:position>/chat/turn/", views.chat_turn, name="turn"),
    path("r/a/<token:token>/items/<position:position>/chat/retry/", views.chat_retry, name="retry"),
    path("r/a/<token:token>/items/<position:position>/chat/end/", views.chat_end, name="end"),
    path("r/a/<token:token>/items/<position:position>/chat/state/", views.chat_state, name="state"),
    path("r/a/<token:token>/items/<position:position>/chat/questions/", turn_question_views.chat_questions,
         name="questions"),
    path("studies/<slug:slug>/chats.jsonl", views.transcripts_export, name="transcripts_export"),
    path("systems/endpoints/", endpoint_views.endpoint_list, name="endpoint_list"),
    path("systems/endpoints/new/", endpoint_views.endpoint_edit, name="endpoint_new"),
    path("systems/endpoints/<id:pk>/", endpoint_views.endpoint_edit, name="endpoint_edit"),
    path("systems/endpoints/<id:pk>/try/", endpoint_views.endpoint_try, name="endpoint_try"),
    path("selfchats/", selfchat_views.selfchat_list, name="selfchat_list"),
    path("selfchats/<id:pk>/", selfchat_views.selfchat_detail, name="selfchat_detail"),
    path("selfchats/<id:pk>/rerun/", selfchat_views.selfchat_rerun, name="selfchat_rerun"),
    path("selfchats/<id:pk>/cancel/", selfchat_views.selfchat_cancel, name="selfchat_cancel"),
    path("selfchats/<id:pk>/conversations/<int:index>/", selfchat_views.selfchat_conversation,
         name="selfchat_conversation"),
]
