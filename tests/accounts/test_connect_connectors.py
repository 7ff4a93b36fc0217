"""The Connect page's clients that take the URL alone (claude.ai and Claude Desktop custom
connectors, ChatGPT's developer mode, the MCP Inspector): their steps carry the public MCP URL,
and the page says when that URL cannot be reached by the hosted assistants."""

import pytest
from django.test import Client
from django.urls import reverse

from accounts.connect import connector_guides, reaches_connectors

PUBLIC_MCP_URL = "https://memory.example.com/mcp"


def guide_texts(page: str) -> dict[str, str]:
    """Each guide's section of the page, by its heading's id."""
    keys = [guide.key for guide in connector_guides(mcp_url=PUBLIC_MCP_URL)]
    starts = [page.index(f'id="{key}"') for key in keys]
    return {key: page[start:end] for key, start, end in zip(keys, starts, [*starts[1:], len(page)], strict=True)}


def test_each_url_only_client_gets_its_steps_with_the_url():
    guides = {guide.key: guide for guide in connector_guides(mcp_url=PUBLIC_MCP_URL)}
    assert list(guides) == ["claude-connector", "chatgpt-connector", "mcp-inspector"]
    assert all(any(PUBLIC_MCP_URL in step for step in guide.steps) for guide in guides.values())
    assert "Settings → Connectors → Add custom connector" in guides["claude-connector"].steps[0]
    assert "Developer mode" in guides["chatgpt-connector"].steps[0]
    assert "npx @modelcontextprotocol/inspector" in guides["mcp-inspector"].steps[0]


@pytest.mark.parametrize(
    ("url", "reachable"),
    [
        (PUBLIC_MCP_URL, True),
        ("https://memory.example.com:443/mcp", True),
        ("https://memory.example.com:8443/mcp", False),
        ("http://memory.example.com/mcp", False),
        ("http://127.0.0.1:8000/mcp", False),
    ],
)
def test_only_https_on_port_443_reaches_the_hosted_assistants(url, reachable):
    assert reaches_connectors(url) is reachable


def test_the_page_shows_the_steps_with_the_public_url(owner_client, settings):
    settings.GNOSEM_PUBLIC_URL = "https://memory.example.com"
    page = owner_client.get(reverse("connect")).content.decode()
    sections = guide_texts(page)
    assert "claude.ai and Claude Desktop" in sections["claude-connector"]
    assert "ChatGPT (developer mode)" in sections["chatgpt-connector"]
    assert "MCP Inspector" in sections["mcp-inspector"]
    assert all(PUBLIC_MCP_URL in section for section in sections.values())
    assert "https on port 443" in page
    assert 'id="connectors-unreachable"' not in page
    assert "http://testserver/mcp" not in page  # every client, token ones too, gets the public URL


def test_a_plain_http_server_is_told_the_hosted_assistants_cannot_reach_it(owner_client):
    page = owner_client.get(reverse("connect")).content.decode()
    assert 'id="connectors-unreachable"' in page
    assert all("http://testserver/mcp" in section for section in guide_texts(page).values())


def test_behind_the_https_proxy_the_page_shows_the_https_url(owner, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")  # GNOSEM_BEHIND_HTTPS_PROXY
    settings.ALLOWED_HOSTS = ["memory.example.com"]
    client = Client(headers={"Host": "memory.example.com", "X-Forwarded-Proto": "https"})
    client.force_login(owner)
    page = client.get(reverse("connect")).content.decode()
    assert 'id="connectors-unreachable"' not in page
    assert all(PUBLIC_MCP_URL in section for section in guide_texts(page).values())
