"""Where a request's milliseconds go around the search: each step an MCP or REST search,
session_start and explore_graph take, timed alone in this process, on the store bench/scale.py
leaves (owner A's 10,000 memories in its data folder; run phase 10k first).

    .venv/bin/python bench/scale.py --phases 10k      # once, to build the store
    .venv/bin/python bench/overhead.py                # then, as often as needed

Prints p50s over `--queries` (200) questions from bench/corpus.py, each step after a few warm-up
calls: authentication (the token and its owner), the reach, the rate-limit count, the whole MCP
view and the whole REST view (through Django's request factory, no HTTP), `search_hybrid`,
`session_start` with the query, and `explore_graph` from the query, from the entity that exploration
starts at, and from that entity with the search left out (`graph_explore_from`). Only public
functions are called, so that the same script measures an earlier commit.
"""

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import setup_django

setup_django("scale")

from django.contrib.auth import get_user_model  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.test import RequestFactory  # noqa: E402

from accounts.reach import token_reach  # noqa: E402
from accounts.tokens import token_authenticate, token_create  # noqa: E402
from bench import corpus  # noqa: E402
from bench.scale import TOP_K, USER_PREFIX, code_version  # noqa: E402
from memories.api.views import MemorySearchView  # noqa: E402
from memories.graph.explore import graph_explore, graph_explore_from  # noqa: E402
from memories.limits.rates import token_rate_limit_hit  # noqa: E402
from memories.mcp.views import mcp_endpoint  # noqa: E402
from memories.reading.session import session_start  # noqa: E402
from memories.search.pipeline import search_hybrid  # noqa: E402

WARM_UP = 10
CLIENT = "assistant"


def p50_ms(step: Callable[[str], object], queries: list[str]) -> float:
    """The median time of `step` over the queries, after a few untimed calls."""
    for query in queries[:WARM_UP]:
        step(query)
    times = []
    for query in queries:
        start = time.perf_counter()
        step(query)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    owner = get_user_model().objects.filter(username=f"{USER_PREFIX}a").first()
    if owner is None:
        sys.exit("no store: run `bench/scale.py --phases 10k` first (with the same GNOSEM_DATA_DIR)")
    queries = corpus.questions(args.queries)
    secret = token_create(owner=owner, name=CLIENT, scope="read").secret
    token = token_authenticate(secret)
    assert token is not None
    reach = token_reach(token)
    entry = {query: graph_explore(owner=reach, query=query).entry for query in queries}
    fallback = next(entities for entities in entry.values() if entities)
    requests = RequestFactory(SERVER_NAME="127.0.0.1")
    authorization = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    rest_view = MemorySearchView.as_view()

    def mcp_search(query: str) -> None:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "memory_search", "arguments": {"query": query, "top_k": TOP_K}},
        }
        request = requests.post(
            "/mcp",
            json.dumps(body),
            content_type="application/json",
            HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
            **authorization,
        )
        checked(mcp_endpoint(request))

    def rest_search(query: str) -> None:
        response = rest_view(requests.get("/api/v1/memories/search", {"query": query, "top_k": TOP_K}, **authorization))
        response.render()
        checked(response)

    steps: dict[str, Callable[[str], object]] = {
        "authenticate": lambda query: token_authenticate(secret),
        "reach": lambda query: token_reach(token),
        "rate-limit count": lambda query: token_rate_limit_hit(token),
        "search_hybrid": lambda query: search_hybrid(owner=reach, query=query, top_k=TOP_K),
        "MCP view (memory_search)": mcp_search,
        "REST view (search)": rest_search,
        "session_start": lambda query: session_start(owner=reach, client=CLIENT, query=query),
        "explore_graph from the query": lambda query: graph_explore(owner=reach, query=query),
        "explore_graph from an entity": lambda query: graph_explore(
            owner=reach, entity=(entry[query] or fallback)[0].name
        ),
        "  its graph alone": lambda query: graph_explore_from(owner=reach, entry=entry[query] or fallback),
    }
    print(f"request overhead, code of {code_version()}, {args.queries} queries; p50 in ms")
    for name, step in steps.items():
        print(f"{name:32} {p50_ms(step, queries):7.2f}")


def checked(response: HttpResponse) -> None:
    if response.status_code != 200:
        raise RuntimeError(f"{response.status_code}: {response.content[:300]!r}")


if __name__ == "__main__":
    main()
