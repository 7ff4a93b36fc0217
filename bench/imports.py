"""Importing other memory tools' files: 10,000 records in each format read, previewed and imported,
then the same file imported again (all duplicates), a file with one bad record refused whole, and
the round trips through the two formats exports write.

    .venv/bin/python bench/imports.py [--records 10000]

Prints one row per format: records read, memories and notes created, duplicates skipped on the
second import, records left out, and the seconds each step took (reading the file, the preview,
the import in one transaction, the second import), and the same import as a background job for
another user (read, previewed, then imported 500 memories per transaction, as the page and
`importmemories` run it). Embedding happens afterwards in the worker and is not timed here
(bench/scale.py measures indexing). The files are made here in each tool's format (the tests
import files the real tools wrote); each run makes its users afresh, on the embedded PostgreSQL
under var/imports (or DATABASE_URL).
"""

import argparse
import io
import json
import sqlite3
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.environment import setup_django

setup_django("imports")

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from gnosem.errors import ValidationError  # noqa: E402
from memories.models import Memory  # noqa: E402
from memories.transfer.export import basic_memory_zip, exported_space, mcp_memory_lines  # noqa: E402
from memories.transfer.formats import read_import_file  # noqa: E402
from memories.transfer.importing import import_file, import_file_preview  # noqa: E402
from memories.transfer.jobs import import_job_create, import_job_run, import_job_start  # noqa: E402

PEOPLE = ["Ana", "Bo", "Chen", "Dara", "Eli", "Farah", "Goran", "Hana"]
TOPICS = ["billing", "search", "deploys", "onboarding", "the mobile app", "backups", "pricing", "support"]


def fact(number: int) -> str:
    """A distinct, plausible memory."""
    person, topic = PEOPLE[number % len(PEOPLE)], TOPICS[number // len(PEOPLE) % len(TOPICS)]
    return f"{person} reviewed {topic} on day {number} and noted item #{number:05d} for follow-up."


def mcp_memory_file(records: int) -> bytes:
    half = records // 2
    lines = [
        {"type": "entity", "name": f"Entity {n}", "entityType": "project", "observations": [fact(n)]}
        for n in range(half)
    ]
    lines += [
        {"type": "relation", "from": f"Entity {n}", "to": f"Entity {(n + 1) % half}", "relationType": "depends_on"}
        for n in range(records - half)
    ]
    return "\n".join(json.dumps(line) for line in lines).encode()


def basic_memory_file(records: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for n in range(records):
            archive.writestr(
                f"folder-{n % 20}/Note {n}.md",
                f"---\ntitle: Note {n}\ntype: note\ntags:\n- bench\n---\n\n# Note {n}\n\n- [fact] {fact(n)}\n",
            )
    return buffer.getvalue()


def mcp_memory_service_export(records: int) -> bytes:
    memories = [
        {
            "content": fact(n),
            "content_hash": f"{n:064x}",
            "tags": ["bench", TOPICS[n % len(TOPICS)].replace(" ", "-")],
            "created_at": 1_700_000_000.0 + n * 60,
            "updated_at": 1_700_000_000.0 + n * 60,
            "memory_type": "note",
            "metadata": {},
            "store": "default",
        }
        for n in range(records)
    ]
    return json.dumps({"export_metadata": {"total_memories": records}, "memories": memories}).encode()


def mcp_memory_service_store(records: int) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memories.db"
        with sqlite3.connect(path) as connection:
            connection.execute(
                "CREATE TABLE memories (id INTEGER PRIMARY KEY, content_hash TEXT, content TEXT, tags TEXT, "
                "memory_type TEXT, metadata TEXT, created_at REAL, updated_at REAL, deleted_at REAL, store TEXT)"
            )
            connection.executemany(
                "INSERT INTO memories VALUES (NULL, ?, ?, 'bench', 'note', '{}', ?, ?, NULL, 'default')",
                [(f"{n:064x}", fact(n), 1_700_000_000.0 + n, 1_700_000_000.0 + n) for n in range(records)],
            )
        connection.close()
        return path.read_bytes()


def mem0_file(records: int) -> bytes:
    items = [
        {
            "id": f"00000000-0000-4000-8000-{n:012d}",
            "memory": fact(n),
            "user_id": PEOPLE[n % len(PEOPLE)].lower(),
            "metadata": {"source": "bench"},
            "created_at": "2025-01-01T00:00:00+00:00",
        }
        for n in range(records)
    ]
    return json.dumps({"results": items}).encode()


FILES: dict[str, Callable[[int], bytes]] = {
    "mcp-memory": mcp_memory_file,
    "basic-memory": basic_memory_file,
    "mcp-memory-service (export)": mcp_memory_service_export,
    "mcp-memory-service (store)": mcp_memory_service_store,
    "mem0": mem0_file,
}
# A file of each format with one bad record (an empty text) after its good ones.
BROKEN = {
    "mcp-memory": b'{"type":"entity","name":"A","entityType":"person","observations":["ok"]}\n{"type":"entity"}',
    "basic-memory": b"---\ntitle: [\n---\n",
    "mcp-memory-service (export)": b'{"export_metadata": {}, "memories": [{"content": "ok"}, {"content": ""}]}',
    "mem0": b'{"results": [{"memory": "ok"}, {"memory": ""}]}',
}


def fresh_user(name: str):
    users = get_user_model()
    users.objects.filter(username=name).delete()
    return users.objects.create_user(name, f"{name}@example.com")


def run_as_job(username: str, data: bytes) -> None:
    """Import the file as the page and the command do: a job created, started and run here."""
    owner = fresh_user(username)
    job = import_job_create(owner=owner, data=data, file_name="bench")
    import_job_start(owner=owner, public_id=job.public_id, in_background=False)
    ended = import_job_run(job.pk)
    assert ended is not None and ended.status == "done", ended


def timed(step: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    result = step()
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    records = parser.parse_args().records
    call_command("migrate", interactive=False, verbosity=0)
    print(f"{records:,} records per file; seconds for each step\n")
    print(
        f"{'format':<28}{'records':>8}{'created':>9}{'notes':>7}{'dupes':>7}{'left out':>9}"
        f"{'read':>7}{'preview':>8}{'import':>8}{'again':>7}{'job':>7}  refused (one bad record)"
    )
    for number, (name, make) in enumerate(FILES.items()):
        data = make(records)
        owner = fresh_user(f"bench-import-{number}")
        file, read_seconds = timed(lambda data=data: read_import_file(data))
        _, preview_seconds = timed(lambda owner=owner, file=file: import_file_preview(owner=owner, file=file))
        report, import_seconds = timed(lambda owner=owner, file=file: import_file(owner=owner, file=file))
        again, again_seconds = timed(
            lambda owner=owner, data=data: import_file(owner=owner, file=read_import_file(data))
        )
        _, job_seconds = timed(lambda data=data, number=number: run_as_job(f"bench-job-{number}", data))
        refused = "-"
        if name in BROKEN:
            try:
                import_file(owner=owner, file=read_import_file(BROKEN[name], name.split(" ")[0]))
            except ValidationError as error:
                refused = error.message[:60]
        print(
            f"{name:<28}{report.records:>8,}{report.imported:>9,}{report.notes_imported:>7,}{again.duplicates:>7,}"
            f"{len(report.skipped):>9,}{read_seconds:>7.1f}{preview_seconds:>8.1f}{import_seconds:>8.1f}"
            f"{again_seconds:>7.1f}{job_seconds:>7.1f}  {refused}"
        )
    print("\nround trips (the first user's memories exported, imported by a new user):")
    source = get_user_model().objects.get(username="bench-import-0")
    mine = sorted(memory.content for memory in Memory.objects.filter(author=source))
    for export_name, export in (("mcp-memory", mcp_memory_lines), ("basic-memory", basic_memory_zip)):
        chunks = list(export(exported_space(source)))
        data = b"".join(chunk.encode() if isinstance(chunk, str) else chunk for chunk in chunks)
        reader = fresh_user(f"bench-round-{export_name}")
        report = import_file(owner=reader, file=read_import_file(data))
        theirs = sorted(memory.content for memory in Memory.objects.filter(author=reader))
        print(
            f"  {export_name:<14}{len(mine):>7,} memories exported, {report.imported:,} imported, "
            f"identical texts: {theirs == mine}"
        )


if __name__ == "__main__":
    main()
