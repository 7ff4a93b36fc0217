"""The official MCP SDK's OAuth client (`OAuthClientProvider`) against a live Gnosem, the whole way a
claude.ai, Claude Desktop or ChatGPT connector goes, given only the server's URL: an MCP request
without a token is answered 401, the client discovers the protected resource and the authorization
server, registers (Dynamic Client Registration, or a Client ID Metadata Document on an HTTPS host of
its own), sends the person to the consent page (Debian's Chromium through Playwright signs in and
presses Allow), receives the code on a loopback redirect, exchanges it, calls the tools in each
connection mode, refreshes the expired access token, and is refused once the person revokes the
application on the Tokens page.

It prints the connection's round trips and time (pytest -s); docs/benchmarks.md records them.
GNOSEM_SCREENSHOTS=1 saves the consent page and the connected applications under bench/screenshots/.
"""

import os
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import httpx2
import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.db import connections
from django.utils import timezone
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from oauth2_provider.models import get_access_token_model
from pydantic import AnyUrl

from accounts.models import OAuthClient
from memories.models import Memory
from tests.accounts.oauth.conftest import ClientMetadataHost, LoopbackCallback
from tests.browser.test_browser_flow import CHROMIUM, SCREENSHOTS
from tests.memories.mcp.test_tools import READ_TOOLS

EMAIL = "ada@example.com"
PASSWORD = "a long consent passphrase 77"
CLIENT_NAME = "Pytest Assistant"
MODES = ["legacy", "auto", "2026-07-28"]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium: apt-get install -y chromium")


class MemoryTokenStorage:
    """What a client keeps between connections: its registration and its tokens."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class Trip:
    """One request and its answer, by the SDK's client ("sdk") or the browser ("browser")."""

    by: str
    method: str
    path: str
    status: int | None
    at: float
    grant_type: str | None = None

    def __str__(self) -> str:
        grant = f" ({self.grant_type})" if self.grant_type else ""
        return f"{self.method} {self.path}{grant} {self.status or ''}".rstrip()


@dataclass
class Trips:
    """Every HTTP round trip of the flow, in order."""

    log: list[Trip] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def add(self, by: str, method: str, url: str, status: int | None, grant_type: str | None = None) -> None:
        self.log.append(Trip(by, method, urlsplit(url).path, status, time.monotonic() - self.started, grant_type))

    def sdk(self) -> list[Trip]:
        return [trip for trip in self.log if trip.by == "sdk"]


class CountingTransport(httpx2.AsyncBaseTransport):
    """The SDK client's transport, recording each round trip it makes."""

    def __init__(self, trips: Trips) -> None:
        self.trips = trips
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        grant_type = None
        if request.url.path == "/oauth/token":
            grant_type = dict(parse_qsl(request.content.decode())).get("grant_type")
        self.trips.add("sdk", request.method, str(request.url), response.status_code, grant_type)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class Declined(Exception):
    """The person did not approve the client again."""


@dataclass
class Person:
    """The person at the browser: asked to approve the client, they sign in if they must, check
    the consent page and press Allow (after ticking "Read only" if `read_only`)."""

    page: Any
    base_url: str
    callback: LoopbackCallback
    shot: Callable[[str], Awaitable[None]]
    read_only: bool = False
    declines: bool = False
    asked: int = 0

    async def approve(self, authorization_url: str) -> None:
        self.asked += 1
        assert authorization_url.startswith(f"{self.base_url}/oauth/authorize?")
        if self.declines:
            raise Declined
        await self.page.goto(authorization_url)
        if await self.page.locator("input[name=login]").count():
            await self.page.fill("input[name=login]", EMAIL)
            await self.page.fill("input[name=password]", PASSWORD)
            await self.page.get_by_role("button", name="Sign In").click()
        allow = self.page.get_by_role("button", name="Allow")
        await allow.wait_for()
        consent = await self.page.inner_text("body")
        assert CLIENT_NAME in consent and "127.0.0.1" in consent  # who asks, and where the code goes
        await self.shot("consent")
        if self.read_only:
            await self.page.check("input[name=read_only]")
        await allow.click()
        await self.page.wait_for_url(lambda url: url.startswith(self.callback.redirect_uri))


@asynccontextmanager
async def chromium():
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        yield await context.new_page()
        await browser.close()


def screenshots(page: Any, prefix: str) -> Callable[[str], Awaitable[None]]:
    enabled = os.environ.get("GNOSEM_SCREENSHOTS", "") not in ("", "0")
    if enabled:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    async def shot(name: str) -> None:
        if enabled:
            await page.screenshot(path=str(SCREENSHOTS / f"{prefix}-{name}.png"), full_page=True)

    return shot


@pytest.fixture
def person_account(live_server, monkeypatch, settings):
    """A person with a confirmed address on a live server over http on loopback (which the setting
    allows). The test's ORM calls run between awaits on the test's own event loop (Playwright's
    and the SDK's), which Django allows only when told."""
    settings.GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP = True
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    user = get_user_model().objects.create_user(username="ada", email=EMAIL, password=PASSWORD)
    EmailAddress.objects.create(user=user, email=EMAIL, verified=True, primary=True)
    return user


@dataclass
class Connector:
    """One MCP client application with the SDK's OAuth provider: its registration and tokens
    persist across the connections it opens."""

    base_url: str
    provider: OAuthClientProvider
    storage: MemoryTokenStorage
    http: httpx2.AsyncClient

    async def session(self, mode: str, script: Callable[[Client], Awaitable[Any]]) -> Any:
        transport = streamable_http_client(f"{self.base_url}/mcp", http_client=self.http)
        async with Client(transport, mode=mode) as client:
            return await script(client)


@asynccontextmanager
async def connector(base_url: str, person: Person, trips: Trips, client_metadata_url: str | None = None):
    storage = MemoryTokenStorage()
    provider = OAuthClientProvider(
        server_url=f"{base_url}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name=CLIENT_NAME,
            redirect_uris=[AnyUrl(person.callback.redirect_uri)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=person.approve,
        callback_handler=person.callback.authorization_response,
        client_metadata_url=client_metadata_url,
    )
    # Generous timeout: the first write embeds on commit, loading the model in the server.
    async with httpx2.AsyncClient(auth=provider, transport=CountingTransport(trips), timeout=120) as http:
        yield Connector(base_url, provider, storage, http)


def write_and_search(code: str) -> Callable[[Client], Awaitable[dict[str, Any]]]:
    async def script(client: Client) -> dict[str, Any]:
        written = await client.call_tool("memory_write", {"content": f"The on-call rotation code is {code}."})
        assert not written.is_error, written.content
        found = await client.call_tool("memory_search", {"query": code})
        return {
            "version": client.protocol_version,
            "written": written.structured_content,
            "found": [hit["id"] for hit in found.structured_content["results"]],
        }

    return script


async def tools_and_a_write(client: Client) -> tuple[set[str], bool]:
    tools = {tool.name for tool in (await client.list_tools()).tools}
    refused = await client.call_tool("memory_write", {"content": "should not be stored"})
    return tools, refused.is_error


async def revoke_on_the_tokens_page(page: Any, base_url: str, shot: Callable[[str], Awaitable[None]]) -> None:
    await page.goto(f"{base_url}/tokens/")
    assert CLIENT_NAME in await page.inner_text("body")
    await shot("connected-applications")
    page.on("dialog", lambda dialog: dialog.accept())
    revoke = page.locator("form[action^='/tokens/applications/'] button", has_text="Revoke")
    assert await revoke.count() == 1
    await revoke.click()
    await page.wait_for_load_state()


def leaf_errors(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaf_errors(inner)]
    return [exc]


def report(registration: str, trips: Trips, connected_at: int, elapsed: float) -> None:
    """Print the connection (the first request up to the first one answered with a token) and
    the whole test's round trips."""
    connection = trips.log[: connected_at + 1]
    sdk = [trip for trip in connection if trip.by == "sdk"]
    browser = [trip for trip in connection if trip.by == "browser"]
    print(
        f"\n[oauth {registration}] connection: {len(connection)} round trips "
        f"({len(sdk)} by the SDK client, {len(browser)} by the browser) in {connection[-1].at:.2f} s"
    )
    print(f"[oauth {registration}]   SDK: " + ", ".join(map(str, sdk)))
    print(f"[oauth {registration}]   browser: " + ", ".join(map(str, browser)))
    print(
        f"[oauth {registration}] whole test: {len(trips.sdk())} SDK round trips, "
        f"{len(trips.log) - len(trips.sdk())} browser requests, {elapsed:.2f} s"
    )


@pytest.mark.parametrize("registration", ["dcr", "cimd"])
def test_the_sdk_client_connects_by_url_alone_refreshes_and_is_refused_once_revoked(
    live_server,
    person_account,
    loopback_callback: LoopbackCallback,
    client_metadata_host: ClientMetadataHost,
    registration,
):
    base_url, trips = live_server.url, Trips()
    metadata_url = None
    if registration == "cimd":
        metadata_url = client_metadata_host.url
        client_metadata_host.document = {
            "client_id": metadata_url,
            "client_name": CLIENT_NAME,
            "redirect_uris": [loopback_callback.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with chromium() as page:
            page.on("response", lambda answer: trips.add("browser", answer.request.method, answer.url, answer.status))
            shot = screenshots(page, f"oauth-{registration}")
            person = Person(page, base_url, loopback_callback, shot)
            async with connector(base_url, person, trips, metadata_url) as app:
                trips.started = time.monotonic()
                for mode in MODES:
                    seen[mode] = await app.session(mode, write_and_search(f"ERR_ONCALL_{mode.upper()}"))
                    if mode == MODES[0]:
                        seen["connected_at"] = next(
                            i for i, trip in enumerate(trips.log) if trip.path == "/mcp" and trip.status == 200
                        )
                seen["asked"] = person.asked

                # An hour later, by both clocks: the access token has expired, the refresh token has not.
                before = app.storage.tokens
                get_access_token_model().objects.update(expires=timezone.now() - timedelta(seconds=1))
                app.provider.context.token_expiry_time = time.time() - 1
                seen["after_refresh"] = await app.session("auto", write_and_search("ERR_AFTER_REFRESH"))
                after = app.storage.tokens
                seen["rotated"] = (
                    after.access_token != before.access_token,
                    after.refresh_token != before.refresh_token,
                )
                async with httpx2.AsyncClient(timeout=30) as raw:
                    old = await raw.post(
                        f"{base_url}/mcp", json=INITIALIZE, headers={"Authorization": f"Bearer {before.access_token}"}
                    )
                    seen["old_access_token"] = old.status_code

                await revoke_on_the_tokens_page(page, base_url, shot)
                person.declines = True
                trips_before = len(trips.log)
                with pytest.raises(BaseException) as refused:
                    await app.session("auto", write_and_search("ERR_AFTER_REVOKE"))
                seen["after_revoke"] = [str(trip) for trip in trips.log[trips_before:] if trip.by == "sdk"]
                seen["declined"] = any(isinstance(error, Declined) for error in leaf_errors(refused.value))
                async with httpx2.AsyncClient(timeout=30) as raw:
                    revoked = await raw.post(
                        f"{base_url}/mcp", json=INITIALIZE, headers={"Authorization": f"Bearer {after.access_token}"}
                    )
                    seen["revoked_challenge"] = (revoked.status_code, revoked.headers.get("WWW-Authenticate", ""))
                    refresh = await raw.post(
                        f"{base_url}/oauth/token",
                        data={
                            "grant_type": "refresh_token",
                            "refresh_token": after.refresh_token,
                            "client_id": app.storage.client_info.client_id,
                        },
                    )
                    seen["revoked_refresh"] = (refresh.status_code, refresh.json().get("error"))
        # The ORM calls above ran in the event loop's context, which Django gives connections of
        # its own: closed here, or they outlive the test and hold the test database open.
        connections.close_all()

    started = time.monotonic()
    anyio.run(main)
    elapsed = time.monotonic() - started
    report(registration, trips, seen["connected_at"], elapsed)

    sdk = [str(trip) for trip in trips.sdk()]
    # Discovery from the 401, then registration, then the code exchanged for tokens.
    assert sdk[:3] == [
        "POST /mcp 401",
        "GET /.well-known/oauth-protected-resource/mcp 200",
        "GET /.well-known/oauth-authorization-server 200",
    ]
    if registration == "dcr":
        assert sdk[3] == "POST /oauth/register 201"
        client = OAuthClient.objects.get(name=CLIENT_NAME)
        assert client.registration_source == OAuthClient.RegistrationSource.DCR
    else:
        assert "POST /oauth/register" not in " ".join(sdk)
        assert client_metadata_host.fetches >= 1
        client = OAuthClient.objects.get(client_id=client_metadata_host.url)
        assert client.registration_source == OAuthClient.RegistrationSource.CIMD
    assert sdk.count("POST /oauth/token (authorization_code) 200") == 1
    assert seen["asked"] == 1  # one consent for the three connections

    for mode, version in zip(MODES, ["2025-11-25", "2026-07-28", "2026-07-28"], strict=True):
        assert seen[mode]["version"] == version
        assert seen[mode]["found"][:1] == [seen[mode]["written"]["id"]]
    # A 2025 connection knows only the token: the connection is named after the client.
    assert seen["legacy"]["written"]["written_by"] == CLIENT_NAME
    assert Memory.objects.filter(space__personal_of=person_account).count() == 4

    assert "POST /oauth/token (refresh_token) 200" in sdk
    assert seen["rotated"] == (True, True)
    assert seen["after_refresh"]["found"][:1] == [seen["after_refresh"]["written"]["id"]]
    assert seen["old_access_token"] == 401

    # Revoked: the next request is refused, the client goes back to discovery and to the person.
    assert seen["after_revoke"][0] == "POST /mcp 401" and seen["declined"]
    status, challenge = seen["revoked_challenge"]
    assert status == 401 and 'error="invalid_token"' in challenge and "resource_metadata=" in challenge
    assert seen["revoked_refresh"] == (400, "invalid_grant")
    assert Memory.objects.filter(space__personal_of=person_account).count() == 4


def test_read_only_on_the_consent_page_grants_only_the_read_tools(live_server, person_account, loopback_callback):
    base_url, trips = live_server.url, Trips()

    async def main() -> tuple[set[str], bool, str | None]:
        async with chromium() as page:
            person = Person(page, base_url, loopback_callback, screenshots(page, "oauth-read-only"), read_only=True)
            async with connector(base_url, person, trips) as app:
                tools, refused = await app.session("auto", tools_and_a_write)
                return tools, refused, app.storage.tokens.scope

    tools, refused, scope = anyio.run(main)

    assert tools == READ_TOOLS
    assert refused
    assert "memories:write" not in scope.split() and "memories:read" in scope.split()
    assert not Memory.objects.exists()
