"""The vector signal's first pass: how well a code of each width shortlists the chunks the exact
cosine scan would find, and what the shortlist costs against that scan.

    .venv/bin/python bench/vector_pass.py [--queries 200]

Reads bench/scale.py's 10k owner (run `bench/scale.py --phases 10k` first; same data folder,
var/scale). Two tables:
- codes: for thermometer codes of 1, 3 and 7 bits a dimension (thresholds at the quantiles of a
  unit vector's coordinates, which spread about N(0, 1/d)), the recall of the 40 best memories
  when the cosine ranks only the `n` chunks nearest by Hamming distance, computed in numpy over
  the owner's vectors (best chunk per memory, no lending);
- shortlist: `vector_ranking` itself, exact, through the owner's HNSW index when it has one (an
  owner of 10,000 chunks or more, memories.indexing.vector_indexes), and with 5, 10 and 15 shortlisted
  chunks per wanted memory (10 ships for owners without an index): p50 / p95 latency and the
  recall of its 40 memories against the exact scan's.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import setup_django

setup_django("scale")

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from accounts.spaces import personal_space_of  # noqa: E402
from bench import corpus  # noqa: E402
from bench.scale import USER_PREFIX  # noqa: E402
from memories.indexing.embedding import get_embedder  # noqa: E402
from memories.indexing.vectors import serving_model_name  # noqa: E402
from memories.models import VectorIndex  # noqa: E402
from memories.search import signals  # noqa: E402
from memories.selectors import MemoryFilters  # noqa: E402

WANTED = 40  # top_k 10 x CANDIDATES_PER_RESULT
# Standard normal quantiles splitting a coordinate into 2, 4 and 8 equally likely levels.
CODES = {1: [0.0], 3: [-0.674, 0.0, 0.674], 7: [-1.150, -0.674, -0.319, 0.0, 0.319, 0.674, 1.150]}


def best_memories(scores: np.ndarray, memory_ids: np.ndarray) -> set[int]:
    """The WANTED memories whose best chunk scores highest."""
    found: list[int] = []
    for index in np.argsort(-scores, kind="stable"):
        if memory_ids[index] not in found:
            found.append(int(memory_ids[index]))
            if len(found) == WANTED:
                break
    return set(found)


def code_table(space_id: int, model: str, queries: np.ndarray) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT memory_id, halfvec_send(embedding) FROM memories_chunk WHERE space_id = %s AND model = %s",
            [space_id, model],
        )
        rows = cursor.fetchall()
    memory_ids = np.array([row[0] for row in rows])
    vectors = np.stack([signals.halfvec_from_binary(row[1]) for row in rows])
    spread = 1 / np.sqrt(vectors.shape[1])
    exact = [best_memories(vectors @ query, memory_ids) for query in queries]
    print(f"codes: {len(rows):,} chunks, {len(queries)} queries; recall of the {WANTED} best memories")
    print(f"{'bits a dimension':>16} {'bytes':>6}  n=250   n=500  n=1000")
    for bits, quantiles in CODES.items():
        thresholds = [quantile * spread for quantile in quantiles]
        codes = np.concatenate([vectors > threshold for threshold in thresholds], axis=1)
        recalls = []
        for shortlist in (250, 500, 1000):
            found = []
            for query, reference in zip(queries, exact, strict=True):
                query_code = np.concatenate([query > threshold for threshold in thresholds])
                nearest = np.argsort((codes != query_code).sum(axis=1), kind="stable")[:shortlist]
                scores = np.full(len(vectors), -2.0, dtype=np.float32)
                scores[nearest] = vectors[nearest] @ query
                found.append(len(best_memories(scores, memory_ids) & reference) / WANTED)
            recalls.append(statistics.mean(found))
        print(f"{bits:>16} {codes.shape[1] // 8:>6}  " + "  ".join(f"{recall:.4f}" for recall in recalls))


def shortlist_table(space_id: int, model: str, queries: np.ndarray) -> None:
    def ranked(query: np.ndarray, exact: bool) -> tuple[set[int], float]:
        start = time.perf_counter()
        items = signals.vector_ranking(
            space_ids=[space_id], query_vector=query, model=model, filters=MemoryFilters(), limit=WANTED, exact=exact
        )
        return {item.memory_id for item in items}, (time.perf_counter() - start) * 1000

    for query in queries[:10]:  # warm the caches
        ranked(query, exact=True)
    exact = [ranked(query, exact=True) for query in queries]
    print(f"\nshortlist: vector_ranking, {len(queries)} queries, limit {WANTED}")
    print(f"{'':>22} {'p50 ms':>7} {'p95 ms':>7} {'recall':>7} {'lowest':>7}")
    times = [elapsed for _, elapsed in exact]
    print(f"{'exact scan':>22} {np.percentile(times, 50):7.1f} {np.percentile(times, 95):7.1f} {1:7.4f} {1:7.3f}")

    def row(label: str) -> None:
        runs = [ranked(query, exact=False) for query in queries]
        recalls = [
            len(found & reference) / len(reference) for (found, _), (reference, _) in zip(runs, exact, strict=True)
        ]
        times = [elapsed for _, elapsed in runs]
        print(
            f"{label:>22} {np.percentile(times, 50):7.1f} {np.percentile(times, 95):7.1f} "
            f"{statistics.mean(recalls):7.4f} {min(recalls):7.3f}"
        )

    if VectorIndex.objects.filter(space_id=space_id, model=model, ready=True).exists():
        row(f"HNSW, ef_search {settings.GNOSEM_VECTOR_INDEX_EF_SEARCH}")
    shipped = signals.SHORTLIST_PER_MEMORY
    with transaction.atomic():  # the space's HNSW index unread meanwhile, and ready again after
        VectorIndex.objects.filter(space_id=space_id).update(ready=False)
        for per_memory in (5, 10, 15):
            signals.SHORTLIST_PER_MEMORY = per_memory
            row(f"{per_memory} per memory" + (" (ships)" if per_memory == shipped else ""))
        transaction.set_rollback(True)
    signals.SHORTLIST_PER_MEMORY = shipped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200)
    arguments = parser.parse_args()
    owner = get_user_model().objects.filter(username=f"{USER_PREFIX}a").first()
    if owner is None:
        sys.exit("no 10k owner in var/scale: run `.venv/bin/python bench/scale.py --phases 10k` first")
    model = serving_model_name()
    embedder = get_embedder(model)
    queries = np.stack([embedder.embed_query(text).result() for text in corpus.questions(arguments.queries)])
    space_id = personal_space_of(owner).pk
    code_table(space_id, model, queries)
    shortlist_table(space_id, model, queries)


if __name__ == "__main__":
    main()
