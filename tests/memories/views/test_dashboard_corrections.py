"""The memory's page: Edit (earlier versions kept and shown), Pin, Supersede, Make current again;
the list marks pinned, superseded and written-again memories; nothing of it for a stranger."""

import pytest
from django.urls import reverse

from memories import services
from memories.models import Memory
from tests.memories.stored import matching

TUESDAYS = "We deploy the billing service on Tuesdays."


@pytest.fixture
def memory(owner) -> Memory:
    return services.memory_write(owner=owner, content=TUESDAYS, tags=["ops"], written_by="cursor")


def test_edit_changes_the_text_and_the_page_shows_the_earlier_version(owner_client, memory):
    url = reverse("memory_edit", args=[memory.public_id])
    assert TUESDAYS in owner_client.get(url).content.decode()

    response = owner_client.post(
        url, {"content": "We deploy billing on Thursdays.", "tags": "ops, deploy"}, follow=True
    )

    memory.refresh_from_db()
    assert (memory.content, memory.tags) == ("We deploy billing on Thursdays.", ["ops", "deploy"])
    page = response.content.decode()
    assert "Earlier versions" in page and TUESDAYS in page


def test_an_invalid_edit_shows_the_form_again_with_the_reason(owner_client, memory):
    response = owner_client.post(reverse("memory_edit", args=[memory.public_id]), {"content": "  ", "tags": ""})

    assert response.status_code == 400
    assert "must not be empty" in response.content.decode()
    memory.refresh_from_db()
    assert memory.content == TUESDAYS


def test_pin_and_unpin(owner_client, memory):
    owner_client.post(reverse("memory_pin", args=[memory.public_id]), {"pinned": "true"})
    memory.refresh_from_db()
    assert memory.pinned
    assert "badge-pinned" in owner_client.get(reverse("home")).content.decode()

    owner_client.post(reverse("memory_pin", args=[memory.public_id]), {"pinned": "false"})
    memory.refresh_from_db()
    assert not memory.pinned


def test_supersede_writes_the_new_fact_and_marks_the_old_one(owner_client, owner, memory):
    response = owner_client.post(
        reverse("memory_supersede", args=[memory.public_id]),
        {"content": "From March on, we deploy billing on Thursdays.", "tags": "ops"},
        follow=True,
    )

    successor = matching(lambda content: content.startswith("From March"), space__personal_of=owner)[0]
    memory.refresh_from_db()
    assert memory.superseded_by == successor
    assert "Supersedes" in response.content.decode()
    listed = owner_client.get(reverse("home")).content.decode()
    assert "badge-superseded" in listed and TUESDAYS in listed  # the list shows it, marked

    owner_client.post(reverse("memory_reinstate", args=[memory.public_id]))
    memory.refresh_from_db()
    assert memory.superseded_by is None


@pytest.mark.parametrize("name", ["memory_edit", "memory_pin", "memory_supersede", "memory_reinstate"])
def test_a_stranger_gets_404_and_changes_nothing(stranger_client, memory, name):
    response = stranger_client.post(reverse(name, args=[memory.public_id]), {"content": "mine now", "pinned": "true"})

    assert response.status_code == 404
    memory.refresh_from_db()
    assert (memory.content, memory.pinned, memory.superseded_by) == (TUESDAYS, False, None)
    assert Memory.objects.count() == 1
