from django.urls import path

from accounts import views

urlpatterns = [
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<uuid:public_id>/revoke", views.token_revoke_view, name="token_revoke"),
    path("tokens/applications/<uuid:public_id>/revoke", views.connection_revoke_view, name="connection_revoke"),
    path("connect/", views.connect, name="connect"),
    path("activity/", views.activity, name="activity"),
]
