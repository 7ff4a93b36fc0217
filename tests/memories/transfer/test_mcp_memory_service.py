"""mcp-memory-service's export and SQLite store, as the real tool wrote them (its own storage and
export code, offline): imported with their tags, types and times, found by meaning and by word;
a deleted row left out; a hostile or broken store refused."""

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gnosem.errors import ValidationError
from memories.models import Memory
from memories.search.pipeline import search_hybrid
from memories.transfer import importing
from memories.transfer.formats import read_import_file
from tests.memories.transfer.peer_tools import drive

pytestmark = pytest.mark.django_db

DECISION = "We decided to use PostgreSQL 16 for the new billing service."


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """A folder holding the tool's export.json and memories.db, written by the tool itself."""
    folder = tmp_path_factory.mktemp("mcp-memory-service")
    drive("mcp_memory_service", "mcp-memory-service", str(folder / "out"))
    return folder / "out"


def imported(owner, data: bytes, file_format: str | None = None) -> importing.ImportReport:
    return importing.import_file(owner=owner, file=read_import_file(data, file_format))


@pytest.mark.parametrize("file_name", ["export.json", "memories.db"])
def test_the_tools_memories_arrive_with_their_tags_types_and_times(owner, index, written, file_name):
    report = imported(owner, (written / file_name).read_bytes())

    assert (report.format, report.records, report.imported, report.duplicates) == ("mcp-memory-service", 8, 8, 0)
    memories = {memory.content: memory for memory in index(*Memory.objects.all())}
    decision = memories[DECISION]
    assert decision.tags == ["project:billing", "decision-log", "type:decision", "source:adr-0042", "confidence:0.9"]
    assert decision.written_by == "mcp-memory-service"
    assert decision.created_at == datetime(2023, 11, 15, 22, 13, 20, tzinfo=UTC)
    assert decision.updated_at == datetime(2023, 11, 16, 22, 13, 20, tzinfo=UTC)
    untyped = memories["An untyped memory stored without tags or a memory type."]
    assert untyped.tags == []  # the tool's "untagged" stands for none
    assert "store:work" in memories["Work store: quarterly planning starts on the first Monday of January."].tags
    assert any("東京" in text for text in memories)
    assert search_hybrid(owner=owner, query="which database engine for invoicing")[0].memory.content == DECISION
    assert search_hybrid(owner=owner, query="db-staging-2")[0].memory.content.startswith("The staging database")


def test_the_export_and_the_store_are_the_same_memories_once(owner, written):
    imported(owner, (written / "export.json").read_bytes())

    again = imported(owner, (written / "memories.db").read_bytes())

    assert (again.imported, again.duplicates) == (0, 8)


def test_a_deleted_row_is_left_out_and_named(owner, written, tmp_path):
    store = tmp_path / "memories.db"
    store.write_bytes((written / "memories.db").read_bytes())
    with sqlite3.connect(store) as connection:
        connection.execute("UPDATE memories SET deleted_at = 1700000000 WHERE content = ?", [DECISION])
    connection.close()

    report = imported(owner, store.read_bytes())

    assert (report.imported, len(report.skipped)) == (7, 1)
    assert report.skipped[0].endswith("deleted in mcp-memory-service.")
    assert DECISION not in {memory.content for memory in Memory.objects.all()}


def store_with(tmp_path, *statements: str) -> bytes:
    path = tmp_path / "made.db"
    with sqlite3.connect(path) as connection:
        for statement in statements:
            connection.execute(statement)
    connection.close()
    return path.read_bytes()


@pytest.mark.parametrize(
    ("statements", "message"),
    [
        (["CREATE TABLE other (x)"], "without mcp-memory-service's memories table"),
        (["CREATE TABLE things (content TEXT)", "CREATE VIEW memories AS SELECT * FROM things"], "memories table"),
        (["CREATE TABLE memories (body TEXT)"], "no content column"),
        (["CREATE TABLE memories (content TEXT, metadata TEXT)", "INSERT INTO memories VALUES ('x', '{')"], "row 1"),
        (["CREATE TABLE memories (content TEXT)", "INSERT INTO memories VALUES (NULL)"], "row 1"),
        (["CREATE TABLE memories (content TEXT, created_at REAL)", "INSERT INTO memories VALUES ('x', 1e300)"], "time"),
    ],
)
def test_a_store_that_is_not_the_tools_is_refused_and_nothing_imported(owner, tmp_path, statements, message):
    data = store_with(tmp_path, *statements)

    with pytest.raises(ValidationError) as refused:
        imported(owner, data, "mcp-memory-service")

    assert message in refused.value.message
    assert Memory.objects.count() == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"SQLite format 3\x00" + b"\x00" * 200, "not a database"),
        (b'{"export_metadata": {}, "memories": [{"content": 5}]}', "entry 1"),
        (b'{"export_metadata": {}, "memories": [{"content": "x", "tags": "a,b"}]}', "entry 1"),
        (b'{"memories": []}', "not an mcp-memory-service export"),
    ],
)
def test_a_broken_file_is_refused_naming_the_entry(owner, data, message):
    with pytest.raises(ValidationError) as refused:
        imported(owner, data, "mcp-memory-service")

    assert message in refused.value.message
