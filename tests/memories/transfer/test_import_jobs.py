"""Imports in the background: a file previewed, then imported a batch per transaction once started;
an import killed part-way carried on from its last batch, nothing twice; one failing part-way
stops saying how far it got; only its user sees or starts it, through the API or the commands."""

import json
from datetime import timedelta

import pytest
from django.test import Client, TestCase
from django.utils import timezone

from accounts.activity import activity_for_owner
from accounts.models import ActivityAction
from gnosem.errors import NotFound
from memories import services
from memories.models import ImportJob, ImportStatus, Memory, Quota
from memories.transfer import jobs
from memories.transfer.jobs import import_job_create, import_job_run, import_job_start, import_jobs_continue

pytestmark = pytest.mark.django_db

SEVEN = json.dumps({"results": [{"memory": f"Fact number {n} about the harbour."} for n in range(7)]}).encode()


class Killed(Exception):
    """The process importing dies."""


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(jobs, "BATCH", 2)


def started(owner, data: bytes = SEVEN) -> ImportJob:
    job = import_job_create(owner=owner, data=data, file_name="mem0.json")
    return import_job_start(owner=owner, public_id=job.public_id, in_background=False)


def die_after_first_batch(job: ImportJob) -> None:
    raise Killed


def test_an_import_killed_part_way_carries_on_from_its_last_batch(owner, small_batches):
    job = started(owner)
    assert (job.status, job.total, job.preview["memories"]) == (ImportStatus.QUEUED, 7, 7)

    with pytest.raises(Killed):
        import_job_run(job.pk, progress=die_after_first_batch)

    job.refresh_from_db()
    assert (job.status, job.done, Memory.objects.count()) == (ImportStatus.RUNNING, 2, 2)
    assert import_jobs_continue() == 0  # its lease still runs: the dead process might be alive
    ImportJob.objects.filter(pk=job.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert import_jobs_continue() == 1
    job.refresh_from_db()
    assert (job.status, job.done, job.report["imported"], job.report["duplicates"]) == (ImportStatus.DONE, 7, 7, 0)
    assert sorted(memory.content for memory in Memory.objects.all()) == sorted(
        f"Fact number {n} about the harbour." for n in range(7)
    )
    assert ImportJob.objects.get(pk=job.pk).document == ""  # the file goes once imported
    (event,) = [event for event in activity_for_owner(owner) if event.action == ActivityAction.IMPORTED]
    assert (event.detail["via"], event.detail["file"], event.detail["imported"]) == ("command line", "mem0.json", 7)


def test_an_import_failing_part_way_stops_saying_how_far_it_got(owner, small_batches):
    job = started(owner)
    Quota.objects.create(user=owner, max_memories=3)  # reached by other writes meanwhile

    ended = import_job_run(job.pk)

    assert ended is not None and ended.status == ImportStatus.FAILED
    assert ended.error.startswith("stopped after 2 of 7 entries: Quota reached: 3 memories and notes")
    assert Memory.objects.count() == 2  # the batches written stay; none half-written


def test_a_file_past_the_quota_is_refused_at_the_preview_and_nothing_kept(owner):
    Quota.objects.create(user=owner, max_memories=3)

    with pytest.raises(Exception, match="Quota reached"):
        import_job_create(owner=owner, data=SEVEN)

    assert ImportJob.objects.count() == 0


def test_untouched_previews_and_long_ended_imports_are_forgotten(owner):
    waiting = import_job_create(owner=owner, data=SEVEN)
    ended = import_job_run(started(owner, b'{"results": [{"memory": "one"}]}').pk)
    assert ended is not None
    ImportJob.objects.filter(pk=waiting.pk).update(created_at=timezone.now() - timedelta(days=2))
    ImportJob.objects.filter(pk=ended.pk).update(updated_at=timezone.now() - timedelta(days=31))

    import_jobs_continue()

    assert ImportJob.objects.count() == 0


def api(token: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"})


def test_the_api_creates_starts_and_follows_an_import_and_nobody_else_sees_it(owner_token, stranger_token):
    created = api(owner_token).post("/api/v1/imports?name=mem0.json", SEVEN, content_type="application/json")
    assert created.status_code == 201
    job = created.json()
    assert (job["status"], job["format"], job["total"], job["preview"]["memories"]) == ("previewed", "mem0", 7, 7)
    url = f"/api/v1/imports/{job['id']}"
    assert api(stranger_token).get(url).status_code == 404
    assert api(stranger_token).post(f"{url}/start").status_code == 404

    with TestCase.captureOnCommitCallbacks(execute=True):
        start = api(owner_token).post(f"{url}/start")

    assert start.status_code == 202
    done = api(owner_token).get(url).json()
    assert (done["status"], done["done"], done["report"]["imported"], done["error"]) == ("done", 7, 7, None)
    assert api(owner_token).post(f"{url}/start").json()["status"] == "done"  # started once only


def test_the_api_refuses_a_bad_file_and_keeps_nothing(owner_token):
    empty = b'{"results": [{"memory": ""}]}'
    refused = api(owner_token).post("/api/v1/imports", empty, content_type="application/json")

    assert refused.status_code == 400 and "entry 1" in refused.json()["error"]["message"]
    assert ImportJob.objects.count() == 0


def test_the_command_resumes_an_import_a_killed_run_left(owner, command, small_batches):
    job = started(owner)
    with pytest.raises(Killed):
        import_job_run(job.pk, progress=die_after_first_batch)
    ImportJob.objects.filter(pk=job.pk).update(lease_until=timezone.now() - timedelta(seconds=1))

    stdout, _ = command("importmemories", owner.username, "--resume", str(job.public_id))

    assert "mem0.json: 7 memories imported, 0 duplicates skipped." in stdout  # the whole import's report
    assert Memory.objects.count() == 7
    with pytest.raises(Exception, match="has no import"):
        command("importmemories", owner.username, "--resume", "00000000-0000-0000-0000-000000000000")


def test_a_stranger_cannot_start_or_read_anothers_import(owner, stranger):
    job = import_job_create(owner=owner, data=SEVEN)

    with pytest.raises(NotFound):
        import_job_start(owner=stranger, public_id=job.public_id)
    with pytest.raises(NotFound):
        jobs.import_job_get(owner=stranger, public_id=job.public_id)
    services.memory_write(owner=stranger, content="Fact number 1 about the harbour.")
    assert ImportJob.objects.get().status == ImportStatus.PREVIEWED
