from django.urls import path

from memories import views
from memories.mcp.views import mcp_endpoint

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("mcp", mcp_endpoint, name="mcp"),
]
