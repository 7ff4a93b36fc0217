"""Notes at rest: their titles and texts, and their passages' headings and texts, sealed under the
space's key, the passages' full-text vectors blind, and every note still found by words and by
meaning with the scores plain texts would give, under a replaced key too; a ciphertext moved to
another row does not open."""

import math
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

from memories.encryption.blind_index import analyse
from memories.encryption.fields import UnreadableText, unreadable_fields
from memories.encryption.rotation import rotation_continue, rotation_start
from memories.models import Note, NoteChunk, SpaceKey
from memories.notes import services as notes
from memories.search.notes import note_search, semantic_search
from memories.search.signals import BM25_B, BM25_K1

TITLE = "Zanzibar-Quokka escalation runbook"
CONTENT = """# Zanzibar-Quokka escalation runbook

## Invoices

Ottoline Brackenbury settles invoice ERR_7731Z before the quarterly close.

## Archive

Settled invoices go to the Tamarisk archive bucket.
"""
PLANTED = ("zanzibar", "quokka", "escalation", "runbook", "ottoline", "brackenbury", "7731z", "tamarisk", "archive")


@pytest.fixture
def indexed(django_capture_on_commit_callbacks):
    """Write notes and run what their commits queue (their embedding), as a worker would."""

    def indexed(owner, title: str, content: str, **fields) -> Note:
        with django_capture_on_commit_callbacks(execute=True):
            note = notes.note_write(owner=owner, title=title, content=content, **fields)
        return Note.objects.get(pk=note.pk)

    return indexed


def raw_rows(table: str, column: str, row_id: int) -> list[str]:
    """Every column of the rows whose `column` is `row_id`, as PostgreSQL prints them."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT t::text FROM {table} t WHERE {column} = %s", [row_id])
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db
def test_no_word_of_a_note_or_of_its_passages_is_stored_in_plain(owner, indexed):
    note = indexed(owner, TITLE, CONTENT)

    stored = raw_rows("memories_note", "id", note.pk) + raw_rows("memories_note_chunk", "note_id", note.pk)
    dump = "\n".join(stored).lower()
    assert len(stored) > 2
    assert [word for word in PLANTED if word in dump] == []
    assert "err_7731z" not in dump

    assert (note.title, note.content) == (TITLE, CONTENT)
    assert (note.title_chars, note.content_chars, note.tokens) == (
        len(TITLE),
        len(CONTENT),
        math.ceil(len(CONTENT) / 4),
    )
    headings = [chunk.heading for chunk in NoteChunk.objects.filter(note=note).order_by("position")]
    assert "Zanzibar-Quokka escalation runbook > Invoices" in headings
    texts = [chunk.text for chunk in NoteChunk.objects.filter(note=note)]
    assert any("Ottoline Brackenbury settles invoice ERR_7731Z" in text for text in texts)


@pytest.mark.django_db
def test_passages_are_found_by_a_word_and_by_an_identifier(owner, stranger, indexed):
    planted = indexed(owner, TITLE, CONTENT)
    indexed(owner, "Quarterly close", "The quarterly close moved to the first Monday of the month.")
    indexed(stranger, "Stranger's invoices", "Ottoline Brackenbury owes the stranger invoice ERR_7731Z.")

    for query in ("Brackenbury", "ERR_7731Z", "Tamarisk"):
        [best, *_] = semantic_search(owner=owner, query=query, kinds=["notes"])
        assert best.note.pk == planted.pk, query
        assert query in best.passage and "keyword" in best.signals, query
    [archive, *_] = note_search(owner=owner, query="Tamarisk archive")
    assert archive.heading == "Zanzibar-Quokka escalation runbook > Archive"


@pytest.mark.django_db
def test_keyword_scores_are_bm25_over_the_plain_passages(owner, stranger, indexed):
    texts = [
        "Deploys need two approvals; deploys happen Monday to Thursday.",
        "The deploy pipeline runs the migrations first.",
        "Lunch is at noon on Thursday.",
        "Approvals come from the platform team.",
    ]
    written = [indexed(owner, f"Note {number}", text, format="text") for number, text in enumerate(texts)]
    indexed(stranger, "Elsewhere", "Deploy approvals on Thursday, deploy approvals on Friday.", format="text")
    query = "deploy approvals thursday"
    hits = note_search(owner=owner, query=query, signals=("keyword",))

    # One passage a note: its title, then its text (memories.notes.chunking.passage_for_embedding).
    passages = [NoteChunk.objects.get(note=note).text for note in written]
    assert passages[0] == f"Note 0\n{texts[0]}"
    analyses = analyse(passages)
    query_terms = set(analyse([query])[0].positions)
    documents = Counter(term for analysis in analyses for term in analysis.positions)
    # BM25 as the passages' full-text vectors count: a passage's length is its number of distinct lexemes.
    average = max(sum(len(analysis.positions) for analysis in analyses) / len(analyses), 1)
    expected = {}
    for note, analysis in zip(written, analyses, strict=True):
        score = 0.0
        for term in query_terms & set(analysis.positions):
            idf = math.log(1 + (len(passages) - documents[term] + 0.5) / (documents[term] + 0.5))
            tf = analysis.positions[term].count(",") + 1
            length = len(analysis.positions)
            score += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average))
        if score:
            expected[note.pk] = pytest.approx(score, abs=1e-6)
    assert {hit.note.pk: hit.signals["keyword"]["score"] for hit in hits} == expected


@pytest.mark.django_db
def test_a_query_of_stop_words_alone_finds_no_passage_by_keyword(owner, indexed):
    indexed(owner, TITLE, CONTENT)
    assert note_search(owner=owner, query="the and of", signals=("keyword",)) == []


@pytest.mark.django_db
def test_a_ciphertext_copied_into_another_notes_row_does_not_open(owner, indexed):
    planted = indexed(owner, TITLE, CONTENT)
    neighbour = indexed(owner, "Neighbour", "Another note of the same space.")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_note SET content = (SELECT content FROM memories_note WHERE id = %s) WHERE id = %s",
            [planted.pk, neighbour.pk],
        )
        cursor.execute(
            "UPDATE memories_note_chunk SET text = (SELECT text FROM memories_note_chunk WHERE note_id = %s "
            "ORDER BY id LIMIT 1) WHERE note_id = %s",
            [planted.pk, neighbour.pk],
        )
    reread = Note.objects.get(pk=neighbour.pk)
    assert isinstance(reread.content, UnreadableText) and unreadable_fields(reread) == ["content"]
    assert reread.title == "Neighbour"
    assert {tuple(unreadable_fields(chunk)) for chunk in NoteChunk.objects.filter(note=neighbour)} == {("text",)}
    assert Note.objects.get(pk=planted.pk).content == CONTENT


@pytest.mark.django_db
def test_sealed_note_texts_are_not_written_around_the_model(owner):
    note = notes.note_write(owner=owner, title=TITLE, content=CONTENT)
    with pytest.raises(TypeError, match="sealed"):
        Note.objects.filter(pk=note.pk).update(title="plain title")


@pytest.mark.django_db
def test_a_replaced_key_seals_the_notes_and_indexes_the_passages_again(owner, indexed):
    note = indexed(owner, TITLE, CONTENT)
    before = [(hit.note.pk, hit.start) for hit in note_search(owner=owner, query="ERR_7731Z", signals=("keyword",))]

    rotation_start(note.space_id)
    assert rotation_continue(note.space_id, retire_after=timedelta(0)) is None
    assert list(SpaceKey.objects.filter(space_id=note.space_id).values_list("version", flat=True)) == [2]
    assert (Note.objects.get(pk=note.pk).title, Note.objects.get(pk=note.pk).content) == (TITLE, CONTENT)
    assert {chunk.key_version for chunk in NoteChunk.objects.filter(note=note)} == {2}
    after = [(hit.note.pk, hit.start) for hit in note_search(owner=owner, query="ERR_7731Z", signals=("keyword",))]
    assert after == before != []
