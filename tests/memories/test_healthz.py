from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.models import IndexingStatus, Memory


def test_it_reports_the_database_and_the_queue(client, db):
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert body["queue"].keys() == {
        "backend",
        "tasks_waiting",
        "memories_pending",
        "memories_failed",
        "oldest_pending_seconds",
    }
    assert isinstance(body["queue"]["tasks_waiting"], int)
    assert body["queue"]["memories_pending"] == 0
    assert body["queue"]["oldest_pending_seconds"] is None
    assert body["embedding"] == {"reembedding_needed": False}


def test_it_counts_pending_and_failed_memories(client, owner):
    pending = services.memory_write(owner=owner, content="waiting")
    failed = services.memory_write(owner=owner, content="broken")
    Memory.objects.filter(pk=pending.pk).update(indexing_queued_at=timezone.now() - timedelta(minutes=10))
    Memory.objects.filter(pk=failed.pk).update(indexing_status=IndexingStatus.FAILED)
    queue = client.get("/healthz").json()["queue"]
    assert queue["memories_pending"] == 1
    assert queue["memories_failed"] == 1
    assert 590 <= queue["oldest_pending_seconds"] < 660


def test_it_needs_no_login_and_shows_no_memory_content(client, owner):
    services.memory_write(owner=owner, content="a private note about the merger")
    response = client.get("/healthz")
    assert response.status_code == 200
    assert b"merger" not in response.content and b"owner" not in response.content


def test_post_is_not_allowed(client, db):
    response = client.post("/healthz")
    assert response.status_code == 405
    assert response["Allow"] == "GET"
