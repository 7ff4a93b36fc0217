"""client_for_id: registered clients by id, and clients described by a metadata document, fetched
on first sight and kept in their row for as long as the document's caching headers say; fetches
are limited per user and address."""

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.test import RequestFactory
from django.utils import timezone

from accounts.models import OAuthClient
from accounts.oauth.client_metadata import OAuthClientError
from accounts.oauth.clients import client_for_id
from tests.accounts.oauth.document_server import DocumentServer, json_answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def server(settings) -> Iterator[DocumentServer]:
    settings.GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP = True
    server = DocumentServer()
    yield server
    server.close()


@pytest.fixture
def request_(owner):
    """The signed-in owner's request that asks for the client (a consent page's)."""
    request = RequestFactory().get("/oauth/authorize", REMOTE_ADDR="198.51.100.7")
    request.user = owner
    return request


def server_error(handler) -> None:
    handler.send_error(503)


def test_a_registered_client_is_found_by_its_id(request_):
    client = OAuthClient.objects.create(
        name="Claude",
        redirect_uris="https://claude.ai/api/mcp/auth_callback",
        client_secret="",
        hash_client_secret=False,
    )
    assert client_for_id(client.client_id, request=request_) == client


def test_an_unknown_client_id_is_refused_with_what_to_do(request_):
    with pytest.raises(OAuthClientError) as caught:
        client_for_id("no-such-client", request=request_)
    assert caught.value.error == "invalid_client"
    assert "Connect again from the app" in caught.value.description


def test_a_metadata_document_client_is_saved_on_first_sight(server, request_):
    server.answer = json_answer(server.document(), cache_control="max-age=600")
    before = timezone.now()
    client = client_for_id(server.url, request=request_)
    assert (client.client_id, client.name, client.redirect_uris) == (
        server.url,
        "Assistant",
        "https://assistant.example/callback",
    )
    assert client.registration_source == OAuthClient.RegistrationSource.CIMD
    assert client.client_type == OAuthClient.CLIENT_PUBLIC
    assert client.authorization_grant_type == OAuthClient.GRANT_AUTHORIZATION_CODE
    assert client.client_secret == ""
    assert before <= client.metadata_fetched_at <= timezone.now()
    assert client.cimd_expires_at - client.metadata_fetched_at == timedelta(seconds=600)


def test_a_kept_document_is_not_fetched_again_before_it_expires(server, request_):
    server.answer = json_answer(server.document())
    first = client_for_id(server.url, request=request_)
    second = client_for_id(server.url, request=request_)
    assert first.pk == second.pk
    assert len(server.requests) == 1


def test_an_expired_document_is_fetched_again_and_its_changes_kept(server, request_):
    server.answer = json_answer(server.document())
    client = client_for_id(server.url, request=request_)
    OAuthClient.objects.filter(pk=client.pk).update(cimd_expires_at=timezone.now() - timedelta(seconds=1))
    server.answer = json_answer(server.document(client_name="Assistant 2", redirect_uris=["https://new.example/cb"]))
    again = client_for_id(server.url, request=request_)
    assert again.pk == client.pk
    assert (again.name, again.redirect_uris) == ("Assistant 2", "https://new.example/cb")
    assert again.cimd_expires_at > timezone.now()
    assert len(server.requests) == 2


@pytest.mark.parametrize(("hours_since_fetch", "serves"), [(2, True), (25, False)])
def test_when_fetching_again_fails_a_copy_from_the_last_day_still_serves(server, hours_since_fetch, serves, request_):
    server.answer = json_answer(server.document())
    client = client_for_id(server.url, request=request_)
    OAuthClient.objects.filter(pk=client.pk).update(
        cimd_expires_at=timezone.now() - timedelta(minutes=1),
        metadata_fetched_at=timezone.now() - timedelta(hours=hours_since_fetch),
    )
    server.answer = server_error
    if serves:
        assert client_for_id(server.url, request=request_).name == "Assistant"
    else:
        with pytest.raises(OAuthClientError, match="answered HTTP 503"):
            client_for_id(server.url, request=request_)
    assert len(server.requests) == 2


def test_a_document_refused_on_first_sight_leaves_no_client_behind(server, request_):
    server.answer = json_answer(server.document(redirect_uris=["http://assistant.example/cb"]))
    with pytest.raises(OAuthClientError) as caught:
        client_for_id(server.url, request=request_)
    assert caught.value.error == "invalid_redirect_uri"
    assert not OAuthClient.objects.exists()


def test_a_client_the_operator_made_under_a_url_is_not_fetched(server, request_):
    made = OAuthClient.objects.create(
        client_id=server.url, name="Made by hand", redirect_uris="https://a.example/cb", client_secret=""
    )
    assert client_for_id(server.url, request=request_) == made
    assert server.requests == []


def test_without_the_setting_a_loopback_document_is_refused(server, settings, request_):
    settings.GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP = False
    with pytest.raises(OAuthClientError, match="must start with https://"):
        client_for_id(server.url, request=request_)
    assert server.requests == []


def test_fetches_are_limited_per_user_and_a_kept_copy_is_not_a_fetch(server, settings, request_):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "oauth_cimd_fetch": "2/h/user"}
    urls = [server.url.replace("assistant.json", f"assistant-{n}.json") for n in range(3)]

    def its_own_document(handler) -> None:
        url = f"http://127.0.0.1:{server.port}{handler.path}"
        json_answer(server.document(url), cache_control="max-age=600")(handler)

    server.answer = its_own_document

    client_for_id(urls[0], request=request_)
    client_for_id(urls[0], request=request_)  # kept: not fetched again
    client_for_id(urls[1], request=request_)
    with pytest.raises(OAuthClientError) as refused:
        client_for_id(urls[2], request=request_)

    assert len(server.requests) == 2
    assert refused.value.error == "temporarily_unavailable"
    assert "Too many applications" in refused.value.description
    assert not OAuthClient.objects.filter(client_id=urls[2]).exists()


def test_fetches_are_limited_to_30_an_hour_per_user_and_60_per_address_by_default(settings):
    assert settings.ACCOUNT_RATE_LIMITS["oauth_cimd_fetch"] == "30/h/user,60/h/ip"
