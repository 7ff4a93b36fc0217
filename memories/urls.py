from django.urls import path

from memories import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
]
