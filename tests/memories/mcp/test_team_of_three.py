"""A team of three end to end: the owner, an editor and a viewer of one team space, each with two
assistants connected to a live Gnosem through the official MCP SDK client, one with a `gno_` token
and one with an OAuth connection granted through the authorization-code flow with PKCE (consent
page, code, token endpoint). What one writes to the team space the others find by meaning; what
one writes to a personal space nobody else sees by any read; the viewer writes nothing there; and
once the owner removes the editor, the editor's assistants see nothing of the team on their very
next call, in sessions opened before the removal."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client
from mcp import Client as SdkClient

from accounts.spaces import member_remove, space_invitation_accept, space_invitation_create, team_space_create
from accounts.tokens import token_create
from memories.models import Memory
from tests.accounts.oauth.grants import Authorization, consent, exchange, redirect_params, registered_client
from tests.memories.mcp.conftest import sdk_client
from tests.memories.stored import matching, texts

TEAM = "Platform"
PEOPLE = ("olga", "emil", "vera")  # the owner, an editor and a viewer
# What each writes to the team space, and how a teammate asks for it in other words.
TEAM_MEMORIES = {
    "olga": (
        "Production deploys need two approvals and only happen Monday to Thursday.",
        "When are we allowed to ship a release to prod?",
    ),
    "emil": (
        "The billing service generates invoices every night at 02:00 UTC from a cron job.",
        "At what time of day do customer bills get created?",
    ),
}
# What each writes to their own space, and how someone else would ask for it.
PERSONAL_MEMORIES = {
    "olga": ("My dentist appointment is on Friday at 9 in the morning.", "When is the visit to the dentist?"),
    "emil": ("I am allergic to penicillin.", "Which medicine must I never take?"),
    "vera": ("My partner's birthday is on the twelfth of March.", "When is the anniversary of my partner's birth?"),
}
INDEXING_TIMEOUT_S = 60


@dataclass
class Person:
    """One member of the team, with the secrets of their two assistants."""

    name: str
    user: Any
    token: str  # a gno_ token over the SDK client
    connection: str  # an OAuth access token over the SDK client

    @property
    def assistants(self) -> dict[str, str]:
        return {f"{self.name}'s token": self.token, f"{self.name}'s connection": self.connection}


def oauth_access_token(user, resource: str) -> str:
    """The access token of a connection `user` grants an assistant: authorization request with
    PKCE, consent, code, exchange."""
    browser = Client()
    browser.force_login(user)
    authorization = Authorization(registered_client(f"{user.username}'s assistant"), resource=resource)
    code = redirect_params(consent(browser, authorization))["code"]
    response = exchange(authorization, code, resource=resource)
    assert response.status_code == 200, response.content
    return response.json()["access_token"]


@pytest.fixture
def team(live_server, settings) -> dict[str, Person]:
    """Olga owns the team space, Emil edits it, Vera reads it; each connects two assistants. The
    public URL is the live server's, so that the access tokens are issued for its MCP endpoint."""
    settings.GNOSEM_PUBLIC_URL = live_server.url
    users = {name: get_user_model().objects.create_user(name, f"{name}@example.com") for name in PEOPLE}
    space = team_space_create(user=users["olga"], name=TEAM)
    for name, role in (("emil", "editor"), ("vera", "viewer")):
        invitation = space_invitation_create(user=users["olga"], space_id=space.public_id, role=role)
        space_invitation_accept(user=users[name], secret=invitation.secret)
    resource = f"{live_server.url}/mcp"
    return {
        name: Person(
            name,
            user,
            token_create(owner=user, name=f"{name}'s laptop", scope="write").secret,
            oauth_access_token(user, resource),
        )
        for name, user in users.items()
    }


def in_sessions(live_server, secrets: dict[str, str], script: Callable[[dict[str, SdkClient]], Awaitable[Any]]) -> Any:
    """Run `script` with an SDK client for each secret (by label), all connected at once; the
    token ones in the 2025 protocol, the connections in 2026's."""

    async def main() -> Any:
        clients: dict[str, SdkClient] = {}

        async def connect(labels: list[str]) -> Any:
            if not labels:
                return await script(clients)
            mode = "legacy" if secrets[labels[0]].startswith("gno_") else "auto"
            async with sdk_client(live_server, secrets[labels[0]], mode) as client:
                clients[labels[0]] = client
                return await connect(labels[1:])

        return await connect(list(secrets))

    return anyio.run(main)


async def structured(client: SdkClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def refusal(client: SdkClient, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text


async def written_and_indexed(client: SdkClient, arguments: dict[str, Any]) -> str:
    """Write a memory and wait until the worker has embedded it; its id."""
    memory_id = (await structured(client, "memory_write", arguments))["id"]
    with anyio.fail_after(INDEXING_TIMEOUT_S):
        while (await structured(client, "memory_get", {"id": memory_id}))["indexing_status"] != "indexed":
            await anyio.sleep(0.2)
    return memory_id


async def everything_seen(client: SdkClient, memory_id: str, query: str) -> dict[str, Any]:
    """What one assistant sees of a memory: whether search, list and get show it, and the count."""
    found = (await structured(client, "memory_search", {"query": query, "top_k": 10}))["results"]
    listed = (await structured(client, "memory_list", {"limit": 100}))["memories"]
    got = await client.call_tool("memory_get", {"id": memory_id})
    return {
        "search": [hit["id"] for hit in found],
        "list": [memory["id"] for memory in listed],
        "get": not got.is_error,
        "count": (await structured(client, "memory_count", {}))["count"],
    }


def test_a_team_of_three_shares_the_team_space_and_nothing_else(live_server, team):
    olga, emil, vera = team["olga"], team["emil"], team["vera"]

    async def write(clients: dict[str, SdkClient]) -> dict[str, str]:
        ids = {
            "olga": await written_and_indexed(
                clients["olga's token"], {"content": TEAM_MEMORIES["olga"][0], "space": TEAM}
            ),
            "emil": await written_and_indexed(
                clients["emil's connection"], {"content": TEAM_MEMORIES["emil"][0], "space": TEAM}
            ),
        }
        for name, label in (("olga", "olga's connection"), ("emil", "emil's token"), ("vera", "vera's token")):
            ids[f"{name}'s own"] = await written_and_indexed(clients[label], {"content": PERSONAL_MEMORIES[name][0]})
        return ids

    ids = in_sessions(live_server, olga.assistants | emil.assistants | vera.assistants, write)

    async def read(clients: dict[str, SdkClient]) -> dict[tuple[str, str], Any]:
        seen: dict[tuple[str, str], Any] = {}
        for label, client in clients.items():
            for name, (_, query) in TEAM_MEMORIES.items():
                found = await structured(client, "memory_search", {"query": query, "top_k": 3})
                seen[label, name] = [hit["id"] for hit in found["results"]]
            for name, (_, query) in PERSONAL_MEMORIES.items():
                seen[label, f"{name}'s own"] = await everything_seen(client, ids[f"{name}'s own"], query)
        return seen

    seen = in_sessions(live_server, olga.assistants | emil.assistants | vera.assistants, read)

    for person in team.values():
        for label in person.assistants:
            for name in TEAM_MEMORIES:  # each finds the team's memories by meaning, first
                assert seen[label, name][:1] == [ids[name]], (label, name)
            for name in PERSONAL_MEMORIES:  # each sees their own memories, and nobody else's
                own = name == person.name
                view = seen[label, f"{name}'s own"]
                assert (ids[f"{name}'s own"] in view["search"]) is own, (label, name)
                assert (ids[f"{name}'s own"] in view["list"]) is own, (label, name)
                assert view["get"] is own, (label, name)
                assert view["count"] == len(TEAM_MEMORIES) + 1, label


def test_the_viewer_cannot_write_to_the_team_space(live_server, team):
    olga, vera = team["olga"], team["vera"]

    async def olga_writes(clients: dict[str, SdkClient]) -> str:
        return await written_and_indexed(clients["olga's token"], {"content": TEAM_MEMORIES["olga"][0], "space": TEAM})

    memory_id = in_sessions(live_server, olga.assistants, olga_writes)
    shared = Memory.objects.get(public_id=memory_id)

    async def vera_tries(clients: dict[str, SdkClient]) -> list[str]:
        refusals = []
        for client in clients.values():
            refusals += [
                await refusal(client, "memory_write", {"content": "Deploys happen any day now.", "space": TEAM}),
                await refusal(client, "memory_update", {"id": memory_id, "content": "Deploys happen any day now."}),
                await refusal(client, "memory_delete", {"id": memory_id}),
            ]
        return refusals

    refusals = in_sessions(live_server, vera.assistants, vera_tries)

    assert len(refusals) == 6 and all("not write to it (viewer)" in text for text in refusals), refusals
    assert texts(space=shared.space) == [shared.content]


def test_the_removed_editor_sees_nothing_of_the_team_on_the_very_next_call(live_server, team):
    olga, emil = team["olga"], team["emil"]
    content, query = TEAM_MEMORIES["olga"]

    async def olga_writes(clients: dict[str, SdkClient]) -> str:
        return await written_and_indexed(clients["olga's token"], {"content": content, "space": TEAM})

    memory_id = in_sessions(live_server, olga.assistants, olga_writes)

    def olga_removes_emil() -> None:
        space_id = Memory.objects.get(public_id=memory_id).space.public_id
        try:
            member_remove(user=olga.user, space_id=space_id, member="emil")
        finally:
            connections.close_all()  # this thread's connection, before the test database is flushed

    async def before_and_after(clients: dict[str, SdkClient]) -> tuple[dict[str, Any], dict[str, Any]]:
        before = {label: await everything_seen(client, memory_id, query) for label, client in clients.items()}
        await anyio.to_thread.run_sync(olga_removes_emil)
        after = {}
        for label, client in clients.items():
            after[label] = await everything_seen(client, memory_id, query)
            after[label]["spaces"] = [
                space["name"] for space in (await structured(client, "spaces_list", {}))["spaces"]
            ]
            after[label]["write"] = await refusal(client, "memory_write", {"content": "Still here?", "space": TEAM})
        return before, after

    before, after = in_sessions(live_server, emil.assistants, before_and_after)

    for label in emil.assistants:
        assert memory_id in before[label]["search"] and before[label]["get"], label
        assert after[label]["search"] == after[label]["list"] == [], label
        assert after[label]["get"] is False and after[label]["count"] == 0, label
        assert after[label]["spaces"] == ["Personal"], label
        assert "No space" in after[label]["write"], label
    assert matching(lambda content: content == "Still here?") == []
