"""Dynamic Client Registration (RFC 7591) at POST /oauth/register: what it registers, every way it
refuses (nothing created then), its rate limit, and the cleanup of registrations never used."""

import json
import uuid
from datetime import datetime, timedelta

import pytest
from django.contrib.auth.hashers import check_password
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import ApiToken, OAuthClient, TokenScope
from accounts.oauth.registration import oauth_clients_unused_delete
from accounts.tasks import oauth_cleanup_task

pytestmark = pytest.mark.django_db

CLAUDE = {
    "client_name": "Claude",
    "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
    "token_endpoint_auth_method": "none",
}


def register(client: Client, body: object, **extra):
    data = body if isinstance(body, bytes | str) else json.dumps(body)
    return client.post(reverse("oauth_register"), data=data, content_type="application/json", **extra)


def test_a_public_client_is_registered_and_told_its_id(client):
    response = register(client, {**CLAUDE, "logo_uri": "https://claude.ai/logo.png", "scope": "memories:read"})
    assert response.status_code == 201
    assert response["Cache-Control"] == "no-store"
    answer = response.json()
    registered = OAuthClient.objects.get()
    assert answer == {
        "client_id": registered.client_id,
        "client_id_issued_at": int(registered.created.timestamp()),
        **CLAUDE,
    }
    assert registered.name == "Claude"
    assert registered.redirect_uris == "https://claude.ai/api/mcp/auth_callback"
    assert registered.registration_source == OAuthClient.RegistrationSource.DCR
    assert registered.client_type == OAuthClient.CLIENT_PUBLIC
    assert registered.client_secret == ""


def test_missing_optional_metadata_takes_defaults(client):
    response = register(client, {"redirect_uris": ["http://127.0.0.1:33418/callback", "http://localhost/cb"]})
    assert response.status_code == 201
    answer = response.json()
    assert answer["client_name"] == "127.0.0.1"  # the host it returns to
    assert answer["grant_types"] == ["authorization_code", "refresh_token"]
    assert answer["response_types"] == ["code"]
    assert answer["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in answer


@pytest.mark.parametrize("method", ["client_secret_post", "client_secret_basic"])
def test_a_client_that_asks_for_a_secret_gets_one_shown_once_and_stored_hashed(client, method):
    """claude.ai's connector registers with client_secret_post."""
    response = register(client, {**CLAUDE, "token_endpoint_auth_method": method})
    assert response.status_code == 201
    answer = response.json()
    assert answer["token_endpoint_auth_method"] == method
    assert answer["client_secret_expires_at"] == 0
    registered = OAuthClient.objects.get(client_id=answer["client_id"])
    assert registered.client_type == OAuthClient.CLIENT_CONFIDENTIAL
    assert registered.client_secret != answer["client_secret"]
    assert check_password(answer["client_secret"], registered.client_secret)


@pytest.mark.parametrize(
    ("body", "error", "reason"),
    [
        (b"{not json", "invalid_client_metadata", "must be a JSON object"),
        (b"\xff\xfe", "invalid_client_metadata", "must be a JSON object"),
        ([CLAUDE], "invalid_client_metadata", "must be a JSON object"),
        ({**CLAUDE, "redirect_uris": None}, "invalid_client_metadata", "redirect_uris is required"),
        ({**CLAUDE, "redirect_uris": []}, "invalid_redirect_uri", "redirect_uris is empty"),
        ({**CLAUDE, "redirect_uris": ["http://claude.ai/cb"]}, "invalid_redirect_uri", "use an https URL"),
        ({**CLAUDE, "redirect_uris": ["https://claude.ai/cb#x"]}, "invalid_redirect_uri", "without a fragment"),
        ({**CLAUDE, "redirect_uris": ["myapp://callback"]}, "invalid_redirect_uri", "use an https URL"),
        (
            {**CLAUDE, "redirect_uris": [f"https://claude.ai/{n}" for n in range(11)]},
            "invalid_redirect_uri",
            "more than 10",
        ),
        ({**CLAUDE, "grant_types": ["implicit"]}, "invalid_client_metadata", "grant_types 'implicit' not supported"),
        ({**CLAUDE, "grant_types": ["refresh_token"]}, "invalid_client_metadata", "must include authorization_code"),
        ({**CLAUDE, "response_types": ["token"]}, "invalid_client_metadata", "response_types 'token'"),
        (
            {**CLAUDE, "token_endpoint_auth_method": "private_key_jwt"},
            "invalid_client_metadata",
            "use none or client_secret_post or client_secret_basic",
        ),
        ({**CLAUDE, "client_name": "x" * 101}, "invalid_client_metadata", "longer than 100 characters"),
        ({**CLAUDE, "client_name": ["Claude"]}, "invalid_client_metadata", "client_name must be a string"),
    ],
)
def test_bad_metadata_is_refused_with_its_error_and_nothing_is_created(client, body, error, reason):
    response = register(client, {k: v for k, v in body.items() if v is not None} if isinstance(body, dict) else body)
    assert response.status_code == 400
    assert response.json()["error"] == error
    assert reason in response.json()["error_description"]
    assert not OAuthClient.objects.exists()


def test_a_body_over_16_kib_is_refused(client):
    response = register(client, {**CLAUDE, "client_uri": "https://claude.ai/" + "a" * 16 * 1024})
    assert response.status_code == 413
    assert response.json()["error_description"] == "The registration request is over 16 KiB."
    assert not OAuthClient.objects.exists()


def test_registration_takes_posts_only(client):
    assert client.get(reverse("oauth_register")).status_code == 405


def test_a_browser_client_may_register_from_another_origin(client):
    preflight = client.options(reverse("oauth_register"), headers={"Origin": "http://localhost:6274"})
    assert preflight.status_code == 204
    assert preflight["Access-Control-Allow-Origin"] == "*"
    response = register(client, CLAUDE, headers={"Origin": "http://localhost:6274"})
    assert response.status_code == 201
    assert response["Access-Control-Allow-Origin"] == "*"


def test_a_registration_flood_is_answered_429_with_when_to_retry(client, settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "oauth_register": "3/h/ip"}
    assert [register(client, CLAUDE).status_code for _ in range(3)] == [201, 201, 201]
    refused = register(client, CLAUDE)
    assert refused.status_code == 429
    assert refused["Retry-After"] == "3600"
    assert refused.json()["error_description"] == (
        "Too many client registrations from this address. Try again in 3600 seconds."
    )
    assert OAuthClient.objects.count() == 3
    # Counted per address: another one still registers.
    assert register(client, CLAUDE, REMOTE_ADDR="203.0.113.9").status_code == 201


def test_failed_attempts_count_towards_the_limit(client, settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "oauth_register": "2/5m/ip,10/d/ip"}
    assert register(client, b"{").status_code == 400
    assert register(client, b"{").status_code == 400
    refused = register(client, CLAUDE)
    assert (refused.status_code, refused["Retry-After"]) == (429, "86400")  # the longest window


def test_registration_is_limited_to_20_an_hour_per_address_by_default(settings):
    assert settings.ACCOUNT_RATE_LIMITS["oauth_register"] == "20/h/ip"


def _client(source: str, *, hours_old: float, used: bool = False) -> OAuthClient:
    client = OAuthClient.objects.create(
        name=f"{source} {hours_old}h{' used' if used else ''}",
        redirect_uris="https://claude.ai/api/mcp/auth_callback",
        registration_source=source,
        client_secret="",
        hash_client_secret=False,
        last_used_at=timezone.now() if used else None,
    )
    OAuthClient.objects.filter(pk=client.pk).update(created=timezone.now() - timedelta(hours=hours_old))
    return client


def test_the_cleanup_deletes_only_registrations_never_used_after_a_day(owner):
    dcr, cimd, manual = (OAuthClient.RegistrationSource.DCR, OAuthClient.RegistrationSource.CIMD, "manual")
    unused_old = [_client(dcr, hours_old=25), _client(cimd, hours_old=30)]
    kept = [
        _client(dcr, hours_old=23),
        _client(dcr, hours_old=48, used=True),
        _client(manual, hours_old=48),
        _client(dcr, hours_old=48),  # connected, whatever last_used_at says
    ]
    ApiToken.objects.create(
        owner=owner, name="Claude", scope=TokenScope.WRITE, oauth_client=kept[-1], oauth_token_family=uuid.uuid4()
    )
    assert oauth_clients_unused_delete() == 2
    assert set(OAuthClient.objects.values_list("pk", flat=True)) == {client.pk for client in kept}
    assert not OAuthClient.objects.filter(pk__in=[client.pk for client in unused_old]).exists()


def test_the_cleanup_waits_as_many_hours_as_configured(settings):
    settings.GNOSEM_OAUTH_UNUSED_CLIENT_HOURS = 72
    _client(OAuthClient.RegistrationSource.DCR, hours_old=48)
    assert oauth_clients_unused_delete() == 0
    settings.GNOSEM_OAUTH_UNUSED_CLIENT_HOURS = 24
    assert oauth_clients_unused_delete() == 1


def test_the_cleanup_runs_every_hour():
    task = oauth_cleanup_task.task_class()
    hours = [datetime(2026, 12, 1, hour, 17) for hour in range(24)]
    assert all(task.validate_datetime(moment) for moment in hours)
    assert not task.validate_datetime(datetime(2026, 12, 1, 3, 18))
    _client(OAuthClient.RegistrationSource.DCR, hours_old=25)
    assert oauth_cleanup_task.call_local() == 1
