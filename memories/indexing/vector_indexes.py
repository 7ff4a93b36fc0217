"""Approximate vector indexes for large spaces: one HNSW index per space and model.

The vector signal shortlists a space's chunks by signature (memories.search.signals), a scan that
grows with the space's chunks; from GNOSEM_VECTOR_INDEX_MIN_CHUNKS chunks on, a space gets a
partial HNSW index of its own (`WHERE space_id = … AND model = …`), which the vector signal then
reads instead (docs/benchmarks.md, "Scale"). One index over every space's chunks would not do: a
space's chunks are a small share of it, and a filtered approximate search finds too few of them.

`vector_indexes_maintain` (every ten minutes in a worker, `manage.py vectorindexes` by hand) builds
the missing indexes, without blocking writes (CREATE INDEX CONCURRENTLY), and drops those no
longer wanted: of a space deleted, of a model no longer stored, of a space fallen below half
the threshold. A `VectorIndex` row is ready only once its index is built and valid; search reads
the index only then.
"""

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection
from django.db.backends.utils import CursorWrapper
from psycopg import sql

from memories.models import VectorIndex

logger = logging.getLogger(__name__)

Progress = Callable[[str], None]

INDEX_PREFIX = "chunk_hnsw_"
# Graph degree and build-time candidates (pgvector's defaults).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
# Memory for building one index: a graph that fits builds many times faster.
BUILD_MEMORY = "512MB"
# Only one builder at a time, whichever worker runs the maintenance.
_LOCK_KEY = 0x6E05E_0001


@dataclass
class Maintenance:
    """What one maintenance run did."""

    built: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    # Another run holds the lock: this one did nothing.
    skipped: bool = False


def index_name(space_id: int, model: str) -> str:
    """The index of one space's chunks of one model (within PostgreSQL's 63 characters)."""
    return f"{INDEX_PREFIX}{space_id}_{hashlib.sha256(model.encode()).hexdigest()[:10]}"


def vector_index_session_settings(cursor: CursorWrapper) -> None:
    """Set up a new database connection for HNSW searches: keep GNOSEM_VECTOR_INDEX_EF_SEARCH
    candidates, and go on scanning (in roughly nearest order) when those yield too few rows."""
    cursor.execute(
        "SELECT set_config('hnsw.ef_search', %s, false), set_config('hnsw.iterative_scan', 'relaxed_order', false)",
        [str(settings.GNOSEM_VECTOR_INDEX_EF_SEARCH)],
    )


_EXISTING_SQL = "SELECT indexname FROM pg_indexes WHERE tablename = 'memories_chunk' AND indexname LIKE %s"
_COUNTS_SQL = """
SELECT space_id, model, count(*), max(dimension) FROM memories_chunk GROUP BY space_id, model
"""


def vector_indexes_maintain(progress: Progress | None = None) -> Maintenance:
    """Build the HNSW indexes wanted and drop the others (see the module's docstring); `progress`
    hears of each step. Does nothing when another run is at work."""
    report = Maintenance()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_LOCK_KEY])
        if not cursor.fetchone()[0]:
            report.skipped = True
            return report
        try:
            _maintain(cursor, report, progress or (lambda message: None))
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_LOCK_KEY])
    return report


def _maintain(cursor: CursorWrapper, report: Maintenance, progress: Progress) -> None:
    minimum = settings.GNOSEM_VECTOR_INDEX_MIN_CHUNKS
    cursor.execute(_COUNTS_SQL)
    counts = {(space_id, model): (chunks, dimensions) for space_id, model, chunks, dimensions in cursor.fetchall()}
    cursor.execute(_EXISTING_SQL, [INDEX_PREFIX + "%"])
    existing = {row[0] for row in cursor.fetchall()}
    kept = set()
    for entry in VectorIndex.objects.order_by("id"):
        chunks, _ = counts.get((entry.space_id, entry.model), (0, 0))
        # A row not ready belongs to a build that died (no other build runs now): start it again.
        if entry.ready and entry.name in existing and minimum and chunks >= minimum // 2:
            kept.add((entry.space_id, entry.model))
            continue
        _drop(cursor, entry.name, report, progress)
        entry.delete()
    for name in existing - {index_name(*pair) for pair in kept}:
        _drop(cursor, name, report, progress)  # its space was deleted, or a build left it
    if not minimum:
        return
    wanted = sorted(pair for pair, (chunks, _) in counts.items() if chunks >= minimum and pair not in kept)
    for space_id, model in wanted:
        _build(cursor, space_id, model, counts[space_id, model], report, progress)


# The expression and predicate the vector signal's indexed query matches (memories.search.signals).
_CREATE_SQL = sql.SQL(
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memories_chunk "
    "USING hnsw ((embedding::halfvec({dimensions})) halfvec_cosine_ops) WITH (m = {m}, ef_construction = {ef}) "
    "WHERE space_id = {space} AND model = {model}"
)


def _build(
    cursor: CursorWrapper, space_id: int, model: str, size: tuple[int, int], report: Maintenance, progress: Progress
) -> None:
    chunks, dimensions = size
    name = index_name(space_id, model)
    progress(f"building {name}: {chunks} chunks of space #{space_id}, {model}")
    entry = VectorIndex.objects.create(space_id=space_id, model=model, dimensions=dimensions, name=name)
    try:
        cursor.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(BUILD_MEMORY)))
        try:
            cursor.execute(
                _CREATE_SQL.format(
                    name=sql.Identifier(name),
                    dimensions=sql.Literal(dimensions),
                    m=sql.Literal(HNSW_M),
                    ef=sql.Literal(HNSW_EF_CONSTRUCTION),
                    space=sql.Literal(space_id),
                    model=sql.Literal(model),
                )
            )
        finally:
            cursor.execute("RESET maintenance_work_mem")
        cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name])
        row = cursor.fetchone()
        if not (row and row[0]):
            raise RuntimeError("the index was left invalid")
    except Exception:
        logger.exception("building the vector index %s failed; the next maintenance run tries again", name)
        report.failed.append(name)
        _drop(cursor, name, report, progress, quiet=True)
        entry.delete()
        return
    VectorIndex.objects.filter(pk=entry.pk).update(ready=True)  # gone if its space was deleted meanwhile
    report.built.append(name)


def _drop(cursor: CursorWrapper, name: str, report: Maintenance, progress: Progress, quiet: bool = False) -> None:
    if not quiet:
        progress(f"dropping {name}")
        report.dropped.append(name)
    cursor.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
