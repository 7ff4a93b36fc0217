"""manage.py reembedmemories: change the embedding model (docs/design.md §3), with a progress bar.

Set GNOSEM_EMBEDDING_MODEL to the new model (on the workers and where this runs), then run this.
Search keeps using the old vectors until every memory has the new ones; then it switches over and
the old vectors are dropped. Interrupted, a second run goes on where the first stopped.
"""

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from memories.indexing import embedding, vectors
from memories.indexing.queue import indexing_batch_size


class Command(BaseCommand):
    help = (
        "Give every memory vectors of the configured embedding model (GNOSEM_EMBEDDING_MODEL), then switch "
        "search to it and drop the other models' vectors. Search keeps using the old vectors until then; "
        "an interrupted run goes on where it stopped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--batch-size",
            type=int,
            default=indexing_batch_size(),
            help="Memories embedded and stored per transaction (default: %(default)s).",
        )
        parser.add_argument(
            "--keep-old",
            action="store_true",
            help="Keep the previous model's vectors after switching (to switch back without re-embedding).",
        )

    def handle(self, *args: Any, batch_size: int, keep_old: bool, **options: Any) -> None:
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        try:
            target = embedding.get_embedder()
        except Exception as exc:
            raise CommandError(
                f"Cannot load GNOSEM_EMBEDDING_MODEL={settings.GNOSEM_EMBEDDING_MODEL!r}: {type(exc).__name__}: {exc}"
            ) from exc
        previous = vectors.serving_model_name()
        started = time.monotonic()
        embedded = self._embed_missing(target, batch_size)
        dropped = vectors.switch_serving_model(target.name, keep_old=keep_old)
        if dropped is None:
            raise CommandError(
                f"Some memories were indexed meanwhile without {target.name} vectors (a worker still running "
                "with the previous GNOSEM_EMBEDDING_MODEL?). Search still uses the old vectors; run the "
                "command again once every worker has the new setting."
            )
        self.stdout.write(
            f"{embedded} memories embedded with {target.name} ({target.dimension} dimensions) "
            f"in {time.monotonic() - started:.0f} s."
        )
        switched = f"switched from {previous}" if previous != target.name else "already used it"
        kept = " (old vectors kept: --keep-old)" if keep_old else f"; {dropped} vectors of other models dropped"
        self.stdout.write(f"Search uses {target.name}: {switched}{kept}.")

    def _embed_missing(self, target: embedding.AnyEmbedder, batch_size: int) -> int:
        """Embed, batch by batch in id order, every indexed memory lacking `target`'s vectors."""
        missing = vectors.memories_missing_vectors(target.name).only("id", "space_id", "public_id", "content")
        embedded = last_id = 0
        with tqdm(total=missing.count(), desc=f"embedding with {target.name}", unit="memory") as progress:
            while batch := list(missing.filter(pk__gt=last_id)[:batch_size]):
                try:
                    embedded += vectors.reembed_batch(batch, target)
                except Exception as exc:
                    raise CommandError(
                        f"Embedding failed after {embedded} memories: {type(exc).__name__}: {exc}. Those keep "
                        "their new vectors and search still uses the old ones; run the command again to go on."
                    ) from exc
                last_id = batch[-1].pk
                progress.update(len(batch))
        return embedded
