"""search_hybrid, the search pipeline: memories found by meaning and by exact words, filters, the
number of results, bad input, owners kept apart, and scores in (0, 1] with their breakdown."""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from gnosem.errors import ValidationError
from memories import services
from memories.models import MasterKeyCheck, Memory, ServingModel
from memories.search.pipeline import search_hybrid
from memories.selectors import MemoryFilters

# Near neighbours on purpose: each identifier has a look-alike, so only exact words tell them apart.
CORPUS = {
    "port": "The staging database listens on port 5433 because 5432 is taken by the legacy cluster.",
    "cat": "Ana's cat is called Miso and she is allergic to chicken-based food.",
    "deploy": "Deploys to production happen on Tuesdays after the change advisory board approves them.",
    "error": "The payment service fails with error code E_CONN_RESET_42 when the upstream proxy times out.",
    "error_twin": "The payment service fails with error code E_TIMEOUT_17 when the database is slow.",
    "sha": "The regression was introduced in commit 9f3c2ab, which changed the retry loop.",
    "sha_twin": "The fix landed in commit 1b7e0d4, which reverted the retry loop change.",
    "version": "We pinned the HTTP client library to version 4.2.1 because 4.3.0 broke pagination.",
    "version_twin": "We upgraded the HTTP client library to version 5.0.2 last week.",
    "ticket": "Ticket OPS-4471 tracks the flaky payment webhook.",
    "ticket_twin": "Ticket OPS-4390 tracks the slow dashboard export.",
    "coffee": "The user prefers oat milk flat whites and dislikes sugary drinks.",
    "vacation": "Maria is on vacation in Lisbon from August 3 to August 17.",
    "python": "The team settled on Python 3.12 and uv for dependency management.",
}


def write_all(owner, contents: dict[str, str], **kwargs) -> dict[str, Memory]:
    """Write and index the memories, embedding them in one batch."""
    with transaction.atomic():
        memories = {key: services.memory_write(owner=owner, content=text, **kwargs) for key, text in contents.items()}
        services.memories_index(memory_ids=[memory.pk for memory in memories.values()])
    return memories


@dataclass(frozen=True)
class Corpus:
    owner: object
    memories: dict[str, Memory]

    def keys(self, hits) -> list[str]:
        by_pk = {memory.pk: key for key, memory in self.memories.items()}
        return [by_pk.get(hit.memory.pk, "?") for hit in hits]


@pytest.fixture(scope="module")
def corpus(django_db_setup, django_db_blocker) -> Iterator[Corpus]:
    """CORPUS written and embedded once for the module (embedding is the slow part); tests that
    add memories do so inside their own rolled-back transaction.

    What it commits outlives every test's rollback, so it takes all of it away again: the owner
    (with their memories, vectors, statistics and space keys), the serving model row that indexing
    the first memories of an empty database records, and the record of the master key that first
    sealing makes. Left behind, the first would pin search to all-MiniLM-L6-v2 for later tests that
    configure another model, the second would refuse the master keys the encryption tests set."""
    with django_db_blocker.unblock():
        recorded = {model: model.objects.exists() for model in (ServingModel, MasterKeyCheck)}
        owner = get_user_model().objects.create_user(username="corpus-owner")
        memories = write_all(owner, CORPUS)
    yield Corpus(owner=owner, memories=memories)
    with django_db_blocker.unblock():
        owner.delete()
        for model in (model for model, existed in recorded.items() if not existed):
            model.objects.all().delete()


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Who is away on holiday in Portugal?", "vacation"),
        ("Which weekday do we ship releases?", "deploy"),
        ("What animal does the woman own?", "cat"),
        ("What kind of coffee should I order for them?", "coffee"),
    ],
)
def test_a_paraphrased_question_finds_the_memory_by_meaning(db, corpus, question, expected):
    hits = search_hybrid(owner=corpus.owner, query=question)
    assert corpus.keys(hits)[0] == expected
    # No word of the question is in the memory: meaning alone found it.
    assert hits[0].signals.keys() == {"vector"}
    assert hits[0].signals["vector"]["rank"] == 1


@pytest.mark.parametrize(
    ("identifier", "expected", "twin"),
    [
        ("E_CONN_RESET_42", "error", "error_twin"),
        ("9f3c2ab", "sha", "sha_twin"),
        ("4.2.1", "version", "version_twin"),
        ("OPS-4471", "ticket", "ticket_twin"),
    ],
)
def test_an_exact_identifier_finds_its_memory_first_by_keyword(db, corpus, identifier, expected, twin):
    hits = search_hybrid(owner=corpus.owner, query=identifier)
    found = corpus.keys(hits)
    assert found[0] == expected
    assert hits[0].signals["keyword"]["rank"] == 1
    assert found.index(twin) > 0


def test_a_memory_not_yet_embedded_is_found_by_keyword(db, corpus):
    waiting = services.memory_write(owner=corpus.owner, content="Rotate the PagerDuty key ZX-990 every quarter.")
    hits = search_hybrid(owner=corpus.owner, query="ZX-990 PagerDuty")
    assert hits[0].memory == waiting
    assert hits[0].signals.keys() == {"keyword"}
    assert waiting.chunks.count() == 0


def test_search_answers_before_anything_is_embedded(owner):
    memory = services.memory_write(owner=owner, content="The Wi-Fi password at the office is hunter2.")
    hits = search_hybrid(owner=owner, query="office wi-fi password")
    assert [hit.memory for hit in hits] == [memory]


def test_a_query_of_stop_words_only_still_answers_by_meaning(db, corpus):
    hits = search_hybrid(owner=corpus.owner, query="the of and")
    assert hits
    assert all(hit.signals.keys() == {"vector"} for hit in hits)


@pytest.mark.parametrize(
    "query", ["'); DROP TABLE memories_memory; --", "foo:* & !bar | (baz)", "C:\\path\\file", "%s %(owner)s {filters}"]
)
def test_query_syntax_characters_are_plain_text(owner, query):
    memory = write_all(owner, {"odd": f"note about {query} here"})["odd"]
    hits = search_hybrid(owner=owner, query=query)
    assert hits[0].memory == memory
    assert Memory.objects.filter(space__personal_of=owner).count() == 1


def test_tags_filter_keeps_only_memories_with_all_the_tags(owner, index):
    tagged, *_ = index(
        services.memory_write(
            owner=owner, content="Deploy checklist for the billing service.", tags=["billing", "ops"]
        ),
        services.memory_write(owner=owner, content="Deploy checklist for the search service.", tags=["search", "ops"]),
        services.memory_write(
            owner=owner, content="Deploy checklist for the monthly billing PDF exports.", tags=["billing"]
        ),
    )
    assert len(search_hybrid(owner=owner, query="deploy checklist")) == 3
    hits = search_hybrid(owner=owner, query="deploy checklist", filters=MemoryFilters(tags=("billing", "ops")))
    assert [hit.memory for hit in hits] == [tagged]


def test_written_by_filter_keeps_only_that_clients_memories(owner, index):
    from_cursor, _ = index(
        services.memory_write(owner=owner, content="Use tabs in the Makefile.", written_by="cursor"),
        services.memory_write(owner=owner, content="Use spaces in the Python files.", written_by="claude-code"),
    )
    assert len(search_hybrid(owner=owner, query="indentation style")) == 2
    hits = search_hybrid(owner=owner, query="indentation style", filters=MemoryFilters(written_by="cursor"))
    assert [hit.memory for hit in hits] == [from_cursor]


def test_date_filters_bound_the_creation_time(owner, index):
    def at(day: int) -> datetime:
        return datetime(2025, 6, day, 12, tzinfo=UTC)

    days = (1, 10, 20)
    memories = dict(
        zip(
            days,
            index(
                *(
                    services.memory_write(
                        owner=owner, content=f"Stand-up notes about the release, day {day}.", created_at=at(day)
                    )
                    for day in days
                )
            ),
            strict=True,
        )
    )
    assert memories[1].created_at == at(1)

    def found(**bounds) -> set[int]:
        hits = search_hybrid(owner=owner, query="release stand-up notes", filters=MemoryFilters(**bounds))
        return {day for day, memory in memories.items() if memory in [hit.memory for hit in hits]}

    assert found() == {1, 10, 20}
    assert found(created_after=at(10)) == {10, 20}  # inclusive
    assert found(created_before=at(10)) == {1}  # exclusive
    assert found(created_after=at(2), created_before=at(20)) == {10}
    assert found(created_after=at(21)) == set()


def test_top_k_limits_the_results(db, corpus):
    assert len(search_hybrid(owner=corpus.owner, query="payment service", top_k=2)) == 2
    assert len(search_hybrid(owner=corpus.owner, query="payment service")) == 10  # the default
    assert len(search_hybrid(owner=corpus.owner, query="payment service", top_k=50)) == len(CORPUS)


@pytest.mark.parametrize("query", ["", "   \n", None, 42, ["payment"], "x" * 2001])
def test_a_bad_query_is_a_validation_error(owner, query):
    with pytest.raises(ValidationError) as caught:
        search_hybrid(owner=owner, query=query)
    assert caught.value.field == "query"


@pytest.mark.parametrize("top_k", [0, -1, 51, "5", 2.5, True])
def test_a_bad_top_k_is_a_validation_error(owner, top_k):
    with pytest.raises(ValidationError) as caught:
        search_hybrid(owner=owner, query="payment", top_k=top_k)
    assert caught.value.field == "top_k"


def test_a_stranger_never_finds_the_owners_memories(stranger, corpus):
    assert search_hybrid(owner=stranger, query="OPS-4471") == []
    assert search_hybrid(owner=stranger, query="Who is away on holiday in Portugal?") == []
    theirs = write_all(stranger, {"m": "My own note about OPS-4471."})["m"]
    assert [hit.memory for hit in search_hybrid(owner=stranger, query="OPS-4471", top_k=50)] == [theirs]
    assert theirs not in [hit.memory for hit in search_hybrid(owner=corpus.owner, query="OPS-4471", top_k=50)]


def test_another_owners_memories_do_not_change_the_owners_scores(stranger, corpus):
    now = datetime.now(UTC)  # one reference time: recency decay would otherwise move with the clock

    def results() -> list[tuple]:
        hits = search_hybrid(owner=corpus.owner, query="payment webhook fails", top_k=50, now=now)
        return [(hit.memory.pk, hit.score, hit.signals) for hit in hits]

    before = results()
    # Stranger memories full of the query's words would shift document frequencies and the
    # average document length if BM25 statistics leaked across owners.
    write_all(stranger, {f"s{i}": "payment webhook fails " * (i % 5 + 1) + f"incident {i}" for i in range(20)})
    assert results() == before


def test_scores_are_in_zero_one_and_results_are_ordered_by_them(db, corpus):
    hits = search_hybrid(owner=corpus.owner, query="payment service error", top_k=50)
    scores = [hit.score for hit in hits]
    assert all(0 < score <= 1 for score in scores)
    assert scores == sorted(scores, reverse=True)


def test_first_place_in_every_signal_scores_one(db, corpus):
    hits = search_hybrid(owner=corpus.owner, query="OPS-4471")
    assert hits[0].signals["keyword"]["rank"] == hits[0].signals["vector"]["rank"] == 1
    assert hits[0].score == pytest.approx(1.0)


def test_the_breakdown_names_the_signals_that_found_each_memory(db, corpus, settings):
    settings.GNOSEM_WEIGHT_GRAPH = 0.0  # graph expansion's breakdown: tests/memories/graph/test_graph.py
    waiting = services.memory_write(owner=corpus.owner, content="The payment webhook secret lives in the vault.")
    hits = {hit.memory.pk: hit for hit in search_hybrid(owner=corpus.owner, query="payment webhook", top_k=50)}
    assert hits[waiting.pk].signals.keys() == {"keyword"}  # not embedded yet
    assert hits[corpus.memories["ticket"].pk].signals.keys() == {"keyword", "vector"}
    assert hits[corpus.memories["cat"].pk].signals.keys() == {"vector"}  # shares no word with the query
    for hit in hits.values():
        for signal in hit.signals.values():
            assert signal.keys() == {"rank", "score"}
            assert signal["rank"] >= 1
