"""client_for_id: registered clients by id, and clients described by a metadata document, fetched
on first sight and kept in their row for as long as the document's caching headers say."""

from collections.abc import Iterator
from datetime import timedelta

import pytest
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


def server_error(handler) -> None:
    handler.send_error(503)


def test_a_registered_client_is_found_by_its_id():
    client = OAuthClient.objects.create(
        name="Claude",
        redirect_uris="https://claude.ai/api/mcp/auth_callback",
        client_secret="",
        hash_client_secret=False,
    )
    assert client_for_id(client.client_id) == client


def test_an_unknown_client_id_is_refused_with_what_to_do():
    with pytest.raises(OAuthClientError) as caught:
        client_for_id("no-such-client")
    assert caught.value.error == "invalid_client"
    assert "Connect again from the app" in caught.value.description


def test_a_metadata_document_client_is_saved_on_first_sight(server):
    server.answer = json_answer(server.document(), cache_control="max-age=600")
    before = timezone.now()
    client = client_for_id(server.url)
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


def test_a_kept_document_is_not_fetched_again_before_it_expires(server):
    server.answer = json_answer(server.document())
    first = client_for_id(server.url)
    second = client_for_id(server.url)
    assert first.pk == second.pk
    assert len(server.requests) == 1


def test_an_expired_document_is_fetched_again_and_its_changes_kept(server):
    server.answer = json_answer(server.document())
    client = client_for_id(server.url)
    OAuthClient.objects.filter(pk=client.pk).update(cimd_expires_at=timezone.now() - timedelta(seconds=1))
    server.answer = json_answer(server.document(client_name="Assistant 2", redirect_uris=["https://new.example/cb"]))
    again = client_for_id(server.url)
    assert again.pk == client.pk
    assert (again.name, again.redirect_uris) == ("Assistant 2", "https://new.example/cb")
    assert again.cimd_expires_at > timezone.now()
    assert len(server.requests) == 2


@pytest.mark.parametrize(("hours_since_fetch", "serves"), [(2, True), (25, False)])
def test_when_fetching_again_fails_a_copy_from_the_last_day_still_serves(server, hours_since_fetch, serves):
    server.answer = json_answer(server.document())
    client = client_for_id(server.url)
    OAuthClient.objects.filter(pk=client.pk).update(
        cimd_expires_at=timezone.now() - timedelta(minutes=1),
        metadata_fetched_at=timezone.now() - timedelta(hours=hours_since_fetch),
    )
    server.answer = server_error
    if serves:
        assert client_for_id(server.url).name == "Assistant"
    else:
        with pytest.raises(OAuthClientError, match="answered HTTP 503"):
            client_for_id(server.url)
    assert len(server.requests) == 2


def test_a_document_refused_on_first_sight_leaves_no_client_behind(server):
    server.answer = json_answer(server.document(redirect_uris=["http://assistant.example/cb"]))
    with pytest.raises(OAuthClientError) as caught:
        client_for_id(server.url)
    assert caught.value.error == "invalid_redirect_uri"
    assert not OAuthClient.objects.exists()


def test_a_client_the_operator_made_under_a_url_is_not_fetched(server):
    made = OAuthClient.objects.create(
        client_id=server.url, name="Made by hand", redirect_uris="https://a.example/cb", client_secret=""
    )
    assert client_for_id(server.url) == made
    assert server.requests == []


def test_without_the_setting_a_loopback_document_is_refused(server, settings):
    settings.GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP = False
    with pytest.raises(OAuthClientError, match="must start with https://"):
        client_for_id(server.url)
    assert server.requests == []
