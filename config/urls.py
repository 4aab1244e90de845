from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config.errors import api_not_found
from config.token_views import TokenObtainApi

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/auth/token/", TokenObtainApi.as_view(), name="api-token"),
    path("api/", include("studies.api.urls")),
    path("api/", include("metrics.api.urls")),
    path("api/crowd/", include("crowd.api.urls")),
    path("", include("studies.chat.urls")),  # before /r/<slug>/: the chat pages live under /r/a/<token>/
    path("r/", include("studies.rater_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),  # after every API route: the problem JSON 404, DEBUG or not
    path("", include("crowd.urls")),
    path("", include("metrics.urls")),
    path("", include("studies.urls")),
]

handler404 = "config.errors.page_not_found"
handler500 = "config.errors.server_error"
