"""session_start: pinned memories, what is new since the client's last memory, the most relevant
ones, all within a token budget; over MCP (named in the server's instructions) and REST."""

from datetime import UTC, datetime, timedelta

from accounts.models import Role
from accounts.reach import reach_of
from memories import services
from memories.reading.session import session_start

START = datetime(2025, 6, 2, 9, tzinfo=UTC)


def _write(owner, content: str, hours: float, written_by: str, **fields):
    return services.memory_write(
        owner=owner, content=content, written_by=written_by, created_at=START + timedelta(hours=hours), **fields
    )


def test_pinned_first_then_what_others_wrote_since_the_clients_last_memory(owner):
    standing = _write(owner, "The user is a backend developer working in Go and PostgreSQL.", 0, "desktop")
    services.memory_update(owner=owner, public_id=standing.public_id, pinned=True)
    _write(owner, "Before: the API gateway is Kong.", 1, "cursor")
    _write(owner, "My own last note: refactor the billing module next.", 2, "claude code")
    newer = _write(owner, "The API gateway moved from Kong to Envoy.", 3, "cursor")

    context = session_start(owner=owner, client="claude code")

    assert context.memories == [standing, newer]
    assert context.since == START + timedelta(hours=2)
    assert context.text.splitlines() == [
        "Gnosem memory: 4 memories, 1 pinned.",
        "Pinned (standing context):",
        "1. The user is a backend developer working in Go and PostgreSQL.",
        "New since this client's last memory (2025-06-02 11:00 UTC):",
        "2. [2025-06-02, cursor] The API gateway moved from Kong to Envoy.",
    ]


def test_a_new_client_gets_the_newest_memories_and_a_query_adds_relevant_ones_once(owner, index):
    index(
        _write(owner, "Production deploys need two approvals.", 0, "cursor"),
        _write(owner, "The staging database listens on port 5433.", 1, "cursor"),
    )

    context = session_start(owner=owner, client="new assistant", query="what port does the staging database use?")

    assert context.since is None
    # Both relevant ones are listed above already: not again.
    assert context.sections == {"pinned": 0, "recent": 2, "teammates": 0, "relevant": 0}
    assert "Newest memories:" in context.text


def test_the_text_stays_within_the_budget_and_counts_what_was_left_out(owner):
    for number in range(40):
        _write(owner, f"Fact number {number}: " + "details " * 20, number, "cursor")

    context = session_start(owner=owner, client="claude", max_tokens=300)

    assert context.tokens <= 300
    assert context.left_out == 40 - len(context.memories) > 0
    assert context.text.endswith("more left out for the token budget; memory_search finds them.)")


def test_mcp_instructions_point_to_session_start_and_the_tool_answers(mcp, owner):
    if mcp.modern:
        announced = mcp.result("server/discover")
    else:
        announced = mcp.result("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert "session_start" in announced["instructions"]
    services.memory_write(owner=owner, content="The user's timezone is Europe/Berlin.", written_by="cursor")

    context = mcp.ok("session_start", {"max_tokens": 500})

    assert context["memories_total"] == 1
    assert context["text"].endswith("The user's timezone is Europe/Berlin.")
    mcp.ok("memory_write", {"content": "The user prefers metric units."})
    assert mcp.ok("session_start", {})["recent"] == 0  # nothing new since this client's last memory


def test_rest_context_for_the_owner_only(owner, owner_token, stranger_token):
    from tests.memories.api.test_api import Api

    services.memory_write(owner=owner, content="The user's timezone is Europe/Berlin.", written_by="cursor")

    mine = Api(owner_token).get("context", {"max_tokens": 200}).json()
    theirs = Api(stranger_token).get("context").json()

    assert mine["ids"] and mine["memories_total"] == 1
    assert theirs["ids"] == [] and theirs["memories_total"] == 0
    assert Api(owner_token).get("context", {"max_tokens": 50}).status_code == 400


def test_across_spaces_pinned_per_space_then_own_news_then_what_teammates_wrote(owner, team, team_member):
    editor = team_member("editor", Role.EDITOR)
    standing = _write(owner, "The user writes Go.", 0, "desktop")
    services.memory_update(owner=owner, public_id=standing.public_id, pinned=True)
    rule = _write(editor, "Deploys need two approvals.", 0, "cursor", space="Platform")
    services.memory_update(owner=editor, public_id=rule.public_id, pinned=True)
    _write(owner, "My last note from this client.", 1, "claude code")
    _write(editor, "Before: staging is on port 5432.", 0.5, "cursor", space="Platform")
    own = _write(owner, "Refactor billing next.", 2, "cursor", space="Platform")
    theirs = _write(editor, "Staging moved to port 6543.", 3, "cursor", space="Platform")

    context = session_start(owner=owner, client="claude code")

    assert context.memories == [standing, rule, own, theirs]
    assert (context.sections["pinned"], context.sections["recent"], context.sections["teammates"]) == (2, 1, 1)
    assert context.text.splitlines() == [
        "Gnosem memory: 6 memories, 2 pinned.",
        "Pinned in Personal:",
        "1. The user writes Go.",
        "Pinned in Platform:",
        "2. [Platform, by editor] Deploys need two approvals.",
        "New since this client's last memory (2025-06-02 10:00 UTC):",
        "3. [2025-06-02, cursor, Platform, by owner] Refactor billing next.",
        "Teammates wrote since this client's last memory (2025-06-02 10:00 UTC):",
        "4. [2025-06-02, cursor, Platform, by editor] Staging moved to port 6543.",
    ]
    editor_view = session_start(owner=editor, client="cursor")
    assert "The user writes Go." not in editor_view.text
    assert editor_view.as_dict()["teammates"] == 0  # nothing the owner wrote is newer than the editor's last
    narrowed = session_start(owner=reach_of(owner).narrowed("Personal"), client="claude code")
    assert narrowed.memories == [standing]
    assert narrowed.text.splitlines()[1] == "Pinned (standing context):"


def test_a_teammate_whose_account_is_gone_still_counts_as_a_teammate(owner, team, team_member):
    editor = team_member("editor", Role.EDITOR)
    kept = _write(editor, "The release train leaves on Tuesdays.", 1, "cursor", space="Platform")
    editor.delete()

    context = session_start(owner=owner, client="claude code")

    assert context.memories == [kept]
    assert "Teammates' newest memories:" in context.text
    assert "Platform, by a former member] The release train" in context.text
