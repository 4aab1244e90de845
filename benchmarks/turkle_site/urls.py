"""Turkle's own site URLs (turkle_site/urls.py upstream): admin, the log-in views and the Turkle app."""
from django.contrib import admin
from django.urls import include, path

admin.autodiscover()

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("django.contrib.auth.urls")),
    path("", include("turkle.urls")),
]
