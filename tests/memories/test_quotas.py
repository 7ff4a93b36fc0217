"""Quotas per user: memories, characters and estimated tokens; refused writes on every door, the
last slot under concurrency, sign-ups' defaults, usage on the dashboard and at /api/v1/usage."""

import json
import threading

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.urls import reverse

from gnosem.errors import QuotaExceeded
from memories import services, transfer
from memories.models import Memory, Quota
from memories.quotas import quota_usage
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
        "format": transfer.FORMAT,
        "version": transfer.VERSION,
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
        "Quota reached: 2 memories; you have 2. Nothing was saved: delete some memories or notes, or ask the "
        "operator to raise your quota."
    )
    assert Memory.objects.filter(owner=owner).count() == 2


def test_characters_and_tokens_are_limited_and_an_update_may_not_grow_past_them(owner):
    Quota.objects.create(user=owner, max_chars=30, max_tokens=10)
    memory = services.memory_write(owner=owner, content="x" * 20)  # 20 characters, 5 tokens

    with pytest.raises(QuotaExceeded, match="Quota reached: 30 characters; you have 20 and this would add 11"):
        services.memory_write(owner=owner, content="y" * 11)
    with pytest.raises(QuotaExceeded, match="30 characters; you have 20 and this would add 12"):
        services.memory_update(owner=owner, public_id=memory.public_id, content="x" * 32)
    services.memory_update(owner=owner, public_id=memory.public_id, content="x" * 8)  # shrinking is fine
    Quota.objects.filter(user=owner).update(max_chars=None)
    with pytest.raises(QuotaExceeded, match=r"10 estimated tokens \(characters / 4\); you have 2 and this would add 9"):
        services.memory_write(owner=owner, content="z" * 33)

    assert quota_usage(owner).as_dict() == {
        "memories": {"used": 1, "limit": None},
        "characters": {"used": 8, "limit": None},
        "tokens": {"used": 2, "limit": 10},
    }


def test_rest_refuses_a_write_over_quota_with_403_quota_exceeded(owner, owner_token):
    Quota.objects.create(user=owner, max_memories=1)
    assert api(owner_token, "post", "memories", {"content": "first"}).status_code == 201

    response = api(owner_token, "post", "memories", {"content": "second"})

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "quota_exceeded"
    assert "Quota reached: 1 memories; you have 1." in response.json()["error"]["message"]


def test_mcp_refuses_a_write_over_quota_with_a_tool_error(client, owner, owner_token):
    Quota.objects.create(user=owner, max_memories=1)
    mcp = McpCaller(client, owner_token, LEGACY)
    mcp.ok("memory_write", {"content": "first"})

    message = mcp.fails("memory_write", {"content": "second"})

    assert message.startswith("Quota reached: 1 memories; you have 1.") and "ask the operator" in message


def test_an_import_over_quota_imports_nothing_on_rest_and_the_page(owner, owner_token, owner_client):
    Quota.objects.create(user=owner, max_memories=3)
    services.memory_write(owner=owner, content="already here")
    document = export_of("a", "b", "c")

    response = api(owner_token, "post", "import", document)
    page = owner_client.post(
        reverse("transfer"), {"file": SimpleUploadedFile("export.json", json.dumps(document).encode())}
    )

    assert response.status_code == 403 and response.json()["error"]["code"] == "quota_exceeded"
    assert "3 memories; you have 1 and this would add 3" in response.json()["error"]["message"]
    assert page.status_code == 403 and "you have 1 and this would add 3" in page.content.decode()
    assert Memory.objects.filter(owner=owner).count() == 1
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
    assert Memory.objects.filter(owner=owner).count() == 3


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

    assert mine.json() == {
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
    assert "<td>memories</td><td>1</td>" in page and "10,000" in page
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
    assert Memory.objects.filter(owner=owner).count() == 0
