import time
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memories import health, services
from memories.models import IndexingStatus, Memory, Note
from memories.notes import services as notes


@pytest.fixture
def staff_client(db) -> Client:
    staff = get_user_model().objects.create_user(username="operator", email="operator@example.com", is_staff=True)
    client = Client()
    client.force_login(staff)
    return client


def test_anonymous_callers_get_the_status_only(client, owner):
    services.memory_write(owner=owner, content="a private note about the merger")
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"status": "ok"}


def test_signed_in_users_who_are_not_staff_get_the_status_only(owner_client):
    assert owner_client.get("/healthz").json() == {"status": "ok"}


def test_staff_get_the_database_the_queue_and_the_worker(staff_client):
    response = staff_client.get(reverse("healthz"))
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["problems"] == []
    assert body["database"] == "ok"
    assert body["queue"].keys() == {
        "backend",
        "tasks_waiting",
        "memories_pending",
        "memories_failed",
        "notes_pending",
        "notes_failed",
        "oldest_pending_seconds",
    }
    assert isinstance(body["queue"]["tasks_waiting"], int)
    assert body["queue"]["memories_pending"] == 0
    assert body["queue"]["oldest_pending_seconds"] is None
    assert body["worker"]["status"] == "ok"
    assert body["embedding"] == {
        "reembedding_needed": False,
        "waiting_for_endpoint": 0,
        "notes_waiting_for_endpoint": 0,
    }


def test_everyone_gets_the_details_when_the_operator_turns_them_on(client, db, settings):
    settings.GNOSEM_HEALTHZ_DETAILS = True
    body = client.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert "memories_pending" in body["queue"]


def test_staff_see_pending_and_failed_memories_counted(staff_client, owner):
    pending = services.memory_write(owner=owner, content="waiting")
    failed = services.memory_write(owner=owner, content="broken")
    Memory.objects.filter(pk=pending.pk).update(
        indexing_status=IndexingStatus.PENDING, indexing_queued_at=timezone.now() - timedelta(minutes=10)
    )
    Memory.objects.filter(pk=failed.pk).update(indexing_status=IndexingStatus.FAILED)
    queue = staff_client.get("/healthz").json()["queue"]
    assert queue["memories_pending"] == 1
    assert queue["memories_failed"] == 1
    assert 590 <= queue["oldest_pending_seconds"] < 660


def test_staff_see_pending_and_failed_notes_counted(staff_client, owner):
    pending = notes.note_write(owner=owner, title="Waiting", content="waiting")
    failed = notes.note_write(owner=owner, title="Broken", content="broken")
    Note.objects.filter(pk=pending.pk).update(indexing_queued_at=timezone.now() - timedelta(minutes=10))
    Note.objects.filter(pk=failed.pk).update(indexing_status=IndexingStatus.FAILED)
    queue = staff_client.get("/healthz").json()["queue"]
    assert (queue["notes_pending"], queue["notes_failed"]) == (1, 1)
    assert (queue["memories_pending"], queue["memories_failed"]) == (0, 0)
    assert 590 <= queue["oldest_pending_seconds"] < 660


def test_the_details_show_no_memory_content(staff_client, owner):
    services.memory_write(owner=owner, content="a private note about the merger")
    response = staff_client.get("/healthz")
    assert b"merger" not in response.content and b"owner" not in response.content


def test_without_a_consumer_heartbeat_it_is_degraded_and_says_why(client, staff_client, consumer_expected):
    assert client.get("/healthz").json() == {"status": "degraded"}
    response = staff_client.get("/healthz")
    assert response.status_code == 200  # the web process still serves: writes are kept, indexing waits
    body = response.json()
    assert body["status"] == "degraded"
    assert body["problems"] == ["worker: no heartbeat yet: is a consumer (manage.py run_huey) running?"]


def test_a_stale_heartbeat_says_how_long_the_worker_has_been_silent(staff_client, consumer_expected):
    cache.set(health._heartbeat_key(), time.time() - 600)
    body = staff_client.get("/healthz").json()
    assert body["status"] == "degraded"
    assert body["problems"] == ["worker: no heartbeat for 600 s"]
    assert 600 <= body["worker"]["last_heartbeat_seconds"] < 610


def test_a_recent_heartbeat_is_ok(staff_client, consumer_expected):
    health.worker_heartbeat_record()
    body = staff_client.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["worker"]["status"] == "ok"
    assert body["worker"]["last_heartbeat_seconds"] < 5


def test_the_heartbeat_task_records_a_heartbeat(staff_client, consumer_expected):
    from memories.tasks import worker_heartbeat_task

    worker_heartbeat_task.call_local()
    assert staff_client.get("/healthz").json()["status"] == "ok"


def test_post_is_not_allowed(client, db):
    response = client.post("/healthz")
    assert response.status_code == 405
    assert response["Allow"] == "GET"
