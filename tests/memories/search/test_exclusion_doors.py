"""Leaving things out through every door: MCP (the official SDK client), REST, the dashboard and
semantic_search; each shows how the query was read and refuses bad input with a clear message."""

import pytest
from django.db import transaction
from mcp import Client

from memories import services
from memories.notes import services as notes
from memories.search.notes import semantic_search
from tests.memories.api.test_api import Api
from tests.memories.mcp.conftest import run_client

MEMORIES = {
    "pg": "Postgres autovacuum is tuned for the invoices table.",
    "pg_two": "Postgres 16 runs the main cluster since March.",
    "mysql": "The analytics warehouse runs on MySQL 8.",
    "moved": "We moved the session store off Postgres to Redis last spring.",
}


@pytest.fixture
def api(owner_token) -> Api:
    return Api(owner_token)


@pytest.fixture
def stored(owner) -> dict[str, str]:
    """MEMORIES written and embedded for the owner: {key: public id}."""
    with transaction.atomic():
        written = {key: services.memory_write(owner=owner, content=text) for key, text in MEMORIES.items()}
        services.memories_index(memory_ids=[memory.pk for memory in written.values()])
    return {key: str(memory.public_id) for key, memory in written.items()}


def keys(stored: dict[str, str], ids: list[str]) -> set[str]:
    by_id = {public_id: key for key, public_id in stored.items()}
    return {by_id.get(public_id, "?") for public_id in ids}


@pytest.mark.django_db(transaction=True)
def test_the_sdk_client_leaves_out_with_exclude_and_with_negation(live_server, owner, owner_token, stored):
    async def search(client: Client) -> dict:
        seen = {}
        for name, arguments in {
            "exclude": {"query": "which databases do we run", "exclude": ["Postgres"]},
            "negation": {"query": "which databases do we run other than Postgres", "explain": True},
            "plain": {"query": "which databases do we run"},
            "bad": {"query": "databases", "exclude": [""]},
            "only negation": {"query": "not Postgres"},
        }.items():
            result = await client.call_tool("memory_search", arguments)
            seen[name] = (result.is_error, result.structured_content, result.content[0].text)
        return seen

    seen = run_client(live_server, owner_token, "auto", search)

    for name in ("exclude", "negation"):
        error, answer, _ = seen[name]
        assert not error
        assert keys(stored, [hit["id"] for hit in answer["results"]]) == {"mysql", "moved"}
    assert seen["exclude"][1]["query"] == {
        "searched": "which databases do we run",
        "excluded": ["Postgres"],
        "negations": [],
    }
    assert seen["negation"][1]["query"] == {
        "searched": "which databases do we run",
        "excluded": ["Postgres"],
        "negations": ["other than Postgres"],
    }
    assert "query" not in seen["plain"][1]
    assert {"pg", "pg_two"} <= keys(stored, [hit["id"] for hit in seen["plain"][1]["results"]])
    assert seen["bad"][0] and "exclude" in seen["bad"][2] and "empty item" in seen["bad"][2]
    assert seen["only negation"][0] and "only what to leave out" in seen["only negation"][2]


@pytest.mark.django_db
def test_rest_takes_exclude_comma_separated_or_repeated(api, stored):
    for params in ("exclude=Postgres", "exclude=Postgres,Oracle", "exclude=Postgres&exclude=Oracle"):
        response = api.get(f"memories/search?query=which+databases+do+we+run&{params}")
        assert response.status_code == 200, response.content
        answer = response.json()
        assert keys(stored, [hit["id"] for hit in answer["results"]]) == {"mysql", "moved"}
        assert "Postgres" in answer["query"]["excluded"]


@pytest.mark.django_db
def test_rest_reads_negation_and_explains_it(api, stored):
    response = api.get("memories/search", {"query": "databases except Postgres", "explain": "true"})
    answer = response.json()
    assert answer["query"]["negations"] == ["except Postgres"]
    moved = next(hit for hit in answer["results"] if hit["id"] == stored["moved"])
    assert moved["explanation"]["exclusion"]["read"] == "named in passing"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"query": "databases", "exclude": "x" * 101}, "longer than 100"),
        ({"query": "databases", "exclude": ",".join(f"t{number}" for number in range(11))}, "at most 10"),
        ({"query": "anything but Postgres"}, "only what to leave out"),
    ],
)
def test_rest_refuses_bad_exclusions_with_a_400(api, stored, params, message):
    response = api.get("memories/search", params)
    assert response.status_code == 400
    assert message in response.content.decode()


@pytest.mark.django_db
def test_an_empty_exclude_parameter_leaves_nothing_out(api, stored):
    response = api.get("memories/search", {"query": "which databases do we run", "exclude": ""})
    assert response.status_code == 200
    assert "query" not in response.json()
    assert {"pg", "pg_two"} <= keys(stored, [hit["id"] for hit in response.json()["results"]])


@pytest.mark.django_db
def test_the_dashboard_leaves_out_and_says_so(client, owner, stored):
    client.force_login(owner)
    page = client.get("/", {"q": "which databases do we run", "without": "Postgres"}).content.decode()
    assert "leaving out what is about Postgres" in page
    assert MEMORIES["mysql"] in page and MEMORIES["moved"] in page
    assert MEMORIES["pg"] not in page and MEMORIES["pg_two"] not in page
    refused = client.get("/", {"q": "not Postgres"})
    assert refused.status_code == 200 and "only what to leave out" in refused.content.decode()


@pytest.mark.django_db
def test_semantic_search_leaves_out_notes_tagged_or_titled_after_the_thing(owner, stored):
    runbook = notes.note_write(owner=owner, title="Postgres runbook", content="Restart the primary database first.")
    tagged = notes.note_write(owner=owner, title="Failover", content="Promote the database replica.", tags=["postgres"])
    mysql = notes.note_write(owner=owner, title="MySQL runbook", content="Restart the warehouse database first.")
    for note in (runbook, tagged, mysql):
        notes.note_index(note.pk)

    def found(**search) -> set[str]:
        hits = semantic_search(owner=owner, query="database runbook", top_k=20, **search)
        return {str((getattr(hit, "note", None) and hit.note.public_id) or hit.memory.public_id) for hit in hits}

    everything = found()
    assert {str(runbook.public_id), str(tagged.public_id), str(mysql.public_id)} <= everything
    left = found(exclude=["Postgres"])
    assert str(mysql.public_id) in left
    assert not {str(runbook.public_id), str(tagged.public_id), stored["pg"], stored["pg_two"]} & left


@pytest.mark.django_db
def test_a_stranger_leaving_things_out_sees_only_their_own(stranger_token, stored):
    response = Api(stranger_token).get("memories/search", {"query": "databases", "exclude": "MySQL"})
    assert response.status_code == 200
    assert response.json()["results"] == []
