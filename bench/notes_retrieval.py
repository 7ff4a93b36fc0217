"""Notes retrieval: how well `semantic_search` finds the note (and the passage) that answers a
question, on bench/notes/ (24 documents written for it, 126 questions: paraphrased and exact).

    .venv/bin/python bench/notes_retrieval.py [--json]

The documents go in through the product's note service and are embedded by its indexing service
(in this process), on the real database (var/bench, like bench/locomo.py). Each question is asked
of `note_search` with both signals, with the vector signal alone and with the keyword signal alone.
Prints, per question kind and signal configuration, hit@1, hit@5 and MRR of the right note, and
how often the passage returned for it holds the answer's location (`passage@1`: the first result
is the right note and its passage overlaps the question's reference passage). Then the indexing
throughput of one note of GNOSEM_NOTE_MAX_BYTES (1 MB by default): the corpus repeated to that
size, written and embedded, in passages and characters a second.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import BASE_DIR, setup_django

setup_django("bench", tasks_immediate=True)

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402

from memories.models import IndexingStatus, Note, NoteChunk  # noqa: E402
from memories.notes.services import note_write  # noqa: E402
from memories.search.notes import note_search  # noqa: E402

DATA = BASE_DIR / "bench" / "notes"
CONFIGURATIONS = {"hybrid": ("vector", "keyword"), "vector": ("vector",), "keyword": ("keyword",)}
TOP_K = 5


def load(owner) -> dict[str, Note]:
    """The corpus as the owner's notes, embedded; file name -> note."""
    written = {}
    with transaction.atomic():  # on commit, the (immediate) indexing tasks embed them
        for path in sorted((DATA / "corpus").iterdir()):
            text = path.read_text()
            title = text.partition("\n")[0]
            written[path.name] = note_write(
                owner=owner,
                title=title.removeprefix("# ").strip(),
                content=text,
                format="markdown" if path.suffix == ".md" else "text",
            )
    for note in written.values():
        note.refresh_from_db()
        assert note.indexing_status == IndexingStatus.INDEXED, f"{note.title}: {note.indexing_error}"
    return written


def run(owner, notes: dict[str, Note], questions: list[dict]) -> dict:
    by_id = {note.pk: name for name, note in notes.items()}
    report: dict = {}
    for configuration, signals in CONFIGURATIONS.items():
        rows: dict[str, list[tuple[int | None, bool]]] = {}
        for question in questions:
            hits = note_search(owner=owner, query=question["question"], top_k=TOP_K, signals=signals)
            names = [by_id[hit.note.pk] for hit in hits]
            rank = names.index(question["note"]) + 1 if question["note"] in names else None
            reference = notes[question["note"]].content.find(question["passage"])
            passage = bool(
                rank == 1 and hits[0].start <= reference + len(question["passage"]) and reference < hits[0].end
            )
            rows.setdefault(question["kind"], []).append((rank, passage))
            rows.setdefault("all", []).append((rank, passage))
        report[configuration] = {
            kind: {
                "n": len(ranks),
                "hit@1": round(sum(rank == 1 for rank, _ in ranks) / len(ranks), 3),
                "hit@5": round(sum(rank is not None for rank, _ in ranks) / len(ranks), 3),
                "mrr": round(sum(1 / rank for rank, _ in ranks if rank) / len(ranks), 3),
                "passage@1": round(sum(passage for _, passage in ranks) / len(ranks), 3),
            }
            for kind, ranks in rows.items()
        }
    return report


def indexing_throughput(owner) -> dict:
    """Write and embed one note of GNOSEM_NOTE_MAX_BYTES made of the corpus repeated."""
    corpus = "\n\n".join(path.read_text() for path in sorted((DATA / "corpus").iterdir()))
    size = settings.GNOSEM_NOTE_MAX_BYTES
    text = (corpus * (size // len(corpus.encode()) + 1)).encode()[:size].decode(errors="ignore")
    start = time.perf_counter()
    with transaction.atomic():
        note = note_write(owner=owner, title="Everything, repeated", content=text)
    seconds = time.perf_counter() - start
    note.refresh_from_db()
    assert note.indexing_status == IndexingStatus.INDEXED, note.indexing_error
    passages = NoteChunk.objects.filter(note=note).count()
    return {
        "bytes": len(text.encode()),
        "passages": passages,
        "seconds": round(seconds, 1),
        "passages_per_second": round(passages / seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on the last line")
    args = parser.parse_args()
    call_command("migrate", interactive=False, verbosity=0)
    User = get_user_model()
    User.objects.filter(username="notes-bench").delete()
    owner = User.objects.create_user(username="notes-bench")
    questions = json.loads((DATA / "questions.json").read_text())
    notes = load(owner)
    report = run(owner, notes, questions)
    print(f"\nNotes retrieval: {len(notes)} documents, {len(questions)} questions, top {TOP_K}")
    print(f"{'signals':8} {'kind':11} {'n':>4} {'hit@1':>6} {'hit@5':>6} {'MRR':>6} {'passage@1':>10}")
    for configuration, kinds in report.items():
        for kind, row in kinds.items():
            print(
                f"{configuration:8} {kind:11} {row['n']:>4} {row['hit@1']:6.3f} {row['hit@5']:6.3f} "
                f"{row['mrr']:6.3f} {row['passage@1']:10.3f}"
            )
    throughput = indexing_throughput(owner)
    print(
        f"\none note of {throughput['bytes']:,} bytes: {throughput['passages']:,} passages written and embedded in "
        f"{throughput['seconds']} s ({throughput['passages_per_second']} passages/s)"
    )
    User.objects.filter(username="notes-bench").delete()
    if args.json:
        print(json.dumps({"retrieval": report, "indexing": throughput}))


if __name__ == "__main__":
    main()
