"""Embedding through an OpenAI-compatible endpoint (GNOSEM_EMBEDDING_BASE_URL): memories are
indexed and found by meaning with the endpoint's vectors; an endpoint that is down, slow or busy
leaves them pending without spending their attempts, and they are indexed once it answers; an
answer of the wrong shape is refused with a reason; search answers by keyword meanwhile.

The endpoint is a local HTTP server serving the shipped model's real vectors
(tests/memories/embedding_server.py): no remote API can be reached from the tests."""

import json
import math
from collections.abc import Iterator

import numpy as np
import pytest
from django.core.management import call_command

from gnosem.checks import check_remote_embedding_settings
from memories import services
from memories.indexing import embedding
from memories.indexing.remote_embedding import EmbeddingError, EmbeddingUnavailable, RemoteEmbedder
from memories.models import Chunk, IndexingStatus, Memory, ServingModel
from memories.notes import services as notes
from memories.search.pipeline import search_hybrid
from tests.memories.conftest import models_of
from tests.memories.embedding_server import EmbeddingServer, Failure

REMOTE_MODEL = "minilm-over-http"
API_KEY = "sk-embedding-key"
VACATION = "Maria is on vacation in Lisbon from August 3 to August 17."
DEPLOYS = "Production deploys need two approvals in GitHub and only happen Monday to Thursday."


@pytest.fixture
def endpoint(settings) -> Iterator[EmbeddingServer]:
    """Embedding through the local server, with a quick timeout; a fresh remote model each test.
    The model the server serves is loaded first, so that its first answer is not late."""
    embedding.get_embedder(embedding.DEFAULT_MODEL_NAME).warm_up()
    with EmbeddingServer() as server:
        settings.GNOSEM_EMBEDDING_BASE_URL = server.url
        settings.GNOSEM_EMBEDDING_MODEL = REMOTE_MODEL
        settings.GNOSEM_EMBEDDING_API_KEY = API_KEY
        settings.GNOSEM_EMBEDDING_TIMEOUT_SECONDS = 1.0
        yield server
    embedding._embedders.pop(REMOTE_MODEL, None)


def written(owner, *contents: str) -> list[Memory]:
    return [services.memory_write(owner=owner, content=content) for content in contents]


def statuses(*memories: Memory) -> list[tuple[str, int]]:
    return [
        tuple(Memory.objects.filter(pk=memory.pk).values_list("indexing_status", "indexing_attempts").get())
        for memory in memories
    ]


def test_memories_are_indexed_with_the_endpoints_vectors_and_found_by_meaning(owner, endpoint, settings):
    settings.GNOSEM_EMBEDDING_BATCH_SIZE = 2
    memories = written(owner, VACATION, DEPLOYS, "The office plants are watered on Fridays.")

    assert services.memories_index(memory_ids=[memory.pk for memory in memories]) == 3

    assert all(models_of(memory) == {REMOTE_MODEL} for memory in memories)
    assert set(Chunk.objects.values_list("dimension", flat=True)) == {384}
    assert ServingModel.objects.get().name == REMOTE_MODEL
    assert {request["model"] for request in endpoint.requests} == {REMOTE_MODEL}
    assert max(len(request["input"]) for request in endpoint.requests) == 2  # batches of the setting's size
    assert set(endpoint.authorizations) == {f"Bearer {API_KEY}"}
    # "holiday" and "Portugal" are in no memory: only meaning finds it.
    hits = search_hybrid(owner=owner, query="who is away on holiday in Portugal?")
    assert hits[0].memory.content == VACATION
    assert "vector" in hits[0].signals and "keyword" not in hits[0].signals


def test_its_vectors_are_the_models_own_normalised(endpoint):
    vectors = RemoteEmbedder(name=REMOTE_MODEL).embed([VACATION, DEPLOYS])
    local = embedding.get_embedder(embedding.DEFAULT_MODEL_NAME).embed([VACATION, DEPLOYS])

    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors, local, atol=1e-5)


@pytest.mark.parametrize(
    "failure",
    [
        Failure(status=503, body=b'{"error": "loading model"}'),
        Failure(status=502, body=b"<html>Bad gateway</html>"),
        Failure(status=429, body=b'{"error": "slow down"}', headers={"Retry-After": "60"}),
        Failure(delay=1.2),  # past the timeout
    ],
    ids=["503", "502-html", "429-long-retry-after", "timeout"],
)
def test_an_unavailable_endpoint_leaves_memories_pending_without_spending_attempts(owner, endpoint, failure):
    memories = written(owner, VACATION, DEPLOYS)
    endpoint.fail(*[failure] * 10)

    with pytest.raises(EmbeddingUnavailable):
        services.memories_index(memory_ids=[memory.pk for memory in memories])

    assert statuses(*memories) == [(IndexingStatus.PENDING, 0)] * 2
    reasons = set(Memory.objects.values_list("indexing_error", flat=True))
    assert len(reasons) == 1 and reasons.pop().startswith("waiting for the embedding endpoint:")
    assert not Memory.objects.filter(indexing_lease_until__isnull=False).exists()  # free for the next try

    endpoint.failures.clear()  # it answers again
    assert services.memories_index(memory_ids=[memory.pk for memory in memories]) == 2
    assert statuses(*memories) == [(IndexingStatus.INDEXED, 0)] * 2


def test_an_unavailable_endpoint_leaves_a_note_pending_without_spending_an_attempt(owner, endpoint, client, settings):
    settings.GNOSEM_HEALTHZ_DETAILS = True
    note = notes.note_write(owner=owner, title="Vacation", content=VACATION)
    endpoint.fail(*[Failure(status=503)] * 10)

    with pytest.raises(EmbeddingUnavailable):
        notes.note_index(note.pk)

    note.refresh_from_db()
    assert (note.indexing_status, note.indexing_attempts) == (IndexingStatus.PENDING, 0)
    assert note.indexing_error.startswith("waiting for the embedding endpoint:")
    report = client.get("/healthz").json()
    assert "embedding: 1 notes wait for the embedding endpoint" in report["problems"]
    assert report["embedding"]["notes_waiting_for_endpoint"] == 1
    endpoint.failures.clear()  # it answers again
    assert notes.note_index(note.pk)
    note.refresh_from_db()
    assert (note.indexing_status, note.indexing_attempts, note.indexing_error) == (IndexingStatus.INDEXED, 0, "")


def test_healthz_says_how_many_memories_wait_for_the_endpoint(owner, endpoint, client, settings):
    settings.GNOSEM_HEALTHZ_DETAILS = True
    memories = written(owner, VACATION, DEPLOYS)
    endpoint.fail(*[Failure(status=503)] * 10)
    with pytest.raises(EmbeddingUnavailable):
        services.memories_index(memory_ids=[memory.pk for memory in memories])

    report = client.get("/healthz").json()

    assert report["status"] == "degraded"
    assert "embedding: 2 memories wait for the embedding endpoint" in report["problems"]
    assert report["embedding"]["waiting_for_endpoint"] == 2
    endpoint.failures.clear()
    services.memories_index(memory_ids=[memory.pk for memory in memories])
    assert client.get("/healthz").json()["embedding"]["waiting_for_endpoint"] == 0


def test_a_refused_connection_is_unavailable_too(owner, endpoint, settings, closed_port_url):
    settings.GNOSEM_EMBEDDING_BASE_URL = closed_port_url
    [memory] = written(owner, VACATION)

    with pytest.raises(EmbeddingUnavailable, match="cannot reach"):
        services.memories_index(memory_ids=[memory.pk])

    assert statuses(memory) == [(IndexingStatus.PENDING, 0)]


def test_a_passing_failure_is_tried_again_at_once(owner, endpoint):
    memories = written(owner, VACATION)
    endpoint.fail(Failure(status=503), Failure(status=429, headers={"Retry-After": "0"}))

    assert services.memories_index(memory_ids=[memories[0].pk]) == 1
    assert len(endpoint.requests) == 3


def _nan(texts, vectors):
    return {"data": [{"index": i, "embedding": [math.nan] * 384} for i in range(len(texts))]}


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (Failure(status=400, body=b'{"error": {"message": "input too long"}}'), "HTTP 400: input too long"),
        (Failure(status=404, body=b'{"error": "model not found"}'), "HTTP 404"),
        (Failure(payload=lambda texts, vectors: {"data": []}), "asked minilm-over-http for 1 embeddings, got 0"),
        (Failure(payload=lambda texts, vectors: {"nothing": True}), "got no list of"),
        (Failure(payload=_nan), "not a list of finite numbers"),
        (
            Failure(payload=lambda texts, vectors: {"data": [{"index": 0, "embedding": ["a", "b"]}]}),
            "not a list of finite numbers",
        ),
        (
            Failure(payload=lambda texts, vectors: {"data": [{"index": 0, "embedding": [0.0, 0.0, 0.0]}]}),
            "zero vector",
        ),
    ],
    ids=["400", "404", "too-few", "no-data", "nan", "strings", "zero"],
)
def test_an_unusable_answer_counts_an_attempt_with_its_reason(owner, endpoint, failure, reason):
    [memory] = written(owner, VACATION)
    endpoint.fail(failure)

    with pytest.raises(EmbeddingError) as raised:
        services.memories_index(memory_ids=[memory.pk])

    assert not isinstance(raised.value, EmbeddingUnavailable)
    assert statuses(memory) == [(IndexingStatus.PENDING, 1)]
    assert reason in Memory.objects.get(pk=memory.pk).indexing_error


def test_a_batch_of_mixed_dimensions_is_refused(endpoint):
    def mixed(texts, vectors):
        return {"data": [{"index": 0, "embedding": vectors[0]}, {"index": 1, "embedding": vectors[1][:100]}]}

    endpoint.fail(Failure(payload=mixed))

    with pytest.raises(EmbeddingError, match="100, 384 dimensions"):
        RemoteEmbedder(name=REMOTE_MODEL).embed([VACATION, DEPLOYS])


def test_a_model_that_changes_dimension_under_the_same_name_is_refused(endpoint):
    embedder = RemoteEmbedder(name=REMOTE_MODEL)
    assert embedder.dimension == 384
    endpoint.fail(Failure(payload=lambda texts, vectors: {"data": [{"index": 0, "embedding": vectors[0][:128]}]}))

    with pytest.raises(EmbeddingError, match="128 dimensions where it gave 384 before"):
        embedder.embed([VACATION])


def test_nothing_to_embed_asks_nothing(endpoint):
    assert RemoteEmbedder(name=REMOTE_MODEL).embed([]).shape[0] == 0
    assert endpoint.requests == []


def test_answers_out_of_order_are_put_back_in_order(endpoint):
    def reversed_order(texts, vectors):
        return {"data": [{"index": i, "embedding": vectors[i]} for i in reversed(range(len(texts)))]}

    endpoint.fail(Failure(payload=reversed_order))
    vectors = RemoteEmbedder(name=REMOTE_MODEL).embed([VACATION, DEPLOYS])

    assert np.allclose(vectors, embedding.get_embedder(embedding.DEFAULT_MODEL_NAME).embed([VACATION, DEPLOYS]))


def test_search_answers_by_keyword_while_the_endpoint_is_down(owner, endpoint, index):
    index(*written(owner, VACATION, DEPLOYS))
    endpoint.fail(*[Failure(status=503)] * 10)
    asked_before = len(endpoint.requests)

    hits = search_hybrid(owner=owner, query="deploys approvals")

    assert [hit.memory.content for hit in hits] == [DEPLOYS]
    assert set(hits[0].signals) == {"keyword"}
    assert len(endpoint.requests) == asked_before + 1  # asked once, not again and again while the user waits


def test_a_worker_starts_while_the_endpoint_is_down_and_says_so(endpoint, caplog):
    endpoint.fail(*[Failure(status=503)] * 10)

    assert RemoteEmbedder(name=REMOTE_MODEL).warm_up() is False
    assert "does not answer yet" in caplog.text


def test_changing_from_the_shipped_model_to_the_endpoints_reembeds_and_switches(
    owner, settings, shipped_model_memories, endpoint
):
    assert ServingModel.objects.get().name == embedding.DEFAULT_MODEL_NAME
    [new] = written(owner, "The office plants are watered on Fridays.")
    services.memories_index(memory_ids=[new.pk])
    assert models_of(new) == {REMOTE_MODEL, embedding.DEFAULT_MODEL_NAME}  # both, until the switch

    call_command("reembedmemories")

    assert ServingModel.objects.get().name == REMOTE_MODEL
    assert set(Chunk.objects.values_list("model", flat=True)) == {REMOTE_MODEL}
    hits = search_hybrid(owner=owner, query="who is away on holiday in Portugal?")
    assert hits[0].memory.content == VACATION


def test_a_base_url_without_a_model_name_fails_its_check(settings):
    settings.GNOSEM_EMBEDDING_BASE_URL = "http://127.0.0.1:11434/v1"
    settings.GNOSEM_EMBEDDING_MODEL = "default"

    [error] = check_remote_embedding_settings(None)

    assert error.id == "gnosem.E005"
    settings.GNOSEM_EMBEDDING_MODEL = "nomic-embed-text"
    assert check_remote_embedding_settings(None) == []


def test_the_shipped_models_stay_local_with_an_endpoint_configured(endpoint):
    assert not embedding.is_remote(embedding.DEFAULT_MODEL_NAME)
    assert embedding.is_remote(REMOTE_MODEL)
    assert isinstance(embedding.get_embedder(), RemoteEmbedder)
    assert json.dumps(endpoint.requests) == "[]"  # nothing asked until something is embedded
