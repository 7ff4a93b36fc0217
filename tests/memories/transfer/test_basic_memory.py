"""basic-memory's folder of Markdown notes, as the real basic-memory wrote it (its own write_note):
imported as notes, observations as memories found by meaning, relations and links into the
graph; Gnosem's export to the format indexed by basic-memory itself and found by its own search,
and read back whole; hostile zips refused, nothing imported."""

import io
import zipfile
from pathlib import Path

import pytest

from gnosem.errors import ValidationError
from memories import services
from memories.graph.explore import entity_find, graph_explore
from memories.models import Memory, Note
from memories.notes import services as notes
from memories.search.pipeline import search_hybrid
from memories.transfer import importing
from memories.transfer.export import basic_memory_zip, exported_space
from memories.transfer.formats import read_import_file
from tests.memories.transfer.peer_tools import drive

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, dict]:
    """A folder basic-memory wrote its notes into, and what it says it wrote (as it parsed them)."""
    folder = tmp_path_factory.mktemp("basic-memory") / "kb"
    return folder, drive("basic_memory", "basic-memory", "write", str(folder))


def zipped(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def imported(owner, data: bytes, file_format: str | None = None) -> importing.ImportReport:
    return importing.import_file(owner=owner, file=read_import_file(data, file_format))


def test_the_folder_basic_memory_wrote_arrives_as_notes_memories_and_links(owner, index, written):
    folder, summary = written

    report = imported(owner, zipped(folder))

    observations = [
        f"{note['title']}: {item['content']}" + (f" ({item['context']})" if item["context"] else "")
        for note in summary["notes"]
        for item in note["observations"]
    ]
    relations = [
        f"{note['title']} {relation['type'].replace('_', ' ')} {relation['target']}."
        for note in summary["notes"]
        for relation in note["relations"]
        if relation["type"] != "links_to"
    ]
    assert (report.format, report.records, report.imported) == ("basic-memory", 4, len(observations + relations))
    assert report.notes_imported == 4
    stored = {memory.content: memory for memory in index(*Memory.objects.all())}
    assert sorted(stored) == sorted(observations + relations)
    brewing = next(note for note in Note.objects.all() if note.title == "Coffee Brewing")
    assert {"coffee", "brewing", "folder:coffee", "type:guide", "topic:coffee-brewing"} <= set(brewing.tags)
    assert "topic:grinder-settings" in brewing.tags  # it links there
    assert brewing.content.startswith("# Coffee Brewing\n\nNotes on making pour-over coffee at home.")
    clumps = "Matcha Whisking: Sift the powder first to avoid clumps"
    assert search_hybrid(owner=owner, query="prevent lumps when making matcha")[0].memory.content == clumps
    # A relation to a note the folder does not hold is kept: basic-memory links ahead.
    assert "Coffee Brewing inspired by Vienna Cafe Visit." in stored
    matcha = entity_find(owner=owner, name="matcha-whisking")
    neighbours = {node.entity.name.casefold() for node in graph_explore(owner=owner, entity=matcha.name).nodes}
    assert "tea-steeping" in neighbours


def test_one_note_uploaded_alone_is_read_too(owner):
    note = b"---\ntitle: Standup\ntags: [team, rituals]\n---\n\nDaily at 09:30.\n\n- [rule] Keep it under 15 minutes\n"

    report = imported(owner, note)

    assert (report.format, report.notes_imported, report.imported) == ("basic-memory", 1, 1)
    assert Note.objects.get().tags == ["team", "rituals", "topic:standup"]
    assert Memory.objects.get().content == "Standup: Keep it under 15 minutes"


@pytest.fixture
def kept(owner) -> list:
    """A space with memories (one multi-line, one with unicode) and a note."""
    memories = [
        services.memory_write(owner=owner, content=text, tags=tags, written_by="cursor")
        for text, tags in [
            ("The quokka-ledger service reconciles invoices at 02:00 UTC.", ["project:quokka-ledger"]),
            ("Deploy checklist:\n1. tag the release\n2. run migrations\n3. flip the flag", ["ops"]),
            ("Café opening hours change to 07:00 — 東京 office too.", []),
        ]
    ]
    notes.note_write(owner=owner, title="Runbook: billing", content="# Billing\n\nRestart with `make billing`.")
    return memories


def test_an_export_is_indexed_and_found_by_basic_memorys_own_search(owner, kept, tmp_path):
    archive = b"".join(basic_memory_zip(exported_space(owner)))
    folder = tmp_path / "export"
    zipfile.ZipFile(io.BytesIO(archive)).extractall(folder)

    found = drive("basic_memory", "basic-memory", "search", str(folder), "quokka")
    billing = drive("basic_memory", "basic-memory", "search", str(folder), "billing")

    assert found["indexed_files"] == 4
    assert [result["file_path"] for result in found["results"]] == [
        path.relative_to(folder).as_posix() for path in folder.rglob("*quokka*")
    ]
    assert "notes/Runbook- billing.md" in {result["file_path"] for result in billing["results"]}


def test_the_round_trip_through_the_format_keeps_every_memory_and_note(owner, stranger, kept):
    archive = b"".join(basic_memory_zip(exported_space(owner)))

    report = imported(stranger, archive)

    assert (report.imported, report.notes_imported) == (3, 1)
    theirs = {m.content: m for m in Memory.objects.filter(space__personal_of=stranger)}
    assert set(theirs) == {memory.content for memory in kept}
    for memory in kept:
        copy = theirs[memory.content]
        assert (copy.tags, copy.written_by, copy.created_at) == (memory.tags, "cursor", memory.created_at)
    (note,) = Note.objects.filter(space__personal_of=stranger)
    assert (note.title, note.content) == ("Runbook: billing", "# Billing\n\nRestart with `make billing`.")
    assert imported(stranger, archive).imported == 0  # again: all duplicates


def zip_of(*entries: tuple[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (zip_of(("../../etc/passwd.md", b"root")), "a path outside the folder"),
        (zip_of(("/etc/passwd.md", b"root")), "a path outside the folder"),
        (zip_of(("bomb.md", b"\0" * 50_000_000)), "zip bomb"),
        (zip_of(("a.md", b"caf\xe9")), "a.md, line 1: not UTF-8"),
        (zip_of(("a.md", b"---\ntitle: [unclosed\n---\nx")), "a.md: its front matter is not YAML"),
        (zip_of(("a.md", b"---\n- a list\n---\nx")), "not a mapping"),
        (zip_of(("picture.png", b"\x89PNG")), "no Markdown"),
        (zip_of(("a.md", b"---\ntitle: " + b"x" * 300 + b"\n---\nText.")), "a.md: title"),
        (b"PK\x03\x04 and then nothing a zip holds", "not a readable zip"),
    ],
)
def test_a_hostile_or_broken_zip_is_refused_and_nothing_imported(owner, data, message):
    with pytest.raises(ValidationError) as refused:
        imported(owner, data, "basic-memory")

    assert message in refused.value.message
    assert (Memory.objects.count(), Note.objects.count()) == (0, 0)


def test_files_that_are_not_notes_are_left_out_and_named(owner):
    data = zip_of(("notes/a.md", b"# A\n\nText."), ("images/b.png", b"\x89PNG"))

    report = imported(owner, data)

    assert report.notes_imported == 1
    assert report.skipped == ("images/b.png: not a Markdown note.",)
