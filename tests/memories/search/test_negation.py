"""Reading negation in a query, and judging what a text is about for an exclusion: pure functions,
no database."""

import pytest

from gnosem.errors import ValidationError
from memories.search.exclusion import Excluded, judge
from memories.search.negation import read_query


@pytest.mark.parametrize(
    ("query", "searched", "excluded"),
    [
        ("which databases do we run that are not Postgres", "which databases do we run", ["Postgres"]),
        ("databases that are not Postgres?", "databases?", ["Postgres"]),
        ("clouds other than AWS and GCP in production", "clouds in production", ["AWS", "GCP"]),
        ("cities I visited except for Lisbon", "cities I visited", ["Lisbon"]),
        ("editors excluding vim", "editors", ["vim"]),
        ("besides Postgres, what stores data for us", "what stores data for us", ["Postgres"]),
        ("payment providers apart from Stripe", "payment providers", ["Stripe"]),
        ("hobbies aside from running", "hobbies", ["running"]),
        ("services we deploy without Docker", "services we deploy", ["Docker"]),
        ("non-Python services we deploy", "services we deploy", ["Python"]),
        ("anything but Python for the data jobs", "for the data jobs", ["Python"]),
        ("food memories from anywhere but Lisbon", "food memories from", ["Lisbon"]),
        ("who besides Marco handles approvals", "who handles approvals", ["Marco"]),
        ("anything but Python: what else do we write code in?", "what else do we write code in?", ["Python"]),
        ("what do I cook other than Italian food", "what do I cook", ["Italian"]),
        ("why did deploys fail, excluding the E503 ones", "why did deploys fail", ["E503"]),
        ("how we take payments, without counting Stripe", "how we take payments", ["Stripe"]),
        ("trips I've taken that were not to Lisbon", "trips I've taken", ["Lisbon"]),
        ("deploy failures -E503", "deploy failures", ["E503"]),
        (
            "notes about the API, not the mobile app or the web client",
            "notes about the API",
            ["mobile app", "web client"],
        ),
        ("incidents not related to the billing service", "incidents", ["billing service"]),
        ("What did James make besides omelette and meringue?", "What did James make?", ["omelette", "meringue"]),
        (
            "Which activity has John done apart from yoga at the studio?",
            "Which activity has John done at the studio?",
            ["yoga"],
        ),
    ],
)
def test_each_form_is_read(query, searched, excluded):
    reading = read_query(query)
    assert (reading.searched, list(reading.excluded)) == (searched, excluded)
    assert reading.negations


@pytest.mark.parametrize(
    "query",
    [
        "why is the build not working",
        "404 Not Found errors on the API",
        "error: command not found",
        "what does John not like?",
        "we can't deploy, not sure why",
        'what does "not Postgres" mean in the ADR',
        "game dev non-profit organization",
        "how do package upgrades merge without review?",
        "deploys that are not in a hurry",
        "ls -la output",
        "temperature -5 degrees",
        "the E503 outage -- what happened",
        "which databases do we run",
    ],
)
def test_no_negation_is_invented(query):
    reading = read_query(query)
    assert (reading.searched, reading.excluded, reading.negations) == (query, (), ())


def test_exclude_joins_the_negations_once():
    reading = read_query("databases other than Postgres", ("postgres", "MySQL"))
    assert reading.excluded == ("Postgres", "MySQL")


@pytest.mark.parametrize("query", ["not Postgres", "anything but Python", "-E503", "except for Lisbon"])
def test_a_query_that_only_negates_is_refused(query):
    with pytest.raises(ValidationError, match="only what to leave out"):
        read_query(query)


def test_the_reading_can_be_turned_off(settings):
    settings.GNOSEM_READ_NEGATION = False
    reading = read_query("databases other than Postgres", ("MySQL",))
    assert (reading.searched, reading.excluded) == ("databases other than Postgres", ("MySQL",))


def test_a_long_query_of_negations_reads_at_most_ten_things():
    query = "databases " + " ".join(f"except T{number}," for number in range(30))
    assert len(read_query(query).excluded) == 10


POSTGRES = [Excluded.of("Postgres")]


@pytest.mark.parametrize(
    ("text", "tags", "facts", "left_out", "read"),
    [
        ("Postgres autovacuum is tuned for the invoices table.", [], "", True, "named as its subject"),
        ("PG replicas lag by two seconds at night.", [], "", True, "named as its subject"),
        ("The postgresql cluster has 3 nodes.", [], "", True, "named as its subject"),
        ("Point-in-time recovery keeps 7 days of WAL.", ["postgres"], "", True, "tagged"),
        ("Nightly job summary.", [], "TOPIC=Postgres backups|DATE=nightly", True, "its topic"),
        ("We moved the session store off Postgres to Redis.", [], "", False, "named in passing"),
        ("Unlike Postgres, MongoDB takes documents of any shape.", [], "", False, "named in passing"),
        ("We replaced Postgres with MySQL for the analytics replica.", [], "", False, "named in passing"),
        ("Postgres was too slow for the event log, so Kafka keeps it.", [], "", False, "named in passing"),
        ("We moved off Postgres last year.", [], "", True, "named as its subject"),
        ("Redis caches the Postgres query results.", [], "", True, "named as its subject"),
        ("The analytics warehouse runs on MySQL 8.", [], "", False, None),
    ],
)
def test_a_text_is_judged_by_what_it_is_about(text, tags, facts, left_out, read):
    verdict = judge(text=text, tags=tags, facts=facts, excluded=POSTGRES)
    assert verdict.left_out is left_out
    assert (verdict.why or {}).get("read") == read


def test_a_longer_name_is_matched_whole_and_as_a_tag():
    excluded = [Excluded.of("mobile app")]
    assert judge(text="The mobile app ships weekly.", tags=[], facts="", excluded=excluded).left_out
    assert judge(text="Release notes.", tags=["mobile-app"], facts="", excluded=excluded).left_out
    assert not judge(text="The mobile web ships weekly.", tags=[], facts="", excluded=excluded).left_out


@pytest.mark.parametrize("thing", ["'", "...", "--"])
def test_a_thing_without_letters_or_digits_leaves_nothing_out(thing):
    verdict = judge(text="It's done -- for now...", tags=[], facts="", excluded=[Excluded.of(thing)])
    assert not verdict.left_out
