"""The OAuth URLs, mounted at the root: the discovery documents sit under /.well-known/, where
clients look for them (RFC 8414, RFC 9728), and the endpoints under /oauth/."""

from django.urls import path

from accounts.oauth import metadata, registration, views

urlpatterns = [
    path(
        ".well-known/oauth-protected-resource",
        metadata.protected_resource,
        name="oauth_protected_resource",
    ),
    path(
        ".well-known/oauth-protected-resource/mcp",
        metadata.protected_resource,
        name="oauth_protected_resource_mcp",
    ),
    path(
        ".well-known/oauth-authorization-server",
        metadata.authorization_server,
        name="oauth_authorization_server",
    ),
    path("oauth/authorize", views.authorize, name="oauth_authorize"),
    path("oauth/token", views.token, name="oauth_token"),
    path("oauth/revoke", views.revoke, name="oauth_revoke"),
    path("oauth/register", registration.register_view, name="oauth_register"),
]
