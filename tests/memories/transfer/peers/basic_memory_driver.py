"""Drive the real basic-memory program for Gnosem's import/export tests.

Written against basic-memory 0.24.1 (PyPI `basic-memory`, by Basic Machines),
which needs Python >= 3.12. Run it with the peer venv's python, never import it
from pytest:

    .peers/basic-memory/bin/python tests/memories/transfer/peers/basic_memory_driver.py write OUT_DIR
        basic-memory's own write_note tool writes a fixed set of notes (two
        folders, observations, wiki links, typed relations, tags, one link to a
        note that does not exist) into the project folder OUT_DIR, which must be
        empty or absent. Prints JSON: the notes as written and as basic-memory
        parsed them (observations, relations).

    .../python .../basic_memory_driver.py search FOLDER QUERY
        basic-memory indexes a copy of FOLDER (a folder of .md files) as a
        temporary project and prints JSON: its own full-text search for QUERY.
        FOLDER itself is left untouched (indexing adds front matter to files).

Everything basic-memory keeps (config.json, memory.db, its HOME) lives in a
temporary folder that is deleted on exit. It runs offline: semantic (vector)
search is switched off by hiding the sqlite-vec module, which is basic-memory's
own keyword-only fallback, so no embedding model is ever loaded or downloaded.
The project is basic-memory's default one, named `main`, so permalinks start
with `main/`. Exit status is 0 on success, 1 with a message on stderr otherwise.
"""

import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

WRITTEN_AGAINST = "0.24.1"

NOTES = [
    {
        "folder": "coffee",
        "title": "Coffee Brewing",
        "note_type": "guide",
        "tags": ["coffee", "brewing"],
        "content": (
            "# Coffee Brewing\n\n"
            "Notes on making pour-over coffee at home.\n\n"
            "## Observations\n"
            "- [method] Pour over gives a clean cup #technique\n"
            "- [tip] Use water just off the boil (about 94 C) #temperature\n"
            "- [fact] Finer grinds extract faster (see the grinder chart)\n\n"
            "## Relations\n"
            "- requires [[Grinder Settings]]\n"
            "- contrasts_with [[Tea Steeping]]\n"
            "- inspired_by [[Vienna Cafe Visit]]\n"
        ),
    },
    {
        "folder": "coffee",
        "title": "Grinder Settings",
        "note_type": "note",
        "tags": ["coffee", "equipment"],
        "content": (
            "# Grinder Settings\n\n"
            "A medium-fine setting suits [[Coffee Brewing]] with a paper filter.\n\n"
            "- [setting] Burr grinder at step 14 for pour over #grind\n"
            "- [warning] Blade grinders give uneven particles\n\n"
            "- part_of [[Coffee Brewing]]\n"
        ),
    },
    {
        "folder": "tea",
        "title": "Tea Steeping",
        "note_type": "note",
        "tags": ["tea"],
        "content": (
            "# Tea Steeping\n\n"
            "Green tea wants cooler water than [[Coffee Brewing]].\n\n"
            "- [tip] Steep green tea at 80 C for two minutes #temperature\n"
            "- [preference] Oolong tolerates several infusions\n\n"
            "- related_to [[Matcha Whisking]]\n"
            "- contrasts_with [[Coffee Brewing]]\n"
        ),
    },
    {
        "folder": "tea",
        "title": "Matcha Whisking",
        "note_type": "note",
        "tags": ["tea", "matcha"],
        "content": (
            "# Matcha Whisking\n\n"
            "Whisk in a zigzag until a fine foam forms.\n\n"
            "- [technique] Sift the powder first to avoid clumps\n"
            "- [tool] A bamboo chasen with 80 prongs\n\n"
            "- part_of [[Tea Steeping]]\n"
        ),
    },
]


def fail(message: str) -> None:
    print(f"basic_memory_driver: {message}", file=sys.stderr)
    sys.exit(1)


def isolate(project_dir: Path, state_dir: Path) -> None:
    """Point every path basic-memory uses into state_dir; must run before importing it."""
    for name in list(os.environ):
        if name.startswith("BASIC_MEMORY_") or name == "PYTEST_CURRENT_TEST":
            del os.environ[name]  # an inherited setting (or pytest's marker) changes behaviour
    home = state_dir / "home"
    home.mkdir(parents=True)
    os.environ.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        BASIC_MEMORY_CONFIG_DIR=str(state_dir / "config"),  # config.json and memory.db
        BASIC_MEMORY_HOME=str(project_dir),  # the default project "main" lives here
        BASIC_MEMORY_NO_PROMOS="1",  # no promo text, no analytics calls
        BASIC_MEMORY_AUTO_UPDATE="false",
        BASIC_MEMORY_LOG_LEVEL="WARNING",
        FASTEMBED_CACHE_PATH=str(state_dir / "fastembed"),
        HF_HUB_OFFLINE="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LOGFIRE_IGNORE_NO_CONFIG="1",
    )
    # basic-memory has no switch for semantic search; without sqlite-vec it falls
    # back to SQLite FTS5 keyword search and never loads an embedding model.
    sys.modules["sqlite_vec"] = None  # type: ignore[assignment]
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING")


def run(coro):
    """Run a coroutine the way the `basic-memory tool` CLI does (drains background work)."""
    from basic_memory.cli.commands.command_utils import run_with_cleanup

    return run_with_cleanup(coro)


async def write_notes() -> dict:
    from basic_memory.mcp.tools import write_note

    written = []
    for note in NOTES:
        result = await write_note(
            title=note["title"],
            content=note["content"],
            directory=note["folder"],
            tags=note["tags"],
            note_type=note["note_type"],
            output_format="json",
        )
        if result.get("action") != "created":
            raise RuntimeError(f"write_note refused {note['title']!r}: {result}")
        written.append(
            {
                "title": result["title"],
                "folder": note["folder"],
                "permalink": result["permalink"],
                "file_path": result["file_path"],
            }
        )
    return written


async def read_back(project_dir: Path, written: list[dict]) -> dict:
    """Parse each written file with basic-memory's own indexing parser."""
    from basic_memory.markdown.entity_parser import EntityParser

    parser = EntityParser(project_dir)
    for entry in written:
        parsed = await parser.parse_file(project_dir / entry["file_path"])
        entry["frontmatter"] = parsed.frontmatter.metadata
        entry["observations"] = [
            {"category": o.category, "content": o.content, "tags": o.tags, "context": o.context}
            for o in parsed.observations
        ]
        entry["relations"] = [{"type": r.type, "target": r.target, "context": r.context} for r in parsed.relations]
    return {"basic_memory_version": version(), "project": "main", "notes": written}


@contextlib.asynccontextmanager
async def project_client():
    """An in-process API client (no server, no MCP) and the default project's id."""
    from basic_memory.config import ConfigManager
    from basic_memory.mcp.async_client import get_client
    from basic_memory.mcp.project_context import get_active_project

    project = ConfigManager().default_project
    async with get_client(project_name=project) as client:
        active = await get_active_project(client, project, None)
        yield client, active.external_id


async def index_and_search(query: str) -> dict:
    from basic_memory.mcp.clients import ProjectClient
    from basic_memory.mcp.tools import search_notes

    async with project_client() as (client, project_id):
        index = await ProjectClient(client).index(project_id, force_full=True, run_in_background=False)
    found = await search_notes(query=query, search_type="text", page_size=100, output_format="json")
    if isinstance(found, str):
        raise RuntimeError(found)
    results = [
        {
            "title": item.get("title"),
            "permalink": item.get("permalink"),
            "file_path": item.get("file_path"),
            "type": item.get("type"),
        }
        for item in found.get("results", [])
    ]
    return {
        "basic_memory_version": version(),
        "query": query,
        "indexed_files": index.get("total_files"),
        "results": results,
    }


def version() -> str:
    import basic_memory

    return basic_memory.__version__


def main(argv: list[str]) -> None:
    command = argv[0] if argv else ""
    if command == "write" and len(argv) == 2:
        project_source = None
        out_dir = Path(argv[1]).resolve()
        if out_dir.exists() and any(out_dir.iterdir()):
            fail(f"OUT_DIR {out_dir} is not empty")
    elif command == "search" and len(argv) == 3:
        project_source, query = Path(argv[1]).resolve(), argv[2]
        if not project_source.is_dir():
            fail(f"FOLDER {project_source} is not a directory")
    else:
        fail("usage: basic_memory_driver.py write OUT_DIR | search FOLDER QUERY")

    with tempfile.TemporaryDirectory(prefix="bm-driver-") as tmp:
        state_dir = Path(tmp)
        if command == "write":
            project_dir = out_dir
            project_dir.mkdir(parents=True, exist_ok=True)
        else:  # index a copy: basic-memory rewrites front matter of the files it indexes
            project_dir = state_dir / "project"
            shutil.copytree(project_source, project_dir)
        isolate(project_dir, state_dir)
        try:
            if command == "write":
                result = run(read_back(project_dir, run(write_notes())))
            else:
                result = run(index_and_search(query))
        except Exception as error:  # any failure is reported as exit 1
            fail(f"{command} failed: {type(error).__name__}: {error}")
    if result["basic_memory_version"] != WRITTEN_AGAINST:
        print(f"basic_memory_driver: warning: written against {WRITTEN_AGAINST}", file=sys.stderr)
    json.dump(result, sys.stdout, indent=2, default=str)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
