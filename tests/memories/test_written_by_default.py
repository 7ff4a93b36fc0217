"""A memory written without `written_by` gets one default, by one rule, over MCP and REST: the name
the client gave itself when the request carries one (MCP 2026-07-28 `clientInfo`), else the name of
the API token in use; omitted and null are the same."""

import json

import pytest
from django.test import Client

from accounts.models import ApiToken
from accounts.tokens import token_create
from tests.memories.mcp.conftest import CLIENT_NAME, LEGACY, MODERN, McpCaller

TOKEN_NAME = "laptop\tclaude   code\x1b"
CLEANED = "laptop claude code"


@pytest.fixture
def token(owner) -> str:
    issued = token_create(owner=owner, name=CLEANED, scope="write")
    # token_create refuses such a name; one written to the database another way is made fit to label.
    ApiToken.objects.filter(pk=issued.token.pk).update(name=TOKEN_NAME)
    return issued.secret


def rest_write(token: str, body: dict) -> str:
    response = Client().post(
        "/api/v1/memories",
        json.dumps(body),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 201, response.content
    return response.json()["written_by"]


def mcp_write(client: Client, token: str, version: str, arguments: dict) -> str:
    return McpCaller(client, token, version).ok("memory_write", arguments)["written_by"]


@pytest.mark.parametrize("body", [{}, {"written_by": None}], ids=["omitted", "null"])
def test_rest_and_a_2025_mcp_client_default_to_the_same_cleaned_token_name(client, token, body):
    assert rest_write(token, {"content": "Use pnpm, not npm.", **body}) == CLEANED
    assert mcp_write(client, token, LEGACY, {"content": "Use pnpm, not yarn.", **body}) == CLEANED


def test_a_2026_mcp_client_is_labelled_with_the_name_it_sends(client, token):
    assert mcp_write(client, token, MODERN, {"content": "Use pnpm, not npm."}) == CLIENT_NAME


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_a_given_written_by_wins_everywhere_even_empty(client, token, version):
    for given in ["cursor", ""]:
        # A text of its own for each write: the same text again would return the memory already written.
        assert rest_write(token, {"content": f"Use pnpm, not npm ({given!r} over REST).", "written_by": given}) == given
        assert (
            mcp_write(client, token, version, {"content": f"Use pnpm ({given!r} over MCP).", "written_by": given})
            == given
        )
