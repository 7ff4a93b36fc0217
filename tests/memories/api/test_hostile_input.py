"""Hostile input over the REST API: each is a 4xx that says what was wrong, never a 500."""

import base64
import json

import pytest
from django.test import Client

from accounts.models import ApiToken
from accounts.tokens import token_create
from memories import services
from memories.models import Memory


@pytest.fixture
def api(owner_token) -> Client:
    return Client(headers={"Authorization": f"Bearer {owner_token}"})


@pytest.fixture
def memory(owner) -> Memory:
    return services.memory_write(owner=owner, content="The staging database is pg-staging-2.", tags=["db"])


def post(api: Client, path: str, body: bytes | str, method: str = "post"):
    return getattr(api, method)(f"/api/v1/{path}", body, content_type="application/json")


def assert_invalid(response, field: str, words: str) -> None:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("invalid", field)
    assert words in error["message"]


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("memories/search", {"query": "staging\x00database"}, "query"),
        ("memories/search", {"query": "staging", "written_by": "cli\x00"}, "written_by"),
        ("memories", {"written_by": "\x00"}, "written_by"),
        ("memories", {"written_by": "tab\there"}, "written_by"),
    ],
)
def test_nul_and_control_characters_in_query_parameters_are_a_400(api, memory, path, params, field):
    assert_invalid(api.get(f"/api/v1/{path}", params), field, "must not contain")


@pytest.mark.parametrize("written_by", ["a\x00b", "red\x1b[31m", "two\nlines", "bell\x07"])
def test_nul_and_control_characters_in_written_by_are_refused_on_write(api, memory, written_by):
    created = post(api, "memories", json.dumps({"content": "fine", "written_by": written_by}))
    updated = post(api, f"memories/{memory.public_id}", json.dumps({"written_by": written_by}), method="patch")

    assert_invalid(created, "written_by", "must not contain control characters")
    assert_invalid(updated, "written_by", "must not contain control characters")
    assert Memory.objects.get().written_by == memory.written_by


def test_a_token_name_with_control_characters_still_labels_writes(owner):
    issued = token_create(owner=owner, name="tab separated name", scope="write")
    # token_create refuses such a name; one written to the database another way is made fit instead.
    ApiToken.objects.filter(pk=issued.token.pk).update(name="tab\tseparated\x7fname\u200b")
    api = Client(headers={"Authorization": f"Bearer {issued.secret}"})

    response = post(api, "memories", json.dumps({"content": "Labelled by the token."}))

    assert response.status_code == 201, response.content
    assert response.json()["written_by"] == "tab separated name"


def assert_parse_error(response, words: str) -> None:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "parse_error"
    assert words in error["message"]


@pytest.mark.parametrize("depth", [100, 5_000, 200_000])
def test_a_body_nested_thousands_deep_is_a_parse_error(api, depth):
    body = '{"content": "x", "tags": ' + "[" * depth + "]" * depth + "}"

    assert_parse_error(post(api, "memories", body), "nested too deeply (more than 64 levels)")
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        b'{"content": "half \\ud800 a pair"}',
        b'{"content": "fine", "tags": ["\\udfff"]}',
        b'{"content": "fine", "written_by": "\\udbff\\u0041"}',
        b'{"\\ud800": "a key"}',
    ],
)
def test_an_escaped_lone_surrogate_is_a_parse_error_and_stores_nothing(api, body):
    assert_parse_error(post(api, "memories", body), "lone UTF-16 surrogate")
    assert not Memory.objects.exists()


def test_an_escaped_surrogate_pair_is_one_character(api):
    response = post(api, "memories", b'{"content": "ship it \\ud83d\\ude80"}')

    assert response.status_code == 201
    assert Memory.objects.get().content == "ship it \N{ROCKET}"


@pytest.mark.parametrize(
    "body",
    [
        '{"content": "half \ud800 a pair"}'.encode("utf-8", "surrogatepass"),
        b'{"content": "latin-1 caf\xe9"}',
        '{"content": "half \ud800 a pair"}'.encode("utf-16", "surrogatepass"),
        '{"content": "whole text"}'.encode("utf-16-le"),
        '{"content": "whole text"}'.encode("utf-32"),
    ],
)
def test_a_body_that_is_not_utf8_is_a_parse_error(api, body):
    response = post(api, "memories", body)

    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "parse_error"
    assert not Memory.objects.exists()


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(api, constant):
    assert_parse_error(post(api, "memories", f'{{"content": "x", "tags": [{constant}]}}'), "not a JSON number")


def test_a_body_over_the_parser_limit_is_a_413_and_stores_nothing(api, memory, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    body = json.dumps({"content": "x" * 2_000})

    for response in [post(api, "memories", body), post(api, f"memories/{memory.public_id}", body, method="patch")]:
        assert response.status_code == 413, response.content
        error = response.json()["error"]
        assert error["code"] == "too_large" and "1,000-byte limit" in error["message"]
    assert Memory.objects.get().content == memory.content


def test_a_body_within_the_limit_is_read(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000

    assert post(api, "memories", json.dumps({"content": "x" * 900})).status_code == 201


@pytest.mark.parametrize(
    "payload",
    [
        "[" * 5_000 + "]" * 5_000,
        '["2025-01-01T00:00:00+00:00", ' + "[" * 5_000 + "]" * 5_000 + "]",
        '["2025-01-01T00:00:00+00:00", 1.5]',
        '["2025-01-01T00:00:00\\u0000", 1]',
        '["2025-01-01T00:00:00+00:00", true]',
    ],
)
def test_a_crafted_cursor_is_a_400(api, memory, payload):
    cursor = base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")

    assert_invalid(api.get("/api/v1/memories", {"cursor": cursor}), "cursor", "is not a cursor")


def test_patch_with_nothing_to_change_is_a_400_and_changes_nothing(api, memory):
    for body in ["{}", '{"content": null, "tags": null, "written_by": null}']:
        response = post(api, f"memories/{memory.public_id}", body, method="patch")

        assert_invalid(
            response,
            "content",
            "nothing to change: give at least one of content, tags, written_by, pinned or supersedes.",
        )
    assert Memory.objects.get().updated_at == memory.updated_at


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete"])
@pytest.mark.parametrize("path", ["memories/null,null", "nothing-here", "memories/line%0Abreak", "%0A"])
def test_an_unknown_api_path_is_a_json_404_for_every_method(owner_token, method, path):
    # A token client sends no CSRF cookie: an unknown path must not answer Django's HTML 403 page.
    api = Client(enforce_csrf_checks=True, headers={"Authorization": f"Bearer {owner_token}"})
    body = {} if method == "get" else {"data": "{}", "content_type": "application/json"}

    response = getattr(api, method)(f"/api/v1/{path}", **body)

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
