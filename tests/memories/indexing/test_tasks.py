from datetime import timedelta

from django.utils import timezone

from memories import services
from memories.models import IndexingStatus, Memory
from memories.tasks import embed_memories_task, requeue_stale_memories_task


def test_the_embed_task_indexes_the_memories_it_is_given(owner):
    memory = services.memory_write(owner=owner, content="Indexed by the task.")
    embed_memories_task([memory.pk])  # the test queue runs tasks at once, in this process
    memory.refresh_from_db()
    assert memory.indexing_status == IndexingStatus.INDEXED


def test_the_periodic_sweep_gets_lost_memories_indexed(owner, settings, django_capture_on_commit_callbacks):
    settings.GNOSEM_REQUEUE_AFTER_SECONDS = 300
    lost = services.memory_write(owner=owner, content="Its queue entry vanished.")
    young = services.memory_write(owner=owner, content="Just queued.")
    Memory.objects.filter(pk=lost.pk).update(indexing_queued_at=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):  # a consumer runs it outside any transaction
        assert requeue_stale_memories_task.call_local() == 1
    lost.refresh_from_db()
    assert lost.indexing_status == IndexingStatus.INDEXED
    # The young one was not re-queued (though the worker may batch it with the lost one).
    assert Memory.objects.get(pk=young.pk).indexing_queued_at == young.indexing_queued_at


def test_the_periodic_sweep_with_nothing_stale_does_nothing(owner):
    services.memory_write(owner=owner, content="Just queued.")
    assert requeue_stale_memories_task.call_local() == 0


def test_the_model_is_warmed_once_per_process_whichever_worker_thread_starts_first(caplog, db):
    from memories.indexing import embedding
    from memories.tasks import load_embedding_model

    embedder = embedding.Embedder(name=embedding.DEFAULT_MODEL_NAME, source=embedding.get_embedder().source)
    embedder.model = embedding.get_embedder().model  # the loaded model, without loading it again
    assert embedder.warm_up() is True
    assert embedder.warm_up() is False
    load_embedding_model()
    load_embedding_model()
    assert caplog.text.count("embedding model all-MiniLM-L6-v2 loaded") <= 1
