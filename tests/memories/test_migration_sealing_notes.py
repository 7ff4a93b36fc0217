"""The migration that seals notes: every title, text, heading and passage stored before is sealed,
the passages found by their words through the blind index, and everything opened again on the
way back."""

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from memories.indexing.embedding import configured_model_name
from memories.models import Note, NoteChunk
from memories.search.notes import note_search
from tests.migrating import latest, migrate, migrated_to

BEFORE = [("memories", "0026_sealed_memories")]
AFTER = [("memories", "0027_sealed_notes")]
# Two notes, each with its passages: (heading, passage).
NOTES = {
    "Invoice runbook": [
        ("Invoice runbook > Escalation", "Ottoline Brackenbury settles invoice ERR_7731Z by Friday."),
        ("Invoice runbook > Archive", "Paid invoices go to the archive bucket."),
    ],
    "Zanzibar-Quokka offsite": [("", "The Zanzibar-Quokka offsite happens on Thursdays.")],
}
# Queries and the note each finds first by its words.
QUERIES = {"ERR_7731Z Brackenbury": "Invoice runbook", "Zanzibar-Quokka": "Zanzibar-Quokka offsite"}
PLANTED = ("ottoline", "brackenbury", "7731z", "zanzibar", "quokka", "escalation", "runbook", "archive")


def rows(statement: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(statement)
        return cursor.fetchall()


def populate(apps) -> int:
    """A user's space with two notes and their passages, as stored before sealing; returns the
    user's id."""
    users, spaces = apps.get_model(settings.AUTH_USER_MODEL), apps.get_model("accounts", "Space")
    memberships = apps.get_model("accounts", "Membership")
    notes, chunks = apps.get_model("memories", "Note"), apps.get_model("memories", "NoteChunk")
    now = timezone.now()
    user = users.objects.create(username="sealed", email="sealed@example.com")
    space = spaces.objects.create(name="Personal", kind="personal", personal_of=user)
    memberships.objects.create(space=space, user=user, role="owner")
    for title, passages in NOTES.items():
        content = "\n\n".join(passage for _, passage in passages)
        note = notes.objects.create(
            space=space, author=user, title=title, content=content, created_at=now, updated_at=now
        )
        for position, (heading, passage) in enumerate(passages):
            start = content.index(passage)
            chunks.objects.create(
                note=note,
                space=space,
                position=position,
                start=start,
                end=start + len(passage),
                heading=heading,
                text=f"{heading or title}\n{passage}",
                model=configured_model_name(),
                dimension=3,
                embedding=[1.0, 0.0, 0.0],
            )
    return user.pk


def opened_notes(queryset) -> list[tuple]:
    return [(note.title, note.content, note.tokens) for note in queryset.order_by("pk")]


def opened_passages(queryset) -> list[tuple]:
    return [(chunk.heading, chunk.text) for chunk in queryset.order_by("pk")]


@pytest.mark.django_db(transaction=True)
def test_stored_notes_are_sealed_and_found_by_their_words_and_opened_again_going_back():
    with migrated_to(BEFORE) as apps:
        user_id = populate(apps)
        plain_notes = opened_notes(apps.get_model("memories", "Note").objects)
        plain_passages = opened_passages(apps.get_model("memories", "NoteChunk").objects)
        plain_vectors = rows("SELECT search_vector::text FROM memories_note_chunk ORDER BY id")

        migrate(AFTER)
        stored = " ".join(row[0] for row in rows("SELECT t::text FROM memories_note t")).lower()
        stored += " ".join(row[0] for row in rows("SELECT t::text FROM memories_note_chunk t")).lower()
        assert [word for word in PLANTED if word in stored] == []
        migrate(latest())  # the application's models read the rows as the later migrations leave them
        assert opened_notes(Note.objects) == plain_notes
        assert opened_passages(NoteChunk.objects) == plain_passages
        owner = get_user_model().objects.get(pk=user_id)
        for query, title in (
            ("ERR_7731Z Brackenbury", "Invoice runbook"),
            ("Zanzibar-Quokka", "Zanzibar-Quokka offsite"),
        ):
            hits = note_search(owner=owner, query=query, signals=("keyword",))
            assert [hit.note.title for hit in hits][:1] == [title], query

        apps = migrate(BEFORE)
        assert opened_notes(apps.get_model("memories", "Note").objects) == plain_notes
        assert opened_passages(apps.get_model("memories", "NoteChunk").objects) == plain_passages
        assert rows("SELECT search_vector::text FROM memories_note_chunk ORDER BY id") == plain_vectors
