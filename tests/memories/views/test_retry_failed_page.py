"""The dashboard's "Retry failed" button (memories.views.memories.retry_failed_view)."""

from django.urls import reverse

from memories import services
from memories.models import IndexingStatus, Memory, Note


def test_the_button_shows_only_when_some_memory_failed(owner_client, owner, failed_memory):
    services.memory_write(owner=owner, content="fine")
    assert "Retry failed" not in owner_client.get(reverse("home")).content.decode()
    failed_memory(owner, "broken")
    page = owner_client.get(reverse("home")).content.decode()
    assert "Retry failed" in page and reverse("retry_failed") in page


def test_it_queues_the_owners_failed_memories_only(owner_client, owner, stranger, failed_memory):
    mine = failed_memory(owner, "mine")
    theirs = failed_memory(stranger, "theirs")
    response = owner_client.post(reverse("retry_failed"), follow=True)
    assert "1 memory queued to be embedded again" in response.content.decode()
    assert Memory.objects.get(pk=mine.pk).indexing_status == IndexingStatus.PENDING
    assert Memory.objects.get(pk=mine.pk).indexing_attempts == 0
    assert Memory.objects.get(pk=theirs.pk).indexing_status == IndexingStatus.FAILED


def test_with_nothing_failed_it_says_so(owner_client):
    response = owner_client.post(reverse("retry_failed"), follow=True)
    assert "nothing to retry" in response.content.decode()


def test_it_takes_only_a_post(owner_client, owner, failed_memory):
    memory = failed_memory(owner, "broken")
    assert owner_client.get(reverse("retry_failed")).status_code == 405
    assert Memory.objects.get(pk=memory.pk).indexing_status == IndexingStatus.FAILED


def test_anonymous_visitors_are_sent_to_sign_in(client, owner, failed_memory):
    memory = failed_memory(owner, "broken")
    response = client.post(reverse("retry_failed"))
    assert response.status_code == 302 and "login" in response["Location"]
    assert Memory.objects.get(pk=memory.pk).indexing_status == IndexingStatus.FAILED


def test_the_button_shows_when_only_a_note_failed_and_retries_it(owner_client, owner, stranger, failed_note):
    mine = failed_note(owner, "Runbook", "Fail over when the primary is unreachable.")
    theirs = failed_note(stranger, "Theirs", "The stranger's notes.")
    page = owner_client.get(reverse("home")).content.decode()
    assert "Retry failed" in page and "and 1 note" in page

    response = owner_client.post(reverse("retry_failed"), follow=True)

    assert "1 note queued to be embedded again" in response.content.decode()
    mine.refresh_from_db()
    assert (mine.indexing_status, mine.indexing_attempts, mine.indexing_error) == (IndexingStatus.PENDING, 0, "")
    assert Note.objects.get(pk=theirs.pk).indexing_status == IndexingStatus.FAILED
