"""The MCP reference memory server's `memory.jsonl`: a graph the real server wrote is imported,
found by meaning and linked in the graph; Gnosem's memories exported to the format load in the
real server and read back whole; bad files are refused naming the line, nothing imported."""

import json

import pytest

from gnosem.errors import ValidationError
from memories import services
from memories.graph.explore import entity_find, graph_explore
from memories.models import Memory
from memories.search.pipeline import search_hybrid
from memories.transfer import importing
from memories.transfer.export import exported_space, mcp_memory_lines
from memories.transfer.formats import read_import_file
from tests.memories.transfer.peer_tools import server_memory

pytestmark = pytest.mark.django_db

ENTITIES = [
    {
        "name": "Alice Smith",
        "entityType": "person",
        "observations": ["Speaks fluent Spanish", "Prefers morning meetings"],
    },
    {"name": "Acme Corp", "entityType": "organization", "observations": []},
    {"name": "kestrel-ledger", "entityType": "project", "observations": ["Reconciles invoices nightly at 02:00"]},
]
RELATIONS = [
    {"from": "Alice Smith", "to": "Acme Corp", "relationType": "works_at"},
    {"from": "Alice Smith", "to": "kestrel-ledger", "relationType": "maintains"},
]


@pytest.fixture
def written_by_the_server(tmp_path) -> bytes:
    """A memory.jsonl the reference server wrote through its own tools."""
    memory_file = tmp_path / "memory.jsonl"
    server_memory(
        memory_file,
        [
            ("create_entities", {"entities": ENTITIES}),
            ("create_relations", {"relations": RELATIONS}),
            ("add_observations", {"observations": [{"entityName": "Acme Corp", "contents": ["Pays within 30 days"]}]}),
        ],
    )
    return memory_file.read_bytes()


def test_a_graph_the_reference_server_wrote_is_found_by_meaning_and_linked(owner, index, written_by_the_server):
    preview = import_file_preview(owner=owner, data=written_by_the_server)
    assert (preview.format, preview.records, preview.memories, preview.duplicates) == ("mcp-memory", 5, 6, 0)
    assert Memory.objects.count() == 0  # a preview writes nothing

    report = import_file(owner=owner, data=written_by_the_server)

    assert (report.format, report.records, report.imported, report.duplicates, report.skipped) == (
        "mcp-memory",
        5,
        6,
        0,
        (),
    )
    stored = {memory.content: memory for memory in index(*Memory.objects.all())}
    assert set(stored) == {
        "Alice Smith: Speaks fluent Spanish",
        "Alice Smith: Prefers morning meetings",
        "Acme Corp: Pays within 30 days",
        "kestrel-ledger: Reconciles invoices nightly at 02:00",
        "Alice Smith works at Acme Corp.",
        "Alice Smith maintains kestrel-ledger.",
    }
    relation = stored["Alice Smith works at Acme Corp."]
    assert relation.tags == ["person:alice-smith", "topic:acme-corp", "relation:works_at"]
    assert {memory.written_by for memory in stored.values()} == {""}
    assert search_hybrid(owner=owner, query="which languages does she talk")[0].memory.content == (
        "Alice Smith: Speaks fluent Spanish"
    )
    assert search_hybrid(owner=owner, query="02:00")[0].memory.content.startswith("kestrel-ledger")
    # The relation links the two entities in the graph.
    alice = entity_find(owner=owner, name="alice-smith")
    assert alice.kind == "person"
    neighbours = {node.entity.name for node in graph_explore(owner=owner, entity=alice.name, depth=1).nodes}
    assert {"acme-corp", "kestrel-ledger"} <= {name.casefold() for name in neighbours}


def test_the_same_file_imported_again_is_all_duplicates(owner, written_by_the_server):
    import_file(owner=owner, data=written_by_the_server)

    again = import_file(owner=owner, data=written_by_the_server, format="mcp-memory")

    assert (again.imported, again.duplicates) == (0, 6)
    assert Memory.objects.count() == 6


def test_an_export_loads_in_the_reference_server_and_reads_back_whole(owner, stranger, index, tmp_path):
    for text, tags in [
        ("Alice Smith: Speaks fluent Spanish", ["person:alice-smith"]),
        ("Alice Smith works at Acme Corp.", ["person:alice-smith", "topic:acme-corp", "relation:works_at"]),
        ("Acme Corp: Pays within 30 days", ["topic:acme-corp"]),
        ("The staging database moved to PostgreSQL 16 on db-billing-02.", []),
        ("Tuesday's standup is cancelled.", []),
    ]:
        index(services.memory_write(owner=owner, content=text, tags=tags))
    services.memory_write(owner=stranger, content="The stranger's own memory.")
    exported = tmp_path / "memory.jsonl"
    exported.write_text("".join(mcp_memory_lines(exported_space(owner))))

    (graph,) = server_memory(exported, [("read_graph", {})])

    written = [json.loads(line) for line in exported.read_text().splitlines()]
    fields = ("name", "entityType", "observations")
    assert graph["entities"] == [{key: item[key] for key in fields} for item in written if item["type"] == "entity"]
    assert graph["relations"] == [{"from": "Alice Smith", "to": "Acme Corp", "relationType": "works_at"}]
    people = {entity["name"]: entity for entity in graph["entities"]}
    assert people["Alice Smith"] == {
        "name": "Alice Smith",
        "entityType": "person",
        "observations": ["Speaks fluent Spanish"],
    }
    assert people["Acme Corp"]["observations"] == ["Pays within 30 days"]
    observations = [text for entity in graph["entities"] for text in entity["observations"]]
    # Every memory is there once (the relation as a relation); nothing of anyone else's.
    assert sorted(observations) == sorted(
        [
            "Speaks fluent Spanish",
            "Pays within 30 days",
            "The staging database moved to PostgreSQL 16 on db-billing-02.",
            "Tuesday's standup is cancelled.",
        ]
    )


def test_the_round_trip_through_the_format_keeps_every_memory(owner, stranger, written_by_the_server, tmp_path):
    import_file(owner=owner, data=written_by_the_server)
    exported = "".join(mcp_memory_lines(exported_space(owner))).encode()

    report = import_file(owner=stranger, data=exported)

    assert report.imported == 6
    assert {m.content for m in Memory.objects.filter(space__personal_of=stranger)} == {
        m.content for m in Memory.objects.filter(space__personal_of=owner)
    }


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"type":"entity","name":"A","entityType":"person","observations":[]}\n{"type":"entity","name":', "line 2"),
        (b'{"type":"entity","name":"A","entityType":"person","observations":["\xff"]}\n', "not UTF-8"),
        (b'{"type":"entity","name":"A","entityType":"person","observations":"x"}\n', "line 1"),
        (b'{"type":"entity","name":"","entityType":"person","observations":[]}\n', '"name" must be non-empty'),
        (b'{"type":"thing"}\n', "not an entity or a relation"),
        (b'{"type":"entity","name":"A","entityType":"person","observations":[' + b'"x",' * 10 + b"1]}\n", "line 1"),
        (b'{"type":"entity","name":"A","entityType":"p","observations":["' + b"x" * 60_000 + b'"]}', "50,000"),
        (b'{"type":"entity","name":"A","entityType":"p","observations":["' + b"x" * 1_100_000 + b'"]}', "longer than"),
    ],
)
def test_a_bad_file_is_refused_naming_the_line_and_nothing_is_imported(owner, data, message):
    with pytest.raises(ValidationError) as refused:
        import_file(owner=owner, data=data, format="mcp-memory")

    assert message in refused.value.message
    assert Memory.objects.count() == 0


def test_another_tools_file_read_as_this_format_and_a_50_mb_line_are_refused(owner):
    mem0_file = json.dumps({"results": [{"memory": "Likes tea"}]}).encode()
    fifty_megabytes = b'{"type":"entity","name":"A","entityType":"p","observations":["' + b"x" * 50_000_000 + b'"]}'

    for data, message in [(mem0_file, "line 1: not an entity or a relation"), (fifty_megabytes, "line 1: longer")]:
        with pytest.raises(ValidationError) as refused:
            import_file(owner=owner, data=data, format="mcp-memory")
        assert message in refused.value.message
    assert Memory.objects.count() == 0


def test_relations_in_a_cycle_import_as_they_are(owner):
    data = (
        b'{"type":"entity","name":"Ana","entityType":"person","observations":[]}\n'
        b'{"type":"entity","name":"Bo","entityType":"person","observations":[]}\n'
        b'{"type":"relation","from":"Ana","to":"Bo","relationType":"mentors"}\n'
        b'{"type":"relation","from":"Bo","to":"Ana","relationType":"mentors"}\n'
    )

    report = import_file(owner=owner, data=data)

    assert (report.imported, report.skipped) == (4, ())
    assert {memory.content for memory in Memory.objects.all()} >= {"Ana mentors Bo.", "Bo mentors Ana."}


def test_a_relation_to_an_entity_the_file_does_not_hold_is_left_out_and_named(owner):
    data = (
        b'{"type":"entity","name":"Alice","entityType":"person","observations":["Likes tea"]}\n'
        b'{"type":"relation","from":"Alice","to":"Nobody","relationType":"knows"}\n'
        b'{"type":"relation","from":"Alice","to":"Alice","relationType":"likes"}\n'
    )

    report = import_file(owner=owner, data=data)

    assert report.imported == 2
    assert report.skipped == ("line 2: the relation names 'Nobody', which is no entity of the file.",)


def test_an_import_never_touches_another_users_memories(owner, stranger, written_by_the_server):
    theirs = services.memory_write(owner=stranger, content="Alice Smith: Speaks fluent Spanish")

    report = import_file(owner=owner, data=written_by_the_server)

    assert report.duplicates == 0  # the stranger's same text is not the owner's
    assert list(Memory.objects.filter(space__personal_of=stranger)) == [theirs]


def test_the_file_format_is_recognised_or_refused_with_the_choices(owner):
    with pytest.raises(ValidationError) as refused:
        import_file(owner=owner, data=b"just some text\n")

    assert "choose its format" in refused.value.message


def import_file(*, owner, data: bytes, format: str | None = None):
    """Read the file and import it, as every door does."""
    return importing.import_file(owner=owner, file=read_import_file(data, format))


def import_file_preview(*, owner, data: bytes):
    return importing.import_file_preview(owner=owner, file=read_import_file(data))
