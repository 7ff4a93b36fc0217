"""Times read from users (MCP and REST filters, the dashboard's from/to): impossible dates and
times outside the accepted range are clear validation errors, never a 500 or "Internal error"."""

import pytest
from django.urls import reverse

from memories import services
from memories.validation import clean_datetime
from tests.memories.conftest import IMPOSSIBLE_TIMES, OUT_OF_RANGE_TIMES
from tests.memories.mcp.conftest import LEGACY, MODERN, McpCaller


@pytest.mark.parametrize("version", [LEGACY, MODERN])
@pytest.mark.parametrize("tool", ["memory_list", "memory_search"])
@pytest.mark.parametrize("value", [*IMPOSSIBLE_TIMES, OUT_OF_RANGE_TIMES[0]])
def test_mcp_filters_with_impossible_or_out_of_range_times_are_tool_errors(client, owner_token, version, tool, value):
    arguments = {"created_before": value, **({"query": "anything"} if tool == "memory_search" else {})}
    message = McpCaller(client, owner_token, version).fails(tool, arguments)
    assert "created_before" in message and f"{value!r} is" in message
    assert "not a possible date" in message or "out of range" in message


@pytest.mark.parametrize("path", ["/api/v1/memories", "/api/v1/memories/search?query=x&"])
@pytest.mark.parametrize("value", [*IMPOSSIBLE_TIMES, OUT_OF_RANGE_TIMES[0], OUT_OF_RANGE_TIMES[1]])
def test_rest_filters_with_impossible_or_out_of_range_times_answer_400(client, owner_token, path, value):
    separator = "" if path.endswith("&") else "?"
    response = client.get(
        f"{path}{separator}created_after={value.replace('+', '%2B')}",
        headers={"Authorization": f"Bearer {owner_token}"},
    )
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["field"] == "created_after"
    assert "not a possible date" in error["message"] or "out of range" in error["message"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"from": "2024-02-30"}, "created_after: &#x27;2024-02-30&#x27; is not a possible date"),
        ({"to": "2024-02-30"}, "created_before: &#x27;2024-02-30&#x27; is not a possible date"),
        ({"from": "2024-06-01T25:00"}, "hour must be in 0..23"),
        ({"to": "9999-12-31"}, "to: &#x27;9999-12-31&#x27; is out of range"),
        ({"from": "0001-01-01T00:00:00+14:00"}, "is out of range"),
        ({"q": "anything", "to": "2024-02-30"}, "is not a possible date"),
    ],
)
def test_the_dashboard_explains_impossible_and_out_of_range_dates(owner_client, owner, params, expected):
    services.memory_write(owner=owner, content="still listed when the filter is fine")
    response = owner_client.get(reverse("home"), params)
    assert response.status_code == 200
    assert expected in response.content.decode()


def test_the_dashboard_accepts_the_last_day_of_the_range(owner_client, owner):
    services.memory_write(owner=owner, content="written today")
    page = owner_client.get(reverse("home"), {"to": "2999-12-31"}).content.decode()
    assert "written today" in page and 'class="error"' not in page


@pytest.mark.parametrize("path", ["/api/v1/memories", "/api/v1/memories/search?query=x&"])
def test_an_offset_python_accepts_but_postgresql_does_not_filters_like_its_utc_time(client, owner, owner_token, path):
    """Offsets up to 23:59 are valid ISO 8601 (and Python's); PostgreSQL refuses those over 15:59."""
    services.memory_write(owner=owner, content="x marks the spot", created_at=clean_datetime("t", "2024-06-02"))
    separator = "" if path.endswith("&") else "?"
    response = client.get(
        f"{path}{separator}created_after=2024-06-01T00:00:00-17:49", headers={"Authorization": f"Bearer {owner_token}"}
    )
    assert response.status_code == 200, response.content
    found = response.json()["memories" if "search" not in path else "results"]
    assert [memory["content"] for memory in found] == ["x marks the spot"]
    assert clean_datetime("t", "2024-06-01T17:07:39-17:49").utcoffset().total_seconds() == 0
