"""Quotas per user: memories and notes, characters and estimated tokens of everything stored (earlier
versions, compressed forms, notes); refused writes, edits and imports on every door, the last slot
under concurrency, sign-ups' defaults, usage and its breakdown on the dashboard and at /api/v1/usage."""

import json
import threading

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.urls import reverse

from gnosem.errors import QuotaExceeded
from memories import services
from memories.limits.quotas import Allowance, Stored, quota_usage, token_estimate
from memories.models import Memory, MemoryRevision, Note, Quota
from memories.notes import services as notes
from memories.transfer.document import FORMAT, VERSION
from memories.transfer.importing import import_memories
from tests.memories.conftest import GOOD, RAW
from tests.memories.mcp.conftest import LEGACY, McpCaller

PASSWORD = "correct horse battery staple 42"


def api(token: str, method: str, path: str, body=None):
    client, headers = Client(), {"Authorization": f"Bearer {token}"}
    if method == "get":
        return client.get(f"/api/v1/{path}", headers=headers)
    return getattr(client, method)(
        f"/api/v1/{path}", json.dumps(body), content_type="application/json", headers=headers
    )


def export_of(*contents: str) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "memories": [
            {"content": content, "created_at": f"2025-01-{day:02d}T10:00:00+00:00"}
            for day, content in enumerate(contents, start=1)
        ],
    }


def test_a_user_without_a_quota_row_is_unlimited(owner):
    for i in range(30):
        services.memory_write(owner=owner, content=f"note {i}")
    usage = quota_usage(owner)
    assert (usage.memories.used, usage.memories.limit, usage.limited) == (30, None, False)


def test_a_write_over_the_memory_limit_is_refused_with_the_limit_and_the_usage(owner):
    Quota.objects.create(user=owner, max_memories=2)
    services.memory_write(owner=owner, content="one")
    services.memory_write(owner=owner, content="two")

    with pytest.raises(QuotaExceeded) as refused:
        services.memory_write(owner=owner, content="three")

    assert str(refused.value) == (
        "Quota reached: 2 memories and notes; you have 2 memories and 0 notes. Nothing was saved: delete some "
        "memories (their earlier versions go with them) or notes, or ask the operator to raise your quota."
    )
    assert Memory.objects.filter(author=owner).count() == 2


def test_characters_and_tokens_are_limited_and_an_update_may_not_grow_past_them(owner):
    Quota.objects.create(user=owner, max_chars=30, max_tokens=10)
    memory = services.memory_write(owner=owner, content="x" * 20)  # 20 characters, 5 tokens

    with pytest.raises(
        QuotaExceeded, match=r"30 characters; you have 20 \(20 in memories\), 10 left, and this would add 11"
    ):
        services.memory_write(owner=owner, content="y" * 11)
    # The text replaced is kept as an earlier version: the edit adds its new text whole.
    with pytest.raises(QuotaExceeded, match=r"30 characters; you have 20 .* and this would add 12"):
        services.memory_update(owner=owner, public_id=memory.public_id, content="x" * 12)
    services.memory_update(owner=owner, public_id=memory.public_id, content="x" * 8)
    Quota.objects.filter(user=owner).update(max_chars=None)
    with pytest.raises(QuotaExceeded, match=r"10 estimated tokens \(characters / 4\); you have 7 .* would add 9"):
        services.memory_write(owner=owner, content="z" * 33)

    usage = quota_usage(owner).as_dict()
    assert (usage["memories"], usage["characters"], usage["tokens"]) == (
        {"used": 1, "limit": None},
        {"used": 28, "limit": None},
        {"used": 7, "limit": 10},
    )


def test_rest_refuses_a_write_over_quota_with_403_quota_exceeded(owner, owner_token):
    Quota.objects.create(user=owner, max_memories=1)
    assert api(owner_token, "post", "memories", {"content": "first"}).status_code == 201

    response = api(owner_token, "post", "memories", {"content": "second"})

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "quota_exceeded"
    assert "Quota reached: 1 memories and notes; you have 1 memory" in response.json()["error"]["message"]


def test_mcp_refuses_a_write_over_quota_with_a_tool_error(client, owner, owner_token):
    Quota.objects.create(user=owner, max_memories=1)
    mcp = McpCaller(client, owner_token, LEGACY)
    mcp.ok("memory_write", {"content": "first"})

    message = mcp.fails("memory_write", {"content": "second"})

    assert message.startswith("Quota reached: 1 memories and notes; you have 1 memory and 0 notes.")
    assert "ask the operator" in message


def test_an_import_over_quota_imports_nothing_on_rest_and_the_page(owner, owner_token, owner_client):
    Quota.objects.create(user=owner, max_memories=3)
    services.memory_write(owner=owner, content="already here")
    document = export_of("a", "b", "c")

    response = api(owner_token, "post", "import", document)
    page = owner_client.post(
        reverse("transfer"), {"file": SimpleUploadedFile("export.json", json.dumps(document).encode())}
    )

    assert response.status_code == 403 and response.json()["error"]["code"] == "quota_exceeded"
    refusal = "3 memories and notes; you have 1 memory and 0 notes, 2 left, and this would add 3"
    assert refusal in response.json()["error"]["message"]
    assert page.status_code == 403 and refusal in page.content.decode()
    assert Memory.objects.filter(author=owner).count() == 1
    assert api(owner_token, "post", "import", export_of("a", "b")).json()["imported"] == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_writes_cannot_both_take_the_last_slot():
    owner = get_user_model().objects.create_user(username="racer")
    Quota.objects.create(user=owner, max_memories=3)
    for i in range(2):
        services.memory_write(owner=owner, content=f"before {i}")
    start, outcomes = threading.Barrier(8), []

    def write(i: int) -> None:
        start.wait()
        try:
            services.memory_write(owner=owner, content=f"racing {i}")
            outcomes.append("stored")
        except QuotaExceeded:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["refused"] * 7 + ["stored"]
    assert Memory.objects.filter(author=owner).count() == 3


@pytest.mark.django_db
def test_a_sign_up_gets_the_configured_quota_and_operator_accounts_get_none(client, settings):
    settings.GNOSEM_SIGNUP_MAX_MEMORIES = 100
    settings.GNOSEM_SIGNUP_MAX_CHARS = 50_000
    operator = get_user_model().objects.create_superuser(username="operator", email="op@example.com")

    client.post(reverse("account_signup"), {"email": "ada@example.com", "password1": PASSWORD, "password2": PASSWORD})

    quota = Quota.objects.get(user__email="ada@example.com")
    assert (quota.max_memories, quota.max_chars, quota.max_tokens) == (100, 50_000, None)
    assert not Quota.objects.filter(user=operator).exists()


def test_usage_is_served_at_api_v1_usage_for_the_tokens_owner_only(owner, stranger, owner_token, stranger_token):
    Quota.objects.create(user=owner, max_memories=10, max_tokens=1000)
    services.memory_write(owner=owner, content="abcdefghi")  # 9 characters, 3 tokens
    services.memory_write(owner=stranger, content="the stranger's memory")

    mine, theirs = api(owner_token, "get", "usage"), api(stranger_token, "get", "usage")

    assert {dimension: mine.json()[dimension] for dimension in ("memories", "characters", "tokens")} == {
        "memories": {"used": 1, "limit": 10},
        "characters": {"used": 9, "limit": None},
        "tokens": {"used": 3, "limit": 1000},
    }
    assert theirs.json()["memories"] == {"used": 1, "limit": None}
    assert theirs.json()["characters"]["used"] == len("the stranger's memory")
    assert Client().get("/api/v1/usage").status_code == 401


def test_the_schema_documents_usage_and_the_refusals(owner_token):
    schema = Client().get("/api/v1/schema", {"format": "json"}).json()

    usage = schema["paths"]["/api/v1/usage"]["get"]
    assert usage["operationId"] == "usage"
    create = schema["paths"]["/api/v1/memories"]["post"]["responses"]
    assert "quota" in create["403"]["description"] and "429" in create


def test_the_dashboard_shows_usage_next_to_the_limits(owner, owner_client):
    Quota.objects.create(user=owner, max_memories=10_000)
    services.memory_write(owner=owner, content="a memory of twenty c")

    page = owner_client.get(reverse("home")).content.decode()

    assert "Storage and quota" in page
    assert "<td>memories and notes</td><td>1</td>" in page and "10,000" in page
    assert "<td>characters</td><td>20</td>" in page and "unlimited" in page


def test_the_operator_edits_quotas_in_the_admin(owner):
    admin = get_user_model().objects.create_superuser(username="admin", email="admin@example.com")
    quota = Quota.objects.create(user=owner, max_memories=5)
    client = Client()
    client.force_login(admin)

    listing = client.get(reverse("admin:memories_quota_changelist"))
    change = client.post(
        reverse("admin:memories_quota_change", args=[owner.pk]),
        {"user": owner.pk, "max_memories": "50", "max_chars": "", "max_tokens": ""},
    )

    assert listing.status_code == 200 and "owner" in listing.content.decode()
    assert change.status_code == 302
    quota.refresh_from_db()
    assert (quota.max_memories, quota.max_chars) == (50, None)


def test_a_stranger_cannot_see_or_spend_the_owners_quota(owner, stranger, stranger_token):
    Quota.objects.create(user=owner, max_memories=0)
    response = api(stranger_token, "post", "memories", {"content": "mine, not the owner's"})
    assert response.status_code == 201
    with pytest.raises(QuotaExceeded):
        services.memory_write(owner=owner, content="refused")
    assert Memory.objects.filter(author=owner).count() == 0


def stored_characters(owner) -> int:
    """Every character the database holds that the owner wrote: memories, their compressed forms,
    their earlier versions and notes (opened and counted one by one, not from the stored lengths)."""
    memories = Memory.objects.filter(author=owner)
    revisions = MemoryRevision.objects.filter(memory__author=owner)
    return (
        sum(len(memory.content) + len(memory.content_optimized or "") for memory in memories)
        + sum(len(revision.content) for revision in revisions)
        + sum(len(note.content) for note in Note.objects.filter(author=owner))
    )


def test_thirty_edits_alternating_a_long_and_a_short_text_keep_no_version_past_the_character_quota(owner):
    Quota.objects.create(user=owner, max_chars=20_000)
    memory = services.memory_write(owner=owner, content="small")
    refused = 0

    for edit in range(30):
        try:
            services.memory_update(
                owner=owner, public_id=memory.public_id, content="x" * 19_000 if edit % 2 == 0 else "small"
            )
        except QuotaExceeded:
            refused += 1

    # The first long text fits (19,005 with "small" kept); every later one would keep 19,000 more.
    assert refused == 14
    assert stored_characters(owner) == quota_usage(owner).characters.used == 19_010


def test_an_edit_that_would_keep_a_version_past_the_quota_is_refused_and_changes_nothing(owner):
    Quota.objects.create(user=owner, max_chars=20_000)
    memory = services.memory_write(owner=owner, content="small")
    services.memory_update(owner=owner, public_id=memory.public_id, content="x" * 19_000)
    services.memory_update(owner=owner, public_id=memory.public_id, content="small")

    with pytest.raises(QuotaExceeded) as refused:
        services.memory_update(owner=owner, public_id=memory.public_id, content="y" * 19_000, tags=["ops"])

    assert str(refused.value) == (
        "Quota reached: 20,000 characters; you have 19,010 (5 in memories, 19,005 in earlier versions), "
        "990 left, and this would add 19,000. Nothing was saved: delete some memories (their earlier versions go "
        "with them) or notes, or ask the operator to raise your quota."
    )
    memory.refresh_from_db()
    assert (memory.content, memory.tags, memory.revisions.count()) == ("small", [], 2)


def test_a_change_of_tags_keeps_the_text_as_an_earlier_version_and_counts_it(owner):
    Quota.objects.create(user=owner, max_chars=30_000)
    memory = services.memory_write(owner=owner, content="x" * 19_000)

    with pytest.raises(QuotaExceeded, match=r"you have 19,000 .*, 11,000 left, and this would add 19,000"):
        services.memory_update(owner=owner, public_id=memory.public_id, tags=["ops"])
    services.memory_update(owner=owner, public_id=memory.public_id, pinned=True)  # keeps no earlier version

    memory.refresh_from_db()
    assert (memory.tags, memory.pinned, memory.revisions.count()) == ([], True, 0)


def test_an_import_counts_earlier_versions_and_says_what_it_needs_against_what_is_left(owner):
    Quota.objects.create(user=owner, max_chars=20_000)
    services.memory_write(owner=owner, content="x" * 38)
    earlier = {
        "content": "r" * 49_000,
        "tags": [],
        "written_by": "",
        "valid_from": "2025-01-01T09:00:00+00:00",
        "replaced_at": "2025-01-01T10:00:00+00:00",
    }
    document = export_of(*(f"memory {i}" for i in range(5)))
    for entry in document["memories"]:
        entry["revisions"] = [earlier] * 100

    with pytest.raises(QuotaExceeded) as refused:
        import_memories(owner=owner, document=document)

    assert "20,000 characters; you have 38 (38 in memories), 19,962 left, and this would add 24,500,040." in str(
        refused.value
    )
    assert Memory.objects.filter(author=owner).count() == 1 and not MemoryRevision.objects.exists()


def test_imported_compressed_forms_count_toward_the_quota(owner):
    document = export_of(RAW)
    document["memories"][0] |= {"content_optimized": GOOD, "compression_status": "compressed"}
    Quota.objects.create(user=owner, max_chars=len(RAW) + len(GOOD) - 1)

    with pytest.raises(QuotaExceeded, match=f"this would add {len(RAW) + len(GOOD):,}"):
        import_memories(owner=owner, document=document)
    Quota.objects.filter(user=owner).update(max_chars=len(RAW) + len(GOOD))
    import_memories(owner=owner, document=document)

    usage = quota_usage(owner)
    assert usage.characters.used == stored_characters(owner) == len(RAW) + len(GOOD)
    assert usage.stored["compressed"] == Stored(count=1, characters=len(GOOD), tokens=token_estimate(GOOD))
    assert usage.tokens.used == token_estimate(RAW) + token_estimate(GOOD)


def test_a_compressed_form_the_worker_writes_counts_but_is_never_refused(
    owner, chat_server, django_capture_on_commit_callbacks
):
    Quota.objects.create(user=owner, max_chars=len(RAW))
    chat_server.answer(GOOD)

    with django_capture_on_commit_callbacks(execute=True):
        memory = services.memory_write(owner=owner, content=RAW)

    memory.refresh_from_db()
    assert memory.content_optimized == GOOD
    assert quota_usage(owner).characters.used == len(RAW) + len(GOOD)
    with pytest.raises(QuotaExceeded, match="in compressed forms"):
        services.memory_write(owner=owner, content="one more")


def test_notes_count_toward_the_limit_on_memories_and_notes(owner):
    Quota.objects.create(user=owner, max_memories=2)
    services.memory_write(owner=owner, content="one memory")
    notes.note_write(owner=owner, title="Runbook", content="Restart the worker.")
    document = export_of("an imported memory")
    document["notes"] = [{"title": "Imported", "content": "A note.", "created_at": "2025-02-01T10:00:00+00:00"}]

    with pytest.raises(QuotaExceeded) as memory_refused:
        services.memory_write(owner=owner, content="a second memory")
    with pytest.raises(QuotaExceeded, match="2 memories and notes"):
        notes.note_write(owner=owner, title="Another", content="More.")
    with pytest.raises(QuotaExceeded, match="you have 1 memory and 1 note and this would add 2"):
        import_memories(owner=owner, document=document)

    assert str(memory_refused.value).startswith("Quota reached: 2 memories and notes; you have 1 memory and 1 note.")
    assert quota_usage(owner).memories == Allowance(used=2, limit=2)
    assert (Memory.objects.filter(author=owner).count(), Note.objects.filter(author=owner).count()) == (1, 1)


def test_usage_breaks_down_what_is_stored_on_the_dashboard_and_at_api_v1_usage(owner, owner_client, owner_token):
    Quota.objects.create(user=owner, max_chars=100_000)
    memory = services.memory_write(owner=owner, content="first text")
    services.memory_update(owner=owner, public_id=memory.public_id, content="second text!")
    notes.note_write(owner=owner, title="Runbook", content="Restart the worker.")

    page = owner_client.get(reverse("home")).content.decode()
    usage = api(owner_token, "get", "usage").json()

    assert "<td>memories and notes</td><td>2</td>" in page
    assert "<td>characters</td><td>41</td>" in page
    assert "<tr><td>memories</td><td>1</td><td>12</td><td>3</td></tr>" in page
    assert "<tr><td>earlier versions</td><td>1</td><td>10</td><td>3</td></tr>" in page
    assert "<tr><td>notes</td><td>1</td><td>19</td><td>5</td></tr>" in page
    assert "<tr><td>compressed forms</td><td>0</td><td>0</td><td>0</td></tr>" in page
    assert usage == {
        "memories": {"used": 2, "limit": None},
        "characters": {"used": 41, "limit": 100_000},
        "tokens": {"used": 11, "limit": None},
        "stored": {
            "memories": {"count": 1, "characters": 12, "tokens": 3},
            "revisions": {"count": 1, "characters": 10, "tokens": 3},
            "compressed": {"count": 0, "characters": 0, "tokens": 0},
            "notes": {"count": 1, "characters": 19, "tokens": 5},
        },
    }
