"""Searches that leave things out: `exclude` and negation read in the query. The memories about the
left-out thing go, those naming it in passing stay, a query without negation ranks as before, and
bad input is refused clearly."""

from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from gnosem.errors import ValidationError
from memories import services
from memories.models import MasterKeyCheck, ServingModel
from memories.search.pipeline import search_hybrid
from tests.memories.search.test_pipeline import Corpus

# Postgres is the nearest topic to every database question here: most memories are about it.
DATABASES = {
    "pg_vacuum": "The billing service's Postgres database has autovacuum tuned for the invoices table.",
    "pg_upgrade": "We upgraded Postgres from 15 to 16 on the main cluster in March.",
    "pg_pool": "Postgres connections go through PgBouncer in transaction mode, 200 at most.",
    "pg_alias": "PG replicas lag by about two seconds during the nightly batch.",
    "pg_tagged": "Point-in-time recovery keeps seven days of WAL archives.",
    "mysql": "The analytics warehouse runs on MySQL 8 with two read replicas.",
    "mongo": "MongoDB holds the product catalogue because its documents change shape often.",
    "moved": "We moved the session store off Postgres to Redis last spring to cut latency.",
    "sqlite": "The desktop app keeps its offline cache in SQLite.",
    "cat": "Ana's cat is called Miso and she is allergic to chicken-based food.",
}
TAGS = {"pg_tagged": ["postgres"]}
ABOUT_POSTGRES = {"pg_vacuum", "pg_upgrade", "pg_pool", "pg_alias", "pg_tagged"}


@pytest.fixture(scope="module")
def databases(django_db_setup, django_db_blocker) -> Iterator[Corpus]:
    """DATABASES written and embedded once for the module, taken away after it (see test_pipeline's corpus)."""
    with django_db_blocker.unblock():
        recorded = {model: model.objects.exists() for model in (ServingModel, MasterKeyCheck)}
        owner = get_user_model().objects.create_user(username="exclusion-owner")
        with transaction.atomic():
            memories = {
                key: services.memory_write(owner=owner, content=text, tags=TAGS.get(key))
                for key, text in DATABASES.items()
            }
            services.memories_index(memory_ids=[memory.pk for memory in memories.values()])
    yield Corpus(owner=owner, memories=memories)
    with django_db_blocker.unblock():
        owner.delete()
        for model in (model for model, existed in recorded.items() if not existed):
            model.objects.all().delete()


def found(databases: Corpus, **search) -> list[str]:
    return databases.keys(search_hybrid(owner=databases.owner, top_k=10, half_life_days=0, **search))


@pytest.mark.django_db
def test_without_exclusion_the_left_out_topic_is_among_the_first(databases):
    assert ABOUT_POSTGRES & set(found(databases, query="which databases do we run")[:5])


@pytest.mark.django_db
def test_exclude_leaves_out_what_is_about_the_thing_and_keeps_passing_mentions(databases):
    results = found(databases, query="which databases do we run", exclude=["Postgres"])
    assert not ABOUT_POSTGRES & set(results), results
    assert {"mysql", "mongo", "sqlite", "moved"} <= set(results)


@pytest.mark.django_db
def test_negation_in_the_query_reads_as_exclude(databases):
    with_negation = found(databases, query="which databases do we run that are not Postgres")
    assert not ABOUT_POSTGRES & set(with_negation)
    assert with_negation == found(databases, query="which databases do we run", exclude=["postgres"])


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    [
        "databases other than Postgres",
        "databases except Postgres",
        "besides Postgres, which databases do we run",
        "databases apart from PG",
        "databases excluding Postgres",
        "non-Postgres databases",
        "databases -Postgres",
    ],
)
def test_each_form_of_negation_leaves_the_topic_out(databases, query):
    results = found(databases, query=query)
    assert results and not ABOUT_POSTGRES & set(results), results


@pytest.mark.django_db
def test_a_query_without_negation_ranks_as_before(databases):
    """Searched with no exclusion, the same query and options rank the same memories the same way."""
    for query in ("why is the replication not working", "which databases do we run", "404 Not Found", "Miso"):
        plain = search_hybrid(owner=databases.owner, query=query, top_k=10)
        with_empty = search_hybrid(owner=databases.owner, query=query, top_k=10, exclude=[])
        # The same memories in the same order, with the same scores to five decimals: under a full
        # test run, two identical searches have differed in the sixth.
        assert [hit.memory.pk for hit in plain] == [hit.memory.pk for hit in with_empty]
        assert [hit.score for hit in plain] == pytest.approx([hit.score for hit in with_empty], abs=1e-5)
        assert all("exclusion" not in hit.explanation for hit in plain)


@pytest.mark.django_db
def test_explain_says_why_a_passing_mention_was_kept(databases):
    hits = search_hybrid(owner=databases.owner, query="which databases do we run", exclude=["Postgres"], top_k=10)
    moved = next(hit for hit in hits if hit.memory.pk == databases.memories["moved"].pk)
    assert moved.explanation["exclusion"] == {"things": ["Postgres"], "read": "named in passing", "factor": 1.0}


@pytest.mark.django_db
def test_a_tag_is_left_out(databases):
    assert "pg_tagged" not in found(databases, query="WAL archives recovery", exclude=["postgres"])
    assert "pg_tagged" in found(databases, query="WAL archives recovery")


@pytest.mark.django_db
def test_excluding_everything_answers_empty(databases):
    everything = ["Postgres", "MySQL", "MongoDB", "Redis", "SQLite", "Miso", "Ana"]
    assert found(databases, query="databases", exclude=everything) == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("exclude", "message"),
    [
        ("Postgres", "must be a list"),
        ([""], "empty item"),
        (["   "], "empty item"),
        ([1], "must be a list"),
        (["x" * 101], "longer than 100"),
        ([f"thing {number}" for number in range(11)], "at most 10"),
        (["a\x00b"], "NUL"),
    ],
)
def test_bad_exclude_is_refused_clearly(databases, exclude, message):
    with pytest.raises(ValidationError, match=message) as refused:
        search_hybrid(owner=databases.owner, query="databases", exclude=exclude)
    assert refused.value.field == "exclude"


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["not Postgres", "anything but Postgres", "-E503"])
def test_a_query_that_is_only_a_negation_is_refused(databases, query):
    with pytest.raises(ValidationError, match="only what to leave out"):
        search_hybrid(owner=databases.owner, query=query)


@pytest.mark.django_db
def test_a_stranger_excluding_finds_nothing_of_the_owner(databases, stranger):
    services.memory_write(owner=stranger, content="The stranger's own MySQL note.")
    hits = search_hybrid(owner=stranger, query="which databases do we run", exclude=["Postgres"])
    assert all(hit.memory.space.owner_id == stranger.pk for hit in hits)
    assert not {hit.memory.pk for hit in hits} & {memory.pk for memory in databases.memories.values()}
