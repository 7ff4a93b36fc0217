"""Hostile client metadata at both doors it comes in by: a registration body (POST /oauth/register)
and a client metadata document the consent page fetches. Each value is refused with its RFC error
and a description that says what was wrong, nothing is stored, and the answer is never a 5xx."""

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import OAuthClient
from tests.accounts.oauth.document_server import DocumentServer, body_answer
from tests.accounts.oauth.grants import challenge_for
from tests.fuzzing import with_member

pytestmark = pytest.mark.django_db

REDIRECT_URI = "https://assistant.example/callback"


@dataclass(frozen=True)
class Hostile:
    """A valid document spoiled by `spoil`; the error each door answers and words of its description."""

    spoil: Callable[[dict], bytes]
    registration_error: str
    document_error: str
    says: str


def with_fields(**fields: object) -> Callable[[dict], bytes]:
    return lambda document: json.dumps({**document, **fields}).encode()


def with_value(value: bytes) -> Callable[[dict], bytes]:
    return lambda document: with_member(document, value)


HOSTILE = {
    "NUL in client_name": Hostile(
        with_fields(client_name="Assis\x00tant"), "invalid_client_metadata", "invalid_client_metadata", "U+0000"
    ),
    "NUL in a redirect URI": Hostile(
        with_fields(redirect_uris=[REDIRECT_URI + "\x00"]),
        "invalid_redirect_uri",
        "invalid_redirect_uri",
        "spaces or control characters",
    ),
    "a lone surrogate escape": Hostile(
        with_fields(client_name="\udc00"), "invalid_client_metadata", "invalid_client", "lone UTF-16 surrogate"
    ),
    "JSON nested 8,000 deep": Hostile(
        with_value(b"[" * 8_000 + b"]" * 8_000), "invalid_client_metadata", "invalid_client", "nested too deeply"
    ),
    "a 5,000-digit integer": Hostile(
        with_value(b"1" * 5_000), "invalid_client_metadata", "invalid_client", "more than 4,300 digits"
    ),
    "ESC in client_name": Hostile(
        with_fields(client_name="Assistant\x1b[2J"),
        "invalid_client_metadata",
        "invalid_client_metadata",
        "client_name must not contain control characters",
    ),
    "BEL in client_name": Hostile(
        with_fields(client_name="Assistant\x07"),
        "invalid_client_metadata",
        "invalid_client_metadata",
        "client_name must not contain control characters",
    ),
    "a right-to-left override in client_name": Hostile(
        with_fields(client_name="Assistant \u202egnp.exe"),
        "invalid_client_metadata",
        "invalid_client_metadata",
        "U+202E RIGHT-TO-LEFT OVERRIDE",
    ),
    "a zero-width space in client_name": Hostile(
        with_fields(client_name="Clau\u200bde"),
        "invalid_client_metadata",
        "invalid_client_metadata",
        "U+200B ZERO WIDTH SPACE",
    ),
}


@pytest.fixture
def server(settings) -> Iterator[DocumentServer]:
    settings.GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP = True
    server = DocumentServer()
    yield server
    server.close()


def consent_page(browser: Client, client_id: str):
    """The consent page a signed-in user is sent to for `client_id` (a metadata document's URL)."""
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": challenge_for("v" * 64),
        "code_challenge_method": "S256",
        "state": "s",
    }
    return browser.get(f"/oauth/authorize?{urlencode(query)}")


@pytest.mark.parametrize("hostile", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_registration_is_refused_with_its_error_and_registers_nothing(client, hostile):
    document = {"client_name": "Assistant", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
    body = hostile.spoil(document)
    assert len(body) <= 16 * 1024  # under the registration limit: the value itself is refused

    response = client.post(reverse("oauth_register"), data=body, content_type="application/json")

    assert response.status_code == 400, response.content[:500]
    answer = response.json()
    assert answer["error"] == hostile.registration_error
    assert hostile.says in answer["error_description"]
    assert not OAuthClient.objects.exists()


@pytest.mark.parametrize("hostile", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_metadata_document_is_an_error_page_naming_the_problem(owner_client, server, hostile):
    server.answer = body_answer(hostile.spoil(server.document(redirect_uris=[REDIRECT_URI])))

    response = consent_page(owner_client, server.url)

    assert response.status_code == 400, response.content[:500]
    page = response.content.decode()
    assert hostile.document_error in page
    assert hostile.says in page
    assert not OAuthClient.objects.exists()


def test_the_same_document_without_the_hostile_value_is_shown_for_consent(owner_client, server):
    server.answer = body_answer(json.dumps(server.document(redirect_uris=[REDIRECT_URI])).encode())

    response = consent_page(owner_client, server.url)

    assert response.status_code == 200
    assert "Assistant" in response.content.decode()


def test_a_client_name_is_one_line_with_white_space_runs_made_one_space(client):
    document = {"client_name": " My\tAssistant\n", "redirect_uris": [REDIRECT_URI]}

    response = client.post(reverse("oauth_register"), data=json.dumps(document), content_type="application/json")

    assert response.status_code == 201
    assert OAuthClient.objects.get().name == "My Assistant"
