"""extract_entities and entity_key: the rule-based entities of one memory, from its facts, its tags
and its text. No database: plain functions over strings."""

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.entities.extraction import MAX_ENTITIES, Mention, entity_key, extract_entities
from memories.vocabulary import KINDS
from tests.fuzzing import HOSTILE_STRINGS, fuzz_settings

CAROLINE = "Caroline: I went to the LGBTQ support group yesterday and it was so powerful."
DEPLOY = (
    "Deploy of api v2.3.1 failed with ERR-4312 on db-primary-2.larkspur.internal; see "
    "https://grafana.example.com/d/abc and /etc/nginx/nginx.conf. @priya fixed it in commit 3f9a2c1."
)
BILLING = (
    "PROJECT=billing|TOPIC=staging database|STACK=PostgreSQL 16, port 5433|"
    "DECISION=PgBouncer transaction pooling (Priya)|PERSON=Priya Raman"
)


def found(text: str = "", **sources) -> list[tuple[str, str]]:
    """(kind, name) of each entity, in order."""
    return [(mention.kind, mention.name) for mention in extract_entities(text, **sources)]


def names(text: str = "", **sources) -> list[str]:
    return [mention.name for mention in extract_entities(text, **sources)]


def assert_well_formed(mentions: list[Mention]) -> None:
    assert len(mentions) <= MAX_ENTITIES
    assert len({mention.key for mention in mentions}) == len(mentions)
    for mention in mentions:
        assert mention.key and len(mention.key) <= 100
        assert mention.key == entity_key(mention.name)
        assert mention.name and mention.name == mention.name.strip() and len(mention.name) <= 200
        assert mention.kind in KINDS
        assert mention.source in ("text", "tag") or mention.source.startswith("fact:")


# A chat turn and a technical note.


def test_it_takes_a_speaker_label_as_a_person_and_nothing_from_chat_filler():
    assert extract_entities(CAROLINE) == [
        Mention(key="caroline", name="Caroline", kind="person", source="text"),
        Mention(key="lgbtq", name="LGBTQ", kind="name", source="text"),
    ]


def test_it_finds_the_version_identifiers_hosts_path_and_handle_of_a_deploy_note():
    assert extract_entities(DEPLOY) == [
        Mention(key="api 2.3.1", name="api v2.3.1", kind="version", source="text"),
        Mention(key="err-4312", name="ERR-4312", kind="identifier", source="text"),
        Mention(
            key="db-primary-2.larkspur.internal", name="db-primary-2.larkspur.internal", kind="host", source="text"
        ),
        Mention(key="grafana.example.com", name="grafana.example.com", kind="host", source="text"),
        Mention(key="/etc/nginx/nginx.conf", name="/etc/nginx/nginx.conf", kind="path", source="text"),
        Mention(key="@priya", name="@priya", kind="handle", source="text"),
        Mention(key="3f9a2c1", name="3f9a2c1", kind="identifier", source="text"),
    ]


# Capitalised words.


@pytest.mark.parametrize(
    "text",
    [
        "The meeting went well.",
        "Yesterday I said Thanks on Monday.",
        "Hey! Wow, that's great. Sure. Also, yeah. Oh well. However, Thanks!",
        "See you in March or May, on Tuesday afternoon.",
        "Happy Birthday! Congratulations!",
        "I'm sure I'll do it. I've done it, I'd say.",
        "OK, TODO: FYI ASAP at 9 AM, TBD.",
        "THIS IS SO COOL",
        "Note: rotate the keys.\nSummary: all good.",
    ],
)
def test_common_capitalised_words_are_no_entities(text):
    assert extract_entities(text) == []


def test_a_single_word_that_opens_a_sentence_counts_only_when_capitalised_elsewhere():
    assert names("Priya fixed it.") == []
    assert names("Priya fixed it. Then we thanked Priya.") == ["Priya"]
    assert names("Deploy failed. Deploy again after lunch.") == []
    assert names('He clicked "Save" twice.') == []
    assert names("1. Install the agent\n2. Configure it") == []


def test_a_run_of_capitalised_words_is_one_name():
    assert names("Priya Raman fixed it.") == ["Priya Raman"]
    assert names("We met Ludwig van Beethoven at the Bank of America.") == ["Ludwig van Beethoven", "Bank of America"]
    assert names("My friend Jean-Luc O'Brien lives in New York City.") == ["Jean-Luc O'Brien", "New York City"]


def test_a_common_word_or_stopword_before_a_name_is_not_part_of_it():
    assert names("Ask Priya about it.") == ["Priya"]
    assert names("Thanks Caroline!") == ["Caroline"]
    assert names("Yesterday Melanie painted a lake.") == ["Melanie"]
    assert names("Dr. Smith met Tom on Tuesday.") == ["Smith", "Tom"]


def test_a_speaker_label_at_the_start_of_a_line_is_a_person():
    transcript = "Melanie: Hey Caroline! I painted a lake.\n- Caroline: Wow, Mel!\n[10:32] Priya Raman: nice"
    assert found(transcript) == [
        ("person", "Melanie"),
        ("person", "Caroline"),
        ("name", "Mel"),
        ("person", "Priya Raman"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Note: rotate the keys.",
        "Summary: fine. The summary went to the team.",
        "Ingredients: flour and sugar.",
        "User: hello\nAssistant: hi",
        "Monday: standup",
        "TODO: check",
        "see https://example.org:8080",
    ],
)
def test_a_heading_label_is_no_speaker(text):
    assert [kind for kind, _ in found(text)].count("person") == 0


def test_mixed_case_words_and_acronyms_are_names():
    assert found("We added an OAuth proxy for the LGBTQ group and the iPhone app on AWS.") == [
        ("name", "OAuth"),
        ("name", "LGBTQ"),
        ("name", "iPhone"),
        ("technology", "AWS"),
    ]


def test_shouting_and_noise_acronyms_are_no_names():
    assert names("THE SERVER IS DOWN AGAIN! AWS is fine, OK? FYI the PR is WIP.") == ["AWS"]


def test_known_technologies_are_found_in_any_case():
    assert found("We run redis and Kubernetes; PgBouncer sits before PostgreSQL.") == [
        ("technology", "redis"),
        ("technology", "Kubernetes"),
        ("technology", "PgBouncer"),
        ("technology", "PostgreSQL"),
    ]


def test_aliases_and_plurals_and_possessives_merge_into_one_entity():
    assert found("postgres, then Postgres and PostgreSQL; k8s and Kubernetes.") == [
        ("technology", "postgres"),
        ("technology", "k8s"),
    ]
    assert found("I met Caroline's sister, then Caroline.") == [("name", "Caroline")]
    assert extract_entities("", facts="TOPIC=databases", tags=["database"]) == [
        Mention(key="database", name="databases", kind="topic", source="fact:TOPIC")
    ]


# Versions.


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Deploy of api v2.3.1 failed.", [("version", "api v2.3.1")]),
        ("We upgraded to 2.3.1 today.", [("version", "2.3.1")]),
        ("We shipped v1.10 last week.", [("version", "v1.10")]),
        ("Larkspur 2.0.0-rc1 is out.", [("version", "Larkspur 2.0.0-rc1")]),
        ("We run Python 3.12 now.", [("technology", "Python"), ("version", "Python 3.12")]),
        ("It runs on PostgreSQL 16.", [("technology", "PostgreSQL"), ("version", "PostgreSQL 16")]),
        (
            "On iOS 17 with TLS 1.3.",
            [("technology", "iOS"), ("version", "iOS 17"), ("name", "TLS"), ("version", "TLS 1.3")],
        ),
    ],
)
def test_a_clear_version_is_found_and_attached_to_its_product(text, expected):
    assert found(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "it took 3.5 hours",
        "they cost 4.99 each",
        "the router at 192.168.1.1",
        "due on 14.03.2025",
        "the v2 of the form",
        "version 2.0 shipped",
        "listen on port 5433",
        "about 16 people",
    ],
)
def test_a_number_that_is_not_clearly_a_version_is_none(text):
    assert extract_entities(text) == []


def test_a_number_in_units_after_a_technology_is_no_version():
    assert found("Redis 7 GB of memory") == [("technology", "Redis")]


# Identifiers, hosts, paths and handles.


def test_identifiers_keep_their_case_and_are_looked_up_in_any_case():
    mentions = extract_entities("See JIRA-1234, TP-4312 and CVE-2024-3094 (UTF-8 is fine).")
    assert [(mention.kind, mention.name) for mention in mentions] == [
        ("identifier", "JIRA-1234"),
        ("identifier", "TP-4312"),
        ("identifier", "CVE-2024-3094"),
    ]
    assert entity_key("err-4312") == entity_key("ERR-4312") == "err-4312"


def test_commit_hashes_need_digits_and_letters_and_uuids_are_identifiers():
    text = "commit a1b2c3d4e5f6, not 1234567 or deadbeef; run 550e8400-e29b-41d4-a716-446655440000"
    assert found(text) == [
        ("identifier", "a1b2c3d4e5f6"),
        ("identifier", "550e8400-e29b-41d4-a716-446655440000"),
    ]


def test_hosts_are_lower_case_and_keyed_without_www():
    mentions = extract_entities("Visit WWW.Example.org, https://Grafana.example.com:3000/d/x and db-1.corp.internal.")
    assert [(mention.kind, mention.name, mention.key) for mention in mentions] == [
        ("host", "www.example.org", "example.org"),
        ("host", "grafana.example.com", "grafana.example.com"),
        ("host", "db-1.corp.internal", "db-1.corp.internal"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "edit models.py and README.md, e.g. with node.js",
        "open http://localhost:8000/admin or http://127.0.0.1:8000",
        "mail priya@example.com",
        "done.Then we left",
    ],
)
def test_file_names_local_addresses_and_mail_addresses_are_no_hosts(text):
    assert extract_entities(text) == []


@pytest.mark.parametrize(
    "path",
    [
        "/etc/nginx/nginx.conf",
        "/var/log/",
        "/config.yaml",
        "src/app/models.py",
        "src/app/",
        "~/.config/x.toml",
        "./scripts/run.sh",
        "../README.md",
        "C:\\Users\\priya\\notes.txt",
    ],
)
def test_a_path_is_found_whole(path):
    assert found(f"Look at {path}, please.") == [("path", path)]


@pytest.mark.parametrize("text", ["and/or", "TCP/IP", "24/7", "12/05/2024", "type /help", "1/2 cup", "w/o sugar"])
def test_a_slash_alone_makes_no_path(text):
    assert [kind for kind, _ in found(text)].count("path") == 0


def test_the_words_inside_a_url_or_a_path_are_not_read_again():
    assert found("see https://github.com/Priya/Redis and /opt/Redis/Priya.conf") == [
        ("host", "github.com"),
        ("path", "/opt/Redis/Priya.conf"),
    ]


def test_handles_are_not_mail_addresses_decorators_or_broadcasts():
    assert names("Thanks @priya and @tom-lee.") == ["@priya", "@tom-lee"]
    code = "mail priya@example.com; @dataclass(frozen=True) and @app.route('/'); ping @here; icon@2x.png"
    assert [kind for kind, _ in found(code)].count("handle") == 0


# entity_key.


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("  Priya\t Raman ", "priya raman"),
        ("“Atlas”", "atlas"),
        ("Caroline's", "caroline"),
        ("Databases", "database"),
        ("staging databases", "staging database"),
        ("policies", "policy"),
        ("branches", "branch"),
        ("caches", "cache"),
        ("movies", "movie"),
        ("status", "status"),
        ("Redis", "redis"),
        ("Kubernetes", "kubernetes"),
        ("class", "class"),
        ("analysis", "analysis"),
        ("AWS", "aws"),
        ("Postgres", "postgresql"),
        ("PG", "postgresql"),
        ("k8s", "kubernetes"),
        ("JS", "javascript"),
        ("TypeScript", "typescript"),
        ("ts", "typescript"),
        ("gh", "github"),
        ("py", "python"),
        ("golang", "go"),
        ("Postgres 16", "postgresql 16"),
        ("api v2.3.1", "api 2.3.1"),
        ("v2.3.1", "2.3.1"),
        ("v2", "v2"),
        ("www.Example.org", "example.org"),
        ("/var/logs/", "/var/logs"),
        ("src/Models.py", "src/models.py"),
        ("@Priya", "@priya"),
        ("ERR-4312s", "err-4312s"),
        ("Stra\u00dfe", "strasse"),
        ("\uff21\uff37\uff33", "aws"),
        ("", ""),
        (" ... ", ""),
    ],
)
def test_entity_key_normalises_a_name_as_the_extractor_does(name, key):
    assert entity_key(name) == key


# Facts and tags.


def test_it_reads_the_named_items_of_the_facts_and_the_text_of_their_sentences():
    assert extract_entities("", facts=BILLING) == [
        Mention(key="billing", name="billing", kind="project", source="fact:PROJECT"),
        Mention(key="staging database", name="staging database", kind="topic", source="fact:TOPIC"),
        Mention(key="postgresql", name="PostgreSQL", kind="technology", source="fact:STACK"),
        Mention(key="postgresql 16", name="PostgreSQL 16", kind="version", source="fact:STACK"),
        Mention(key="priya raman", name="Priya Raman", kind="person", source="fact:PERSON"),
        Mention(key="pgbouncer", name="PgBouncer", kind="technology", source="fact:DECISION"),
        Mention(key="priya", name="Priya", kind="name", source="fact:DECISION"),
    ]


def test_fact_values_are_split_into_items_without_parentheticals():
    facts = "PERSON=Kofi (organiser), Priya and Tom & Ana; the landlord|PLACE=Lisbon, Portugal.|DATE=2025-05-14"
    assert found(facts=facts) == [
        ("person", "Kofi"),
        ("person", "Priya"),
        ("person", "Tom"),
        ("person", "Ana"),
        ("person", "landlord"),
        ("place", "Lisbon"),
        ("place", "Portugal"),
    ]


def test_fact_items_that_are_numbers_dates_settings_or_sentences_are_not_taken_whole():
    facts = (
        "PROJECT=2025|PERSON=2025-03-01, me|STACK=16 GB RAM, port 5433, S3|"
        "TOPIC=how we moved the billing database over to the new Postgres cluster"
    )
    assert extract_entities("", facts=facts) == [
        Mention(key="s3", name="S3", kind="technology", source="fact:STACK"),
        Mention(key="postgresql", name="Postgres", kind="technology", source="fact:TOPIC"),
    ]


@pytest.mark.parametrize(
    "facts",
    [
        "",
        "|||",
        "no equals sign here",
        "PERSON=",
        "=Priya",
        "PERSON",
        "person=Priya",
        "PERSON==",
        "PERSON=()",
        "PERSON=,,, and ; &",
        "\x00=\x00|PERSON=\x00",
        "PERSON=" + "x" * 200,
        "PERSON=" + "Priya, " * 100,
        "|".join(["FACT=x"] * 500),
    ],
)
def test_malformed_facts_never_raise(facts):
    mentions = extract_entities("", facts=facts)
    assert_well_formed(mentions)
    assert all(mention.name != "Priya" or mention.kind == "person" for mention in mentions)


def test_tags_are_entities_and_a_namespace_gives_the_kind():
    tags = ["project:atlas", "person:priya", "tech:k8s", "client:acme", "bench", "tests", "project:", "  "]
    assert extract_entities("", tags=tags) == [
        Mention(key="atlas", name="atlas", kind="project", source="tag"),
        Mention(key="priya", name="priya", kind="person", source="tag"),
        Mention(key="kubernetes", name="k8s", kind="technology", source="tag"),
        Mention(key="client:acme", name="client:acme", kind="tag", source="tag"),
        Mention(key="bench", name="bench", kind="tag", source="tag"),
        Mention(key="test", name="tests", kind="tag", source="tag"),
    ]


def test_a_fact_or_tag_wins_over_the_text_but_the_text_lends_its_spelling_to_a_tag():
    assert extract_entities("I love Python.", tags=["python"]) == [
        Mention(key="python", name="Python", kind="tag", source="tag")
    ]
    assert extract_entities("Caroline: hi", facts="PERSON=caroline") == [
        Mention(key="caroline", name="caroline", kind="person", source="fact:PERSON")
    ]


def test_facts_come_first_then_tags_then_the_text_by_first_position():
    mentions = extract_entities("Redis and Priya, then @tom.", facts="PERSON=Kofi", tags=["ops"])
    assert [(mention.name, mention.source) for mention in mentions] == [
        ("Kofi", "fact:PERSON"),
        ("ops", "tag"),
        ("Redis", "text"),
        ("Priya", "text"),
        ("@tom", "text"),
    ]


def test_it_returns_at_most_max_entities_keeping_the_most_reliable():
    text = " ".join(f"@user{number}" for number in range(40))
    mentions = extract_entities(text, facts="PERSON=Kofi", tags=["ops"])
    assert len(mentions) == MAX_ENTITIES
    assert [mention.name for mention in mentions[:3]] == ["Kofi", "ops", "@user0"]
    assert mentions[-1].name == f"@user{MAX_ENTITIES - 3}"


# Robustness and speed.


@pytest.mark.parametrize(
    "text",
    [
        *HOSTILE_STRINGS,
        "😀" * 1000,
        "\x00\x01\x02 Caroline: \x7f",
        "A" * 50_000,
        "a." * 25_000,
        "a/" * 25_000,
        "@" * 50_000,
        "1." * 25_000,
        "a.com.." * 7_000,
        "Ab:\n" * 12_000,
        "Python 1 " * 5_000,
        "\u202eCaroline\u202c: ok",
    ],
)
def test_any_text_is_read_without_error(text):
    assert_well_formed(extract_entities(text, facts=text, tags=[text]))


def test_a_long_text_is_read_fast():
    text = "\n".join([CAROLINE, DEPLOY, "Melanie: Wow, we took the kids to Boston on Saturday with Redis 7."] * 200)
    text = text[:50_000]
    elapsed = []
    for _ in range(3):
        started = time.perf_counter()
        extract_entities(text)
        elapsed.append(time.perf_counter() - started)
    # A wide margin over the 50 ms budget: this catches a pattern gone quadratic, not a busy machine.
    assert min(elapsed) < 0.25


FRAGMENTS = [
    CAROLINE,
    DEPLOY,
    "Priya",
    " Raman",
    "'s ",
    ". ",
    ": ",
    "\n",
    " v2.3.1",
    " 16",
    "PostgreSQL",
    "https://",
    ".com",
    "/",
    "@",
    "-",
    "ERR-42",
    "Monday",
    "The ",
    "of ",
    "LGBTQ",
    "\x00",
    "😀",
]
TEXTS = st.lists(st.one_of(st.text(max_size=20), st.sampled_from(FRAGMENTS)), max_size=30).map("".join)


@fuzz_settings(300)
@given(
    text=TEXTS,
    facts=st.one_of(st.none(), st.text(max_size=80), TEXTS.map(lambda text: f"PERSON={text}|FACT={text}")),
    tags=st.lists(st.text(max_size=20), max_size=5),
)
def test_any_memory_gives_well_formed_entities(text, facts, tags):
    assert_well_formed(extract_entities(text, facts=facts, tags=tags))


@fuzz_settings(300)
@given(name=st.text(max_size=120))
def test_entity_key_never_raises(name):
    key = entity_key(name)
    assert key == " ".join(key.split())


@fuzz_settings(300)
@given(name=st.text(alphabet="abcXYZ sS'.-_/@019", max_size=40))
def test_entity_key_ignores_case(name):
    assert entity_key(name.upper()) == entity_key(name.lower())


def test_the_entity_table_stores_every_kind_the_extractor_makes():
    from memories.models import EntityKind

    assert list(EntityKind.values) == list(KINDS)
