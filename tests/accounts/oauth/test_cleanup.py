"""The hourly OAuth cleanup: expired codes and tokens are deleted, a connection left without a live
refresh token ends (and says so in the activity log), and registrations nobody uses any more go,
including those whose connections all ended long ago (Claude registers anew on every connection)."""

from datetime import timedelta

from django.test import Client
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from accounts.models import ActivityAction, ActivityEvent, ApiToken, OAuthClient
from accounts.oauth.connections import connection_revoke, connections_lapsed_end
from accounts.oauth.registration import oauth_clients_unused_delete
from accounts.tasks import oauth_cleanup_task
from tests.accounts.oauth.grants import granted_tokens, refresh

AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()


def unused_for(days: int, client: OAuthClient | None = None) -> None:
    """Move every access token's expiry (and the client's last use) `days` into the past."""
    AccessToken.objects.update(expires=timezone.now() - timedelta(days=days))
    if client is not None:
        OAuthClient.objects.filter(pk=client.pk).update(last_used_at=timezone.now() - timedelta(days=days))


def test_a_connection_unused_past_the_refresh_lifetime_ends_and_is_logged(owner, assistant, settings):
    tokens = granted_tokens(owner, assistant)
    unused_for(settings.GNOSEM_OAUTH_REFRESH_TOKEN_DAYS + 1)

    assert connections_lapsed_end() == 1

    connection = ApiToken.objects.get(oauth_client=assistant)
    assert connection.revoked_at is not None
    assert not RefreshToken.objects.exists() and not AccessToken.objects.exists()
    assert ActivityEvent.objects.filter(owner=owner, action=ActivityAction.APP_DISCONNECTED).count() == 1
    assert refresh(assistant, tokens["refresh_token"]).json()["error"] == "invalid_grant"
    assert connections_lapsed_end() == 0  # ended once


def test_a_live_refresh_token_without_a_family_does_not_keep_lapsed_connections_alive(owner, assistant, settings):
    granted_tokens(owner, assistant)
    unused_for(settings.GNOSEM_OAUTH_REFRESH_TOKEN_DAYS + 1)
    # One the toolkit made outside a grant (its admin, say): no family, and valid for a while yet.
    orphan_access = AccessToken.objects.create(
        user=owner, application=assistant, token="made-by-hand", expires=timezone.now() + timedelta(hours=1)
    )
    RefreshToken.objects.create(user=owner, application=assistant, token="made-by-hand", access_token=orphan_access)

    assert connections_lapsed_end() == 1


def test_a_connection_used_recently_lives_on_with_its_tokens(owner, assistant, settings):
    tokens = granted_tokens(owner, assistant)
    unused_for(settings.GNOSEM_OAUTH_REFRESH_TOKEN_DAYS - 1)  # its access token expired, its refresh token not

    assert connections_lapsed_end() == 0

    assert ApiToken.objects.get(oauth_client=assistant).revoked_at is None
    assert refresh(assistant, tokens["refresh_token"]).status_code == 200


def test_a_registration_whose_connections_ended_long_ago_is_deleted_with_them(owner, assistant, settings):
    granted_tokens(owner, assistant)
    connection_revoke(owner=owner, public_id=ApiToken.objects.get(oauth_client=assistant).public_id)
    unused_for(settings.GNOSEM_OAUTH_REFRESH_TOKEN_DAYS + 2, assistant)

    assert oauth_clients_unused_delete() == 1

    assert not OAuthClient.objects.exists() and not ApiToken.objects.filter(oauth_client__isnull=False).exists()
    # The activity log keeps what happened, without the connection.
    assert ActivityEvent.objects.filter(owner=owner, action=ActivityAction.APP_CONNECTED, token=None).count() == 1


def test_a_registration_with_an_active_connection_is_kept_however_old_its_last_use(owner, assistant, settings):
    granted_tokens(owner, assistant)
    unused_for(settings.GNOSEM_OAUTH_REFRESH_TOKEN_DAYS + 2, assistant)

    assert oauth_clients_unused_delete() == 0


def test_a_registration_ended_recently_is_kept(owner, assistant):
    granted_tokens(owner, assistant)
    connection_revoke(owner=owner, public_id=ApiToken.objects.get(oauth_client=assistant).public_id)

    assert oauth_clients_unused_delete() == 0


def test_the_hourly_task_ends_lapsed_connections_before_deleting_their_clients(owner, assistant, settings):
    tokens = granted_tokens(owner, assistant)
    unused_for(settings.GNOSEM_OAUTH_REFRESH_TOKEN_DAYS + 2, assistant)

    assert oauth_cleanup_task.call_local() == 1

    assert not OAuthClient.objects.exists()
    response = Client().get("/api/v1/memories", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert response.status_code == 401
