"""Root URLs: each app brings its own."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("memories.urls")),
    path("admin/", admin.site.urls),
]
