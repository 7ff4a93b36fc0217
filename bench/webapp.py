"""The web app's and REST API's benchmark: page and endpoint latency, export and import throughput.

    .venv/bin/python bench/webapp.py [--size 10000] [--requests 50]

Runs in-process (Django's test client: no HTTP server, so these are the view's own times) against
its own embedded PostgreSQL under var/bench-web (GNOSEM_DATA_DIR overrides), for one owner with
`--size` indexed memories among 3 owners. Prints one table. Targets on a 2-core machine: dashboard
and API list p95 <= 100 ms; dashboard and API search p95 <= 150 ms; export and import of 10k
memories each under 10 s.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import setup_django

setup_django("bench-web")

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from huey.contrib.djhuey import HUEY  # noqa: E402

from accounts.tokens import token_create  # noqa: E402
from bench import corpus  # noqa: E402
from bench.spine import cached_vectors, load_corpus, percentile  # noqa: E402
from memories.models import Memory  # noqa: E402
from memories.transfer.export import export_chunks, exported_space  # noqa: E402
from memories.transfer.importing import import_memories  # noqa: E402

OWNERS = 3


def timed_requests(client: Client, path: str, params: list[dict], headers: dict | None = None) -> list[float]:
    """Milliseconds per GET, after two warm-up requests."""
    for warm in params[:2]:
        client.get(path, warm, headers=headers or {})
    samples = []
    for query in params:
        start = time.perf_counter()
        response = client.get(path, query, headers=headers or {})
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (path, query, response.status_code)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    data_dir = Path(os.environ["GNOSEM_DATA_DIR"])
    call_command("migrate", interactive=False, verbosity=0)
    call_command("createcachetable", verbosity=0)
    HUEY.flush()
    User = get_user_model()
    User.objects.filter(username__startswith="bench-web-").delete()
    owners = [User.objects.create_user(username=f"bench-web-{i}", email=f"web{i}@example.com") for i in range(OWNERS)]
    texts = corpus.memories(args.size)
    load_corpus(owners, args.size, texts, cached_vectors(texts, data_dir), data_dir)
    owner = owners[0]
    browser = Client(HTTP_HOST="localhost")  # one of the default ALLOWED_HOSTS
    browser.force_login(owner)
    api = Client(HTTP_HOST="localhost")
    bearer = {"Authorization": f"Bearer {token_create(owner=owner, name='bench', scope='read').secret}"}
    queries = corpus.questions(args.requests)
    rows = [
        ("dashboard, newest page", timed_requests(browser, "/", [{}] * args.requests), "p95 <= 100 ms"),
        ("dashboard, search box", timed_requests(browser, "/", [{"q": q} for q in queries]), "p95 <= 150 ms"),
        (
            "GET /api/v1/memories?limit=20",
            timed_requests(api, "/api/v1/memories", [{"limit": 20}] * args.requests, bearer),
            "p95 <= 100 ms",
        ),
        (
            "GET /api/v1/memories/search",
            timed_requests(api, "/api/v1/memories/search", [{"query": q} for q in queries], bearer),
            "p95 <= 150 ms",
        ),
    ]

    start = time.perf_counter()
    document_text = "".join(export_chunks(exported_space(owner)))
    export_seconds = time.perf_counter() - start
    document = json.loads(document_text)
    target = owners[1]
    Memory.objects.filter(space__personal_of=target).delete()
    start = time.perf_counter()
    report = import_memories(owner=target, document=document)
    import_seconds = time.perf_counter() - start
    HUEY.flush()  # the re-embedding tasks the import queued: not part of this measure
    assert report.imported == args.size, report

    print(f"\n{'measure':42} {'n':>6} {'p50 ms':>8} {'p95 ms':>8}  target")
    for name, samples, goal in rows:
        print(f"{name:42} {len(samples):>6} {percentile(samples, 50):8.1f} {percentile(samples, 95):8.1f}  {goal}")
    megabytes = len(document_text.encode()) / 2**20
    print(
        f"\nexport {args.size:,} memories ({megabytes:.1f} MiB): {export_seconds:.2f} s "
        f"({args.size / export_seconds:,.0f} memories/s); target < 10 s at 10k"
    )
    print(
        f"import {args.size:,} memories into an empty account: {import_seconds:.2f} s "
        f"({args.size / import_seconds:,.0f} memories/s); target < 10 s at 10k"
    )


if __name__ == "__main__":
    main()
