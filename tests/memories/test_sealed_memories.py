"""Memories at rest: their texts sealed under the space's key, their search columns blind, and
everything still found by words and by meaning; a ciphertext moved to another row or space does
not open, and one that does not open spoils nothing else."""

import hashlib
import json
import math
from collections import Counter

import pytest
from django.core.management.base import CommandError
from django.db import connection

from memories import services, sharing
from memories.encryption.blind_index import analyse
from memories.encryption.fields import UnreadableText, unreadable_fields
from memories.encryption.rotation import rotation_continue, rotation_start
from memories.models import Memory, MemoryRevision, SpaceTermStatistic, TermPosting
from memories.notes import services as notes
from memories.notes.services import note_list
from memories.reading.counting import memory_count
from memories.search.pipeline import search_hybrid
from memories.search.signals import BM25_B, BM25_K1, keyword_ranking
from memories.selectors import MemoryFilters, memory_list
from memories.transfer.export import export_chunks, exported_space
from tests.memories.stored import copy_sealed

PLANTED = "Zanzibar-Quokka invoice ERR_7Q31 settled by Ottoline Brackenbury"
COMPRESSED = "TOPIC=Zanzibar-Quokka|PERSON=Ottoline Brackenbury"


def raw_row(table: str, row_id: int) -> str:
    """Every column of one row as PostgreSQL prints it."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT t::text FROM {table} t WHERE id = %s", [row_id])
        return cursor.fetchone()[0]


def planted_words() -> list[str]:
    return ["zanzibar", "quokka", "7q31", "ottoline", "brackenbury", "invoice", "settled"]


@pytest.mark.django_db
def test_no_word_of_a_memory_its_compressed_form_or_its_earlier_version_is_stored_in_plain(owner):
    memory = services.memory_write(owner=owner, content=PLANTED)
    services.memory_update(owner=owner, public_id=memory.public_id, content="A different text about nothing much.")
    memory = services.memory_update(owner=owner, public_id=memory.public_id, content=PLANTED)
    memory.content_optimized = COMPRESSED  # as the compression worker stores it
    memory.save(update_fields=["content_optimized"])

    stored = [raw_row("memories_memory", memory.pk)]
    stored += [raw_row("memories_memoryrevision", pk) for pk in memory.revisions.values_list("pk", flat=True)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT lexeme FROM memories_term_posting WHERE memory_id = %s", [memory.pk])
        stored += [row[0] for row in cursor.fetchall()]
        cursor.execute("SELECT lexeme FROM memories_space_terms WHERE space_id = %s", [memory.space_id])
        stored += [row[0] for row in cursor.fetchall()]
    dump = "\n".join(stored).lower()
    assert [word for word in planted_words() if word in dump] == []
    assert "err_7q31" not in dump

    reread = Memory.objects.get(pk=memory.pk)
    assert (reread.content, reread.content_optimized) == (PLANTED, COMPRESSED)
    assert reread.content_chars == len(PLANTED) and reread.tokens_optimized == math.ceil(len(COMPRESSED) / 4)
    assert [revision.content for revision in MemoryRevision.objects.filter(memory=memory).order_by("id")] == [
        PLANTED,
        "A different text about nothing much.",
    ]


@pytest.mark.django_db
def test_words_and_identifiers_are_found_through_the_blind_index(owner, write_indexed):
    planted = write_indexed(owner, PLANTED)
    write_indexed(owner, "The quarterly invoice run moved to Tuesdays.")
    for query in ("ERR_7Q31", "Brackenbury", "who settled the Zanzibar-Quokka invoice"):
        assert search_hybrid(owner=owner, query=query)[0].memory.pk == planted.pk, query
    assert search_hybrid(owner=owner, query="Zanzibar-Quokka")[0].memory.content == PLANTED


@pytest.mark.django_db
def test_keyword_scores_are_bm25_over_the_plain_texts(owner):
    texts = [
        "Deploys need two approvals; deploys happen Monday to Thursday.",
        "The deploy pipeline runs the migrations first.",
        "Lunch is at noon on Thursday.",
        "Approvals come from the platform team.",
    ]
    memories = [services.memory_write(owner=owner, content=text) for text in texts]
    query = "deploy approvals thursday"
    ranked = keyword_ranking(space_ids=[memories[0].space_id], query=query, filters=MemoryFilters(), limit=10)

    analyses = analyse(texts)
    query_terms = set(analyse([query])[0].positions)
    documents = Counter(term for analysis in analyses for term in analysis.positions)
    average = sum(analysis.length for analysis in analyses) / len(analyses)
    expected = {}
    for memory, analysis in zip(memories, analyses, strict=True):
        score = 0.0
        for term in query_terms & set(analysis.positions):
            idf = math.log(1 + (len(texts) - documents[term] + 0.5) / (documents[term] + 0.5))
            tf = analysis.positions[term].count(",") + 1
            score += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * analysis.length / average))
        if score:
            expected[memory.pk] = score
    assert {item.memory_id: pytest.approx(item.score) for item in ranked} == expected


@pytest.mark.django_db
def test_the_same_text_written_again_is_found_by_its_keyed_digest(owner):
    first = services.memory_write(owner=owner, content="Standup moved to 9:30.")
    again = services.memory_write(owner=owner, content="  standup MOVED to 9:30.  ")
    assert again.pk == first.pk and again.written_again
    assert first.content_digest != hashlib.md5(b"standup moved to 9:30.").hexdigest()


@pytest.mark.django_db
def test_a_ciphertext_copied_into_another_row_or_space_does_not_open(owner, stranger):
    planted = services.memory_write(owner=owner, content=PLANTED)
    neighbour = services.memory_write(owner=owner, content="Another memory of the same space.")
    strangers = services.memory_write(owner=stranger, content="A memory of someone else's space.")
    copy_sealed("memories_memory", "content", planted.pk, neighbour.pk, strangers.pk)
    for victim in (neighbour, strangers):
        reread = Memory.objects.get(pk=victim.pk)
        assert isinstance(reread.content, UnreadableText) and unreadable_fields(reread) == ["content"]
        assert reread.content.startswith("[unreadable: ")
    assert Memory.objects.get(pk=planted.pk).content == PLANTED


@pytest.mark.django_db
def test_a_tampered_memory_reads_as_unreadable_and_saving_it_keeps_its_bytes(owner):
    memory = services.memory_write(owner=owner, content=PLANTED)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory SET content = overlay(content PLACING '\\x00'::bytea FROM 30 FOR 1) WHERE id = %s",
            [memory.pk],
        )
        cursor.execute("SELECT content FROM memories_memory WHERE id = %s", [memory.pk])
        tampered = bytes(cursor.fetchone()[0])
    reread = Memory.objects.get(pk=memory.pk)
    assert unreadable_fields(reread) == ["content"]
    reread.pinned = True
    reread.save()
    with connection.cursor() as cursor:
        cursor.execute("SELECT content, content_chars FROM memories_memory WHERE id = %s", [memory.pk])
        assert cursor.fetchone() == (tampered, len(PLANTED))


@pytest.mark.django_db
def test_sealed_texts_are_not_written_around_the_model(owner):
    memory = services.memory_write(owner=owner, content=PLANTED)
    with pytest.raises(TypeError, match="sealed"):
        Memory.objects.filter(pk=memory.pk).update(content="plain text")


@pytest.mark.django_db
def test_a_memory_moved_to_another_space_is_sealed_and_indexed_under_that_space(owner, team, write_indexed):
    memory = write_indexed(owner, PLANTED)
    services.memory_update(owner=owner, public_id=memory.public_id, content=PLANTED + " Paid.")
    personal = memory.space_id
    sharing.memory_share(owner=owner, public_id=memory.public_id, space=str(team.public_id), move=True)

    moved = Memory.objects.get(pk=memory.pk)
    assert moved.space_id == team.pk and moved.content == PLANTED + " Paid."
    assert [revision.content for revision in MemoryRevision.objects.filter(memory=moved)] == [PLANTED]
    assert MemoryRevision.objects.filter(memory=moved).values_list("space_id", flat=True).get() == team.pk
    assert not TermPosting.objects.filter(space_id=personal, memory_id=moved.pk).exists()
    assert not SpaceTermStatistic.objects.filter(space_id=personal, df__gt=0).exists()
    found = keyword_ranking(space_ids=[team.pk], query="Brackenbury", filters=MemoryFilters(), limit=5)
    assert [item.memory_id for item in found] == [moved.pk]


@pytest.mark.django_db
def test_checksealed_names_what_does_not_open_and_healthz_counts_it(owner, command, client, settings):
    settings.GNOSEM_HEALTHZ_DETAILS = True
    kept = services.memory_write(owner=owner, content="A memory that opens.")
    tampered = services.memory_write(owner=owner, content=PLANTED)
    copy_sealed("memories_memory", "content", kept.pk, tampered.pk)

    with pytest.raises(CommandError, match=r"1 of \d+ rows hold a value that does not open"):
        command("checksealed")
    report = client.get("/healthz").json()
    assert report["status"] == "degraded" and report["encryption"]["unreadable"] == 1
    assert any("sealed values do not open" in problem for problem in report["problems"])

    Memory.objects.get(pk=tampered.pk).delete()
    stdout, _ = command("checksealed")
    assert "rows open." in stdout
    assert client.get("/healthz").json()["encryption"]["unreadable"] == 0


@pytest.mark.django_db
def test_an_export_leaves_out_what_does_not_open_and_carries_everything_else_plain(owner):
    kept = services.memory_write(owner=owner, content=PLANTED)
    services.memory_update(owner=owner, public_id=kept.public_id, content=PLANTED + " Paid.")
    spoiled = services.memory_write(owner=owner, content="This one will not open.")
    copy_sealed("memories_memory", "content", kept.pk, spoiled.pk)

    document = json.loads("".join(export_chunks(exported_space(owner))))

    assert [
        (entry["content"], [revision["content"] for revision in entry["revisions"]]) for entry in document["memories"]
    ] == [(PLANTED + " Paid.", [PLANTED])]


@pytest.mark.django_db
def test_a_memory_that_does_not_open_can_be_written_over_and_keeps_its_bytes_as_a_revision(owner):
    kept = services.memory_write(owner=owner, content="A memory that opens.")
    spoiled = services.memory_write(owner=owner, content=PLANTED)
    copy_sealed("memories_memory", "content", kept.pk, spoiled.pk)

    updated = services.memory_update(owner=owner, public_id=spoiled.public_id, content="Written over.")

    assert Memory.objects.get(pk=updated.pk).content == "Written over."
    revision = MemoryRevision.objects.get(memory=updated)
    assert unreadable_fields(revision) == ["content"] and revision.content_chars == len(PLANTED)


@pytest.mark.django_db
def test_tags_are_sealed_and_still_filter_search_lists_counts_and_notes(owner):
    tagged = services.memory_write(owner=owner, content="The quarterly invoice run.", tags=["zanzibar-quokka", "ops"])
    services.memory_update(owner=owner, public_id=tagged.public_id, tags=["zanzibar-quokka", "brackenbury"])
    services.memory_write(owner=owner, content="The quarterly invoice run, untagged.")
    note = notes.note_write(owner=owner, title="Runbook", content="# Steps\n\nRun it.", tags=["ottoline"])
    stored = b""
    with connection.cursor() as cursor:
        for table in ("memories_memory", "memories_memoryrevision", "memories_note"):
            cursor.execute(f"SELECT tags, t::text FROM {table} t")
            stored += b" ".join(bytes(tags) + text.encode() for tags, text in cursor.fetchall())
    assert [
        word for word in (b"zanzibar", b"quokka", b"brackenbury", b"ottoline", b"ops") if word in stored.lower()
    ] == []

    filters = MemoryFilters(tags=("brackenbury", "zanzibar-quokka"))
    assert [memory.pk for memory in memory_list(owner=owner, filters=filters, limit=10).memories] == [tagged.pk]
    assert [hit.memory.pk for hit in search_hybrid(owner=owner, query="invoice run", filters=filters)] == [tagged.pk]
    assert memory_list(owner=owner, filters=MemoryFilters(tags=("ops",)), limit=10).memories == []
    assert MemoryRevision.objects.get(memory=tagged).tags == ["zanzibar-quokka", "ops"]
    groups = memory_count(owner=owner, filters=MemoryFilters(), group_by="tag").groups
    assert groups == [("", 1), ("brackenbury", 1), ("zanzibar-quokka", 1)]
    assert [found.pk for found in note_list(owner=owner, tags=["ottoline"]).notes] == [note.pk]
    assert note_list(owner=owner, tags=["ops"]).notes == []


@pytest.mark.django_db
def test_tags_filter_across_key_versions_while_a_space_is_re_keyed(owner):
    before = services.memory_write(owner=owner, content="Sealed under the first key.", tags=["billing"])
    rotation_start(before.space_id)
    after = services.memory_write(owner=owner, content="Sealed under the second key.", tags=["billing"])
    assert (Memory.objects.get(pk=before.pk).key_version, after.key_version) == (1, 2)

    filters = MemoryFilters(tags=("billing",))
    assert {memory.pk for memory in memory_list(owner=owner, filters=filters, limit=10).memories} == {
        before.pk,
        after.pk,
    }
    assert memory_count(owner=owner, filters=MemoryFilters(), group_by="tag").groups == [("billing", 2)]
    rotation_continue(before.space_id)
    assert Memory.objects.get(pk=before.pk).key_version == 2
    assert {memory.pk for memory in memory_list(owner=owner, filters=filters, limit=10).memories} == {
        before.pk,
        after.pk,
    }


@pytest.mark.django_db
def test_tags_that_do_not_open_read_as_none_and_keep_their_bytes_and_digests(owner):
    kept = services.memory_write(owner=owner, content="Its tags open.", tags=["ops"])
    spoiled = services.memory_write(owner=owner, content="Its tags will not open.", tags=["billing"])
    copy_sealed("memories_memory", "tags", kept.pk, spoiled.pk)
    reread = Memory.objects.get(pk=spoiled.pk)
    assert reread.tags == [] and unreadable_fields(reread) == ["tags"] and reread.content == "Its tags will not open."
    reread.pinned = True
    reread.save()
    assert memory_list(owner=owner, filters=MemoryFilters(tags=("billing",)), limit=10).memories[0].pk == spoiled.pk
    assert ("[unreadable]", 1) in memory_count(owner=owner, filters=MemoryFilters(), group_by="tag").groups
