"""The REST API: every endpoint for the owner, a stranger, a read token and no token."""

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.tokens import token_create, token_revoke
from memories import services
from memories.hygiene import near_duplicates
from memories.models import Memory
from memories.transfer.export import export_count, exported_space
from tests.memories.conftest import CI_CACHE, DARK_MODE, DARK_MODE_AGAIN, DEEP_EXPORT, FONT, RAW, STANDUP
from tests.memories.stored import store

START = datetime(2025, 5, 1, 12, tzinfo=UTC)


class Api:
    """A client that sends one bearer token and JSON bodies."""

    def __init__(self, token: str | None):
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get(self, path: str, params=None):
        return self.client.get(f"/api/v1/{path}", params or {}, headers=self.headers)

    def send(self, method: str, path: str, body=None):
        send = getattr(self.client, method)
        return send(f"/api/v1/{path}", json.dumps(body), content_type="application/json", headers=self.headers)


@pytest.fixture
def api(owner_token) -> Api:
    return Api(owner_token)


@pytest.fixture
def reader(owner_read_token) -> Api:
    return Api(owner_read_token)


@pytest.fixture
def strangers(stranger_token) -> Api:
    return Api(stranger_token)


def test_write_then_read_a_memory(api, owner):
    response = api.send("post", "memories", {"content": "Postgres 18 is the target.", "tags": ["DB"]})
    assert response.status_code == 201
    body = response.json()
    assert body["content"] == "Postgres 18 is the target." and body["tags"] == ["db"]
    assert body["written_by"] == "owner laptop"  # the token's name when the body names no client
    assert response["Location"] == f"/api/v1/memories/{body['id']}"
    assert body.pop("duplicate") is False  # a write says whether its text was stored already
    assert api.get(f"memories/{body['id']}").json() == body


def test_the_list_is_newest_first_with_a_cursor_and_filters(api, owner):
    for i in range(5):
        services.memory_write(
            owner=owner, content=f"m{i}", tags=["even" if i % 2 == 0 else "odd"], created_at=START + timedelta(hours=i)
        )
    first = api.get("memories", {"limit": 2}).json()
    assert [m["content"] for m in first["memories"]] == ["m4", "m3"]
    second = api.get("memories", {"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [m["content"] for m in second["memories"]] == ["m2", "m1"]
    evens = api.get("memories", {"tags": "even", "created_after": (START + timedelta(hours=1)).isoformat()}).json()
    assert [m["content"] for m in evens["memories"]] == ["m4", "m2"] and evens["next_cursor"] is None


def test_search_finds_by_exact_words_and_by_meaning(api, owner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        services.memory_write(owner=owner, content="The build broke with error E_LINK_2291 in the linker step.")
        services.memory_write(owner=owner, content="We picked a bright blue colour for the pricing page.")
    exact = api.get("memories/search", {"query": "E_LINK_2291"}).json()["results"]
    assert exact[0]["content"].startswith("The build broke") and exact[0]["score"] > 0
    meaning = api.get("memories/search", {"query": "checkout screen design", "top_k": 1}).json()["results"]
    assert len(meaning) == 1 and "pricing page" in meaning[0]["content"]


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [result["id"] for result in response.json()["results"]]


def test_search_min_score_drops_weaker_results(api, owner, write_dated):
    now = timezone.now()
    write_dated(owner, (DARK_MODE, now), (FONT, now), (STANDUP, now))
    everything = api.get("memories/search", {"query": "dark mode"}).json()["results"]
    assert len(everything) == 3
    threshold = (everything[0]["score"] + everything[-1]["score"]) / 2
    kept = api.get("memories/search", {"query": "dark mode", "min_score": str(threshold)}).json()["results"]
    assert 0 < len(kept) < 3 and all(result["score"] >= threshold - 1e-4 for result in kept)  # scores are rounded
    assert [result["id"] for result in kept] == [result["id"] for result in everything[: len(kept)]]
    # 1.0 is the best candidate's fused score with no factor below 1 (written a moment ago, so decay off).
    perfect = api.get("memories/search", {"query": "dark mode", "min_score": "1", "half_life_days": "0"})
    assert ids(perfect) == [everything[0]["id"]]


def test_search_explains_scores_on_request(api, owner, write_dated):
    now = timezone.now()
    write_dated(owner, (DARK_MODE, now - timedelta(days=30)), ("Dark mode is off in the terminal.", now))
    plain = api.get("memories/search", {"query": "dark mode"}).json()["results"]
    explained = api.get("memories/search", {"query": "dark mode", "explain": "true"}).json()["results"]
    assert all("explanation" not in result for result in plain)
    assert [result["id"] for result in explained] == [result["id"] for result in plain]
    for result in explained:
        explanation = result["explanation"]
        assert set(explanation["signals"]) == {"vector", "keyword"}
        assert all(signal["rank"] in {1, 2} and signal["score"] > 0 for signal in explanation["signals"].values())
        assert 0.9 < explanation["recency"] <= 1 and explanation["fused"] > 0
        assert explanation["score"] == pytest.approx(result["score"], abs=1e-4)
    assert (
        "explanation" not in api.get("memories/search", {"query": "dark mode", "explain": "false"}).json()["results"][0]
    )


def test_search_half_life_days_sets_how_much_newer_memories_are_favoured(api, owner, import_dated):
    now = timezone.now()
    # Equal scores fall back to the higher id, so without decay the older memory (written second) wins.
    recent, old = import_dated(owner, (STANDUP, now - timedelta(days=1)), (STANDUP, now - timedelta(days=200)))
    query = {"query": "release checklist stand-up", "diversity": "0"}
    newest_first = [str(recent.public_id), str(old.public_id)]
    assert ids(api.get("memories/search", {**query, "half_life_days": "0"})) == newest_first[::-1]
    assert ids(api.get("memories/search", {**query, "half_life_days": "7"})) == newest_first
    scores = {
        days: api.get("memories/search", {**query, "half_life_days": days, "explain": "true"}).json()["results"]
        for days in ("0", "7", "365")
    }
    assert all("recency" not in result["explanation"] for result in scores["0"])
    gap = {days: results[0]["score"] - results[1]["score"] for days, results in scores.items()}
    assert gap["7"] > gap["365"] > gap["0"] == 0


def test_search_diversity_pushes_a_near_duplicate_down(api, owner, write_dated):
    now = timezone.now()
    dark, again, font, *_ = write_dated(
        owner, (DARK_MODE, now), (DARK_MODE_AGAIN, now), (FONT, now), (STANDUP, now), (CI_CACHE, now)
    )
    # Linked as near-duplicates they would show once; kept apart, both rank and MMR separates them.
    near_duplicates.memory_keep_apart(owner=owner, public_id=again.public_id)
    query = {"query": "what editor settings does the user prefer?"}
    by_relevance = ids(api.get("memories/search", {**query, "diversity": "0"}))
    diverse = ids(api.get("memories/search", {**query, "diversity": "1"}))
    assert by_relevance[:3] == [str(dark.public_id), str(again.public_id), str(font.public_id)]
    assert diverse[:2] == [str(dark.public_id), str(font.public_id)]
    assert diverse.index(str(again.public_id)) > 1


def test_update_and_delete(api, owner):
    memory = services.memory_write(owner=owner, content="old text")
    updated = api.send("patch", f"memories/{memory.public_id}", {"content": "new text", "tags": ["x"]}).json()
    assert updated["content"] == "new text" and updated["tags"] == ["x"]
    assert api.send("delete", f"memories/{memory.public_id}").status_code == 204
    assert api.get(f"memories/{memory.public_id}").status_code == 404


def test_compressed_memories_return_both_forms_and_raw_on_request(api, owner):
    memory = services.memory_write(owner=owner, content="y" * 450)
    store(memory.pk, content_optimized="FACT=y", compression_status="compressed")
    body = api.get(f"memories/{memory.public_id}").json()
    assert body["optimized"] is True and body["content"] == "FACT=y" and body["content_raw"] == "y" * 450
    raw = api.get(f"memories/{memory.public_id}", {"raw": "true"}).json()
    assert raw["content"] == "y" * 450 and "content_raw" not in raw


@pytest.mark.parametrize(
    ("method", "path", "params_or_body", "field"),
    [
        ("post", "memories", {"content": ""}, "content"),
        ("post", "memories", {"content": "x", "tags": "not-a-list"}, "tags"),
        ("post", "memories", {"content": "x", "owner": 7}, "owner"),
        ("post", "memories", ["content"], "body"),
        ("get", "memories", {"limit": "many"}, "limit"),
        ("get", "memories", {"limit": "500"}, "limit"),
        ("get", "memories", {"cursor": "garbage!"}, "cursor"),
        ("get", "memories", {"created_after": "soon"}, "created_after"),
        ("get", "memories/search", {}, "query"),
        ("get", "memories/search", {"query": "x", "top_k": "0"}, "top_k"),
        ("get", "memories", {"raw": "perhaps"}, "raw"),
        ("get", "memories/search", {"query": "x", "min_score": "high"}, "min_score"),
        ("get", "memories/search", {"query": "x", "min_score": "1.5"}, "min_score"),
        ("get", "memories/search", {"query": "x", "half_life_days": "a month"}, "half_life_days"),
        ("get", "memories/search", {"query": "x", "half_life_days": "-1"}, "half_life_days"),
        ("get", "memories/search", {"query": "x", "half_life_days": "40000"}, "half_life_days"),
        ("get", "memories/search", {"query": "x", "diversity": "0,5"}, "diversity"),
        ("get", "memories/search", {"query": "x", "diversity": "nan"}, "diversity"),
        ("get", "memories/search", {"query": "x", "explain": "yes please"}, "explain"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, method, path, params_or_body, field):
    response = api.get(path, params_or_body) if method == "get" else api.send(method, path, params_or_body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and error["field"] == field and error["message"].startswith(f"{field}:")


def test_search_options_are_checked_like_mcps(api):
    malformed = api.get("memories/search", {"query": "x", "diversity": "lots"}).json()["error"]
    assert malformed["message"] == "diversity: 'lots' is not a number."
    out_of_range = api.get("memories/search", {"query": "x", "half_life_days": "-3"}).json()["error"]
    assert out_of_range["message"] == "half_life_days: must be a number of days from 0 (no recency boost) to 36,500."


def test_malformed_json_is_a_clear_400(api):
    response = api.client.post("/api/v1/memories", "{oops", content_type="application/json", headers=api.headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"


@pytest.mark.parametrize("token", [None, "gno_" + "x" * 43, "not-a-token"])
def test_without_a_valid_token_every_endpoint_is_a_401(db, token):
    api = Api(token)
    for response in [
        api.get("memories"),
        api.get("memories/search", {"query": "x"}),
        api.get(f"memories/{uuid.uuid4()}"),
        api.get("export"),
        api.send("post", "memories", {"content": "x"}),
        api.send("post", "import", {}),
    ]:
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == (
            'Bearer resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp", '
            'scope="memories:read memories:write"' + (', error="invalid_token"' if token else "")
        )
        assert response.json()["error"]["code"] in {"not_authenticated", "authentication_failed"}
    assert not Memory.objects.exists()


def test_a_revoked_token_stops_working_at_once(owner):
    issued = token_create(owner=owner, name="soon revoked", scope="write")
    api = Api(issued.secret)
    assert api.get("memories").status_code == 200
    token_revoke(owner=owner, public_id=issued.token.public_id)
    assert api.get("memories").status_code == 401


def test_a_read_token_reads_but_cannot_write(reader, owner):
    memory = services.memory_write(owner=owner, content="readable")
    assert reader.get(f"memories/{memory.public_id}").status_code == 200
    assert reader.get("memories/search", {"query": "readable"}).status_code == 200
    assert reader.get("export").status_code == 200
    for response in [
        reader.send("post", "memories", {"content": "x"}),
        reader.send("patch", f"memories/{memory.public_id}", {"content": "changed"}),
        reader.send("delete", f"memories/{memory.public_id}"),
        reader.send("post", "import", {"format": "gnosem-export", "version": 1, "memories": []}),
    ]:
        assert response.status_code == 403
        assert "read-only" in response.json()["error"]["message"]
    assert Memory.objects.get(pk=memory.pk).content == "readable"


def test_a_stranger_cannot_see_or_touch_the_owners_memories(strangers, owner):
    memory = services.memory_write(owner=owner, content="owner only ERR_OWNER_77")
    path = f"memories/{memory.public_id}"
    assert strangers.get(path).status_code == 404
    assert strangers.send("patch", path, {"content": "mine now"}).status_code == 404
    assert strangers.send("delete", path).status_code == 404
    assert strangers.get("memories").json()["memories"] == []
    assert strangers.get("memories/search", {"query": "ERR_OWNER_77"}).json()["results"] == []
    assert json.loads(b"".join(strangers.get("export").streaming_content))["memories"] == []
    assert Memory.objects.get(pk=memory.pk).content == "owner only ERR_OWNER_77"


def test_export_then_import_through_the_api(api, owner, stranger, stranger_token):
    services.memory_write(owner=owner, content="travels", tags=["t"], created_at=START)
    document = json.loads(b"".join(api.get("export").streaming_content))
    imported = Api(stranger_token).send("post", "import", document)
    # Ids are unique per user: the owner having this one changes nothing for the stranger.
    notes = {
        "notes_imported": 0,
        "notes_duplicates": 0,
        "notes_new_ids": 0,
        "format": "gnosem",
        "records": 1,
        "skipped": [],
    }
    report = {"imported": 1, "duplicates": 0, "new_ids": 0, "compressed_dropped": 0, **notes}
    assert imported.status_code == 200 and imported.json() == report
    again = Api(stranger_token).send("post", "import", document)
    assert again.json() == {"imported": 0, "duplicates": 1, "new_ids": 0, "compressed_dropped": 0, **notes}
    copy = Memory.objects.get(space__personal_of=stranger)
    assert (copy.content, copy.tags, copy.created_at) == ("travels", ["t"], START)
    assert str(copy.public_id) == document["memories"][0]["id"]


def test_a_bad_import_changes_nothing(api, owner):
    document = {"format": "gnosem-export", "version": 1, "memories": [{"content": "ok", "created_at": "2025-01-01"}, 5]}
    response = api.send("post", "import", document)
    assert response.status_code == 400
    assert "memory #2" in response.json()["error"]["message"]
    assert not Memory.objects.exists()


def test_an_import_over_the_limit_is_refused_before_reading(api, owner, settings):
    settings.GNOSEM_IMPORT_MAX_BYTES = 1024
    items = [{"content": "z" * 200, "created_at": "2025-01-01"} for _ in range(10)]
    response = api.send("post", "import", {"format": "gnosem-export", "version": 1, "memories": items})
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"
    assert not Memory.objects.exists()


def test_an_import_bigger_than_djangos_in_memory_body_limit_works(api, owner):
    items = [{"content": f"{i} " + "w" * 3000, "created_at": "2025-01-01"} for i in range(1000)]  # ~3 MB
    response = api.send("post", "import", {"format": "gnosem-export", "version": 1, "memories": items})
    assert response.status_code == 200 and response.json()["imported"] == 1000
    assert export_count(exported_space(owner)) == 1000


def test_an_import_nested_thousands_deep_is_a_400(api, owner):
    response = api.client.post("/api/v1/import", DEEP_EXPORT, content_type="application/json", headers=api.headers)
    assert response.status_code == 400
    assert "is nested too deeply" in response.json()["error"]["message"]
    assert not Memory.objects.filter(space__personal_of=owner).exists()


def test_an_import_reports_the_compressed_forms_it_dropped(api, owner):
    item = {"content": RAW, "content_optimized": "Always run `sh -c` first.", "created_at": "2025-01-01"}
    response = api.send("post", "import", {"format": "gnosem-export", "version": 1, "memories": [item]})
    assert response.status_code == 200
    assert response.json() == {
        "imported": 1,
        "duplicates": 0,
        "new_ids": 0,
        "compressed_dropped": 1,
        "notes_imported": 0,
        "notes_duplicates": 0,
        "notes_new_ids": 0,
        "format": "gnosem",
        "records": 1,
        "skipped": [],
    }


def test_unknown_api_paths_and_methods_answer_json(api):
    missing = api.get("nothing-here")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert api.get("memories/not-a-uuid").status_code == 404
    wrong = api.send("put", "memories", {})
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"


def test_the_schema_and_the_docs_page_are_served_without_a_token(client, db):
    schema = client.get("/api/v1/schema", headers={"Accept": "application/json"})
    assert schema.status_code == 200
    paths = json.loads(schema.content)["paths"]
    assert {"/api/v1/memories", "/api/v1/memories/search", "/api/v1/memories/{public_id}"} <= set(paths)
    assert {"/api/v1/export", "/api/v1/import"} <= set(paths)
    search = {parameter["name"]: parameter for parameter in paths["/api/v1/memories/search"]["get"]["parameters"]}
    assert search["min_score"]["schema"] == {"type": "number", "minimum": 0, "maximum": 1, "default": 0}
    assert search["half_life_days"]["schema"] == {"type": "number", "minimum": 0, "maximum": 36_500}
    assert search["diversity"]["schema"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert search["explain"]["schema"]["type"] == "boolean"
    assert "default" in search["half_life_days"]["description"] and "0.7" in search["diversity"]["description"]
    result = json.loads(schema.content)["components"]["schemas"]["SearchResultOut"]
    assert result["properties"]["explanation"]["type"] == "object" and "explanation" not in result["required"]
    docs = client.get("/api/v1/docs").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in docs
    assert "cdn" not in docs.lower() and "https://" not in docs
    bundle = client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    assert bundle.status_code == 200
