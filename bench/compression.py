"""The compression benchmark: how much shorter, how often kept, how faithful.

    .venv/bin/python bench/compression.py [--show] [--limit N]

Sends every memory of bench/compression_corpus.py to the configured model (GNOSEM_LLM_BASE_URL,
GNOSEM_LLM_MODEL, GNOSEM_LLM_API_KEY) through the worker's own prompt and guard, one at a time,
and prints a row per memory and a summary: the share the guard keeps, bytes and estimated tokens
(ceil(len/4)) saved where kept, and fact retention in the kept lines (a fact counts when it appears
in the line, ignoring case, spaces and `_`). Targets: >= 35% fewer tokens where kept, with >= 90%
of facts retained. Without a configured model it says so and exits 0. Needs no database.
"""

import argparse
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import setup_django

setup_django(None)

from django.conf import settings  # noqa: E402

from bench.compression_corpus import SAMPLES, Sample  # noqa: E402
from memories.compression import llm  # noqa: E402
from memories.compression import services as compression  # noqa: E402
from memories.models import CompressionStatus  # noqa: E402

TOKEN_SAVING_TARGET = 0.35
FACT_RETENTION_TARGET = 0.90


def normalised(text: str) -> str:
    return re.sub(r"[\s_]+", "", text).lower()


def estimated_tokens(text: str) -> int:
    return (len(text) + 3) // 4  # ceil(len/4), as the database computes it


@dataclass(frozen=True)
class Result:
    sample: Sample
    status: str
    line: str | None
    reason: str
    seconds: float

    @property
    def kept(self) -> bool:
        return self.line is not None

    @property
    def facts_kept(self) -> list[str]:
        line = normalised(self.line or "")
        return [fact for fact in self.sample.facts if normalised(fact) in line]


def compress(sample: Sample) -> Result:
    start = time.perf_counter()
    try:
        outcome = compression.compress_text(sample.text)
    except llm.LLMError as exc:
        return Result(sample, CompressionStatus.LLM_ERROR, None, str(exc), time.perf_counter() - start)
    return Result(sample, outcome.status, outcome.optimized, outcome.reason, time.perf_counter() - start)


def percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def summary_row(name: str, results: list[Result]) -> tuple[str, ...]:
    kept = [result for result in results if result.kept]
    raw_bytes = sum(len(result.sample.text.encode()) for result in kept)
    line_bytes = sum(len(result.line.encode()) for result in kept)
    raw_tokens = sum(estimated_tokens(result.sample.text) for result in kept)
    line_tokens = sum(estimated_tokens(result.line) for result in kept)
    facts = sum(len(result.sample.facts) for result in kept)
    facts_kept = sum(len(result.facts_kept) for result in kept)
    return (
        name,
        str(len(results)),
        f"{len(kept)} ({percent(len(kept), len(results))})",
        percent(raw_bytes - line_bytes, raw_bytes),
        percent(raw_tokens - line_tokens, raw_tokens),
        f"{percent(facts_kept, facts)} ({facts_kept}/{facts})" if facts else "-",
    )


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true", help="print each kept line, the facts it lost, and reasons")
    parser.add_argument("--limit", type=int, default=len(SAMPLES), help="only the first N memories")
    options = parser.parse_args()

    if not llm.llm_configured():
        print(
            "No chat model is configured (GNOSEM_LLM_BASE_URL and GNOSEM_LLM_MODEL are unset), so nothing was "
            "measured.\nPoint them at an OpenAI-compatible server (see docs/compression.md) and run again."
        )
        return 0
    samples = SAMPLES[: options.limit]
    print(f"Model {settings.GNOSEM_LLM_MODEL} at {settings.GNOSEM_LLM_BASE_URL}: {len(samples)} memories\n")

    results: list[Result] = []
    header = ("memory", "kind", "bytes", "outcome", "kept bytes", "tokens", "facts kept", "seconds")
    rows = []
    for sample in samples:
        result = compress(sample)
        results.append(result)
        tokens = f"{estimated_tokens(sample.text)} -> {estimated_tokens(result.line)}" if result.kept else "-"
        rows.append(
            (
                sample.topic,
                "ids" if sample.identifiers else "prose",
                str(len(sample.text.encode())),
                result.status,
                str(len(result.line.encode())) if result.kept else "-",
                tokens,
                f"{len(result.facts_kept)}/{len(sample.facts)}" if result.kept else "-",
                f"{result.seconds:.1f}",
            )
        )
        if options.show:
            lost = sorted(set(sample.facts) - set(result.facts_kept))
            detail = result.line if result.kept else result.reason
            print(
                f"[{sample.topic}] {result.status}: {detail}" + (f"\n    lost: {lost}" if result.kept and lost else "")
            )
    if options.show:
        print()
    print_table(header, rows)

    print()
    groups = [
        ("prose", [result for result in results if not result.sample.identifiers]),
        ("identifiers", [result for result in results if result.sample.identifiers]),
        ("all", results),
    ]
    print_table(
        ("group", "memories", "kept by guard", "bytes saved where kept", "tokens saved where kept", "facts in kept"),
        [summary_row(name, group) for name, group in groups if group],
    )

    kept = [result for result in results if result.kept]
    seconds = [result.seconds for result in results]
    print(f"\nlatency per memory: p50 {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s")
    errors = sorted({result.reason for result in results if result.status == CompressionStatus.LLM_ERROR})
    if errors:
        print(f"errors ({len(errors)} distinct): " + "; ".join(errors[:5]))
    if kept:
        raw_tokens = sum(estimated_tokens(result.sample.text) for result in kept)
        saved = 1 - sum(estimated_tokens(result.line) for result in kept) / raw_tokens
        retained = sum(len(result.facts_kept) for result in kept) / sum(len(result.sample.facts) for result in kept)
        print(
            f"targets: tokens saved where kept {saved:.1%} (>= {TOKEN_SAVING_TARGET:.0%}: "
            f"{'met' if saved >= TOKEN_SAVING_TARGET else 'missed'}), facts retained {retained:.1%} "
            f"(>= {FACT_RETENTION_TARGET:.0%}: {'met' if retained >= FACT_RETENTION_TARGET else 'missed'})"
        )
    else:
        print("targets: nothing was kept, so nothing to compare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
