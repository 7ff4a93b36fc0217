"""Root URLs: each app brings its own."""

from django.contrib import admin
from django.contrib.staticfiles.views import serve as serve_static
from django.urls import include, path, re_path

urlpatterns = [
    path("", include("memories.urls")),
    path("", include("accounts.urls")),
    path("", include("accounts.oauth.urls")),
    path("accounts/", include("allauth.urls")),
    path("api/v1/", include("memories.api.urls")),
    path("admin/", admin.site.urls),
    # The stylesheet, script and API docs assets, served by Django itself so that one process
    # needs nothing in front of it; they are few and small. A proxy may serve STATIC_ROOT instead.
    re_path(r"^static/(?P<path>.*)$", serve_static, {"insecure": True}),
]
