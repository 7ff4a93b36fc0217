"""manage.py vectorindexes: build the HNSW indexes of large spaces now, and drop those no longer wanted.

A worker does the same every ten minutes (memories.indexing.vector_indexes); this runs it at once, after a
large import say, and prints what it did.
"""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memories.indexing.vector_indexes import vector_indexes_maintain


class Command(BaseCommand):
    help = (
        "Build an HNSW index for each space with at least GNOSEM_VECTOR_INDEX_MIN_CHUNKS chunks of one model, "
        "and drop the indexes no longer wanted (a worker does this every ten minutes)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.GNOSEM_VECTOR_INDEX_MIN_CHUNKS:
            self.stderr.write("GNOSEM_VECTOR_INDEX_MIN_CHUNKS is 0: no space gets an index; dropping any there are.")
        report = vector_indexes_maintain(progress=lambda message: self.stderr.write(message))
        if report.skipped:
            raise CommandError("Another maintenance run (a worker's) is at work; try again when it has finished.")
        if report.failed:
            raise CommandError(
                f"{len(report.failed)} index(es) could not be built: {', '.join(report.failed)}; the log says why."
            )
        self.stdout.write(
            f"{len(report.built)} vector index(es) built, {len(report.dropped)} dropped; "
            f"spaces from {settings.GNOSEM_VECTOR_INDEX_MIN_CHUNKS} chunks on have one."
        )
