"""Compression of long memories: the guard, and every outcome of a write against a real local
chat-completions server (the memory is always stored; status and reason are recorded)."""

from datetime import timedelta

import pytest
from django.utils import timezone
from huey.contrib.djhuey import HUEY

from memories import selectors, services
from memories.compression import services as compression
from memories.models import Chunk, CompressionStatus, IndexingStatus, Memory
from memories.tasks import compress_memory_task, requeue_stale_memories_task
from tests.memories.chat_server import Reply
from tests.memories.conftest import GOOD, RAW
from tests.memories.stored import store

RAW_EDITED = RAW.replace("eleven minutes", "twenty-five minutes")
GOOD_EDITED = GOOD.replace("11 min", "25 min")


@pytest.fixture
def write(owner, django_capture_on_commit_callbacks):
    """Write a memory and run what its commit queues (embedding, compression), as a worker would."""

    def write(content: str = RAW) -> Memory:
        with django_capture_on_commit_callbacks(execute=True):
            memory = services.memory_write(owner=owner, content=content)
        memory.refresh_from_db()
        return memory

    return write


class TestGuard:
    def test_it_keeps_a_shorter_line_of_key_value_pairs(self):
        assert compression.guard(RAW, GOOD) == compression.Outcome(CompressionStatus.COMPRESSED, optimized=GOOD)

    def test_it_stores_key_colon_value_and_spaced_pipes_as_key_equals_value(self):
        spoken = GOOD.replace("=", ": ").replace("|", " | ")
        assert compression.guard(RAW, f"  {spoken}\n").optimized == GOOD

    def test_a_value_may_contain_colons_and_equals_signs(self):
        line = "FACT=timeout=30s|DATE: 2025-03-04T10:00|FACT=see https://example.com/a?b=c"
        assert compression.guard(RAW, line).optimized == (
            "FACT=timeout=30s|DATE=2025-03-04T10:00|FACT=see https://example.com/a?b=c"
        )

    @pytest.mark.parametrize(
        ("answer", "reason"),
        [
            ("", "the model answered nothing"),
            ("  \n ", "the model answered nothing"),
            (GOOD.replace("|", "\n"), "the answer has 8 lines, not one"),
            ("Sure! Here is the compressed memory: " + GOOD, "is not a KEY=value pair"),
            ("topic=billing|FACT=port 5433", "'topic=billing' is not a KEY=value pair"),
            ("TOPIC=billing||FACT=port 5433", "'' is not a KEY=value pair"),
            ("TOPIC=billing|", "'' is not a KEY=value pair"),
            ("TOPIC=|FACT=port 5433", "'TOPIC=' is not a KEY=value pair"),
            ("```\n" + GOOD + "\n```", "the answer has 3 lines, not one"),
        ],
    )
    def test_it_refuses_what_is_not_one_well_formed_line(self, answer, reason):
        outcome = compression.guard(RAW, answer)
        assert outcome.status == CompressionStatus.MALFORMED
        assert outcome.optimized is None
        assert reason in outcome.reason

    def test_it_refuses_a_line_that_is_not_strictly_shorter_in_bytes(self):
        raw = "x" * 450
        assert compression.guard(raw, "FACT=" + "x" * 445).status == CompressionStatus.NOT_SHORTER  # equal
        assert compression.guard(raw, "FACT=" + "x" * 444).status == CompressionStatus.COMPRESSED
        longer = compression.guard(raw, "FACT=" + "x" * 500)
        assert longer == compression.Outcome(
            CompressionStatus.NOT_SHORTER, reason="505 bytes compressed against 450 as written"
        )

    def test_it_counts_bytes_not_characters(self):
        raw = "a" * 450
        assert compression.guard(raw, "FACT=" + "é" * 300).status == CompressionStatus.NOT_SHORTER  # 605 bytes


def test_the_token_cap_is_half_the_texts_bytes_within_the_setting(settings):
    settings.GNOSEM_LLM_MAX_TOKENS = 2048
    assert compression.token_cap("x" * 1000) == 500
    assert compression.token_cap("x" * 50_000) == 2048
    assert compression.token_cap("x" * 10) == 16


def test_the_retry_delay_doubles_follows_the_servers_hint_and_stays_under_an_hour(settings):
    settings.GNOSEM_LLM_RETRY_DELAY_SECONDS = 30
    assert [compression.retry_delay(attempt) for attempt in (1, 2, 3)] == [30, 60, 120]
    assert compression.retry_delay(1, retry_after=500) == 500
    assert compression.retry_delay(3, retry_after=5) == 120
    assert compression.retry_delay(20) == 3600


def test_the_prompt_asks_for_the_designs_one_line_and_keys():
    for key in ("TOPIC", "PROJECT", "DECISION", "PREFERENCE", "PERSON", "PLACE", "DATE", "STACK", "PROBLEM"):
        assert key in compression.SYSTEM_PROMPT
    for rule in ("one line", "Keep every distinct fact", "Add nothing", "no preamble"):
        assert rule in compression.SYSTEM_PROMPT


def test_a_long_memory_is_stored_with_its_compressed_form(write, chat_server):
    chat_server.answer(GOOD)
    memory = write()
    assert memory.content == RAW
    assert memory.content_optimized == GOOD
    assert memory.compression_status == CompressionStatus.COMPRESSED
    assert memory.compression_error == ""
    assert memory.tokens_raw == (len(RAW) + 3) // 4
    assert memory.tokens_optimized == (len(GOOD) + 3) // 4
    [request] = chat_server.requests
    assert request["messages"] == [
        {"role": "system", "content": compression.SYSTEM_PROMPT},
        {"role": "user", "content": RAW},
    ]
    assert request["temperature"] == 0
    assert request["max_tokens"] == compression.token_cap(RAW)


def test_the_embedding_uses_the_raw_text(write, chat_server):
    chat_server.answer(GOOD)
    memory = write()
    assert memory.indexing_status == IndexingStatus.INDEXED
    assert Chunk.objects.filter(memory=memory).order_by("-end").first().end == len(RAW)


@pytest.mark.parametrize(
    ("reply", "status", "reason", "requests"),
    [
        (Reply(content="FACT=" + RAW), "not_shorter", "bytes compressed against", 1),
        (Reply(content=GOOD.replace("|", "\n")), "malformed", "lines, not one", 1),
        (Reply(content=""), "malformed", "the model answered nothing", 1),
        (Reply(content=None), "malformed", "the model answered nothing", 1),
        (Reply(content="I cannot help with that."), "malformed", "is not a KEY=value pair", 1),
        (Reply(content="PROJECT=billing|TOPIC=sta", finish_reason="length"), "malformed", "cut off at the", 1),
        (Reply(content=GOOD, delay=1.0), "llm_error", "no answer within 0.5 s (3 attempts)", 3),
        (Reply(status=429), "llm_error", "HTTP 429: scripted failure 429 (3 attempts)", 3),
        (Reply(status=500), "llm_error", "HTTP 500: scripted failure 500 (3 attempts)", 3),
        (Reply(status=401), "llm_error", "HTTP 401: scripted failure 401", 1),
        (Reply(body=b"<html>gateway</html>"), "llm_error", "the answer is not a chat completion", 1),
    ],
)
def test_whatever_the_model_does_the_memory_is_stored_raw_with_the_reason(
    write, chat_server, reply, status, reason, requests
):
    chat_server.script(reply)
    memory = write()
    assert memory.content == RAW
    assert memory.content_optimized is None
    assert memory.tokens_optimized is None
    assert memory.compression_status == status
    assert reason in memory.compression_error
    assert memory.indexing_status == IndexingStatus.INDEXED
    assert len(chat_server.requests) == requests


def test_a_refused_connection_is_recorded_after_the_retries(write, closed_port_url):
    memory = write()
    assert memory.compression_status == CompressionStatus.LLM_ERROR
    assert memory.compression_error.startswith(f"cannot reach {closed_port_url}")
    assert memory.compression_error.endswith("(2 attempts)")
    assert memory.content_optimized is None


def test_transient_errors_are_retried_until_an_answer_comes(write, chat_server):
    chat_server.script(Reply(status=503), Reply(status=429), Reply(content=GOOD))
    memory = write()
    assert memory.compression_status == CompressionStatus.COMPRESSED
    assert memory.content_optimized == GOOD
    assert memory.compression_error == ""
    assert len(chat_server.requests) == 3


def test_retries_wait_longer_each_time_and_the_last_failure_is_recorded(write, chat_server, settings):
    settings.GNOSEM_LLM_RETRY_DELAY_SECONDS = 30
    chat_server.script(Reply(status=503))
    try:
        memory = write()
        assert memory.compression_status == CompressionStatus.PENDING
        assert memory.compression_error == "attempt 1 of 3 failed (HTTP 503: scripted failure 503); next in 30 s"
        [retry] = HUEY.scheduled()
        assert retry.name.endswith("compress_memory_task") and retry.args == (memory.pk, 2)
        assert abs(retry.eta - (timezone.now().replace(tzinfo=None) + timedelta(seconds=30))) < timedelta(seconds=5)
        HUEY.flush()

        compress_memory_task.call_local(memory.pk, 2)
        memory.refresh_from_db()
        assert memory.compression_error.endswith("next in 60 s")
        [retry] = HUEY.scheduled()
        assert retry.args == (memory.pk, 3)
        HUEY.flush()

        compress_memory_task.call_local(memory.pk, 3)
        memory.refresh_from_db()
        assert memory.compression_status == CompressionStatus.LLM_ERROR
        assert memory.compression_error == "HTTP 503: scripted failure 503 (3 attempts)"
        assert HUEY.scheduled() == []
    finally:
        HUEY.flush()


def test_a_rate_limit_waits_as_long_as_the_server_asks(write, chat_server, settings):
    settings.GNOSEM_LLM_RETRY_DELAY_SECONDS = 1
    chat_server.script(Reply(status=429, headers={"Retry-After": "90"}))
    try:
        memory = write()
        assert memory.compression_error.endswith("next in 90 s")
    finally:
        HUEY.flush()


def test_a_short_memory_is_not_sent_to_the_model(write, chat_server):
    memory = write("x" * 400)
    assert memory.compression_status == CompressionStatus.SKIPPED_SHORT
    assert chat_server.requests == []


def test_without_a_model_long_memories_are_stored_raw_as_disabled(write):
    memory = write()
    assert memory.compression_status == CompressionStatus.DISABLED
    assert memory.content_optimized is None


def test_a_memory_queued_before_the_model_was_turned_off_ends_disabled(
    owner, chat_server, settings, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        memory = services.memory_write(owner=owner, content=RAW)
    assert memory.compression_status == CompressionStatus.PENDING
    settings.GNOSEM_LLM_MODEL = None
    for callback in callbacks:
        callback()
    memory.refresh_from_db()
    assert memory.compression_status == CompressionStatus.DISABLED
    assert chat_server.requests == []


def test_a_memory_that_no_longer_waits_is_not_compressed_again(write, chat_server):
    chat_server.answer(GOOD)
    memory = write()
    assert compression.memory_compress(memory_id=memory.pk) is None
    assert compression.memory_compress(memory_id=0) is None
    assert len(chat_server.requests) == 1


def test_new_content_is_compressed_again(write, owner, chat_server, django_capture_on_commit_callbacks):
    chat_server.answer(GOOD)
    memory = write()
    chat_server.answer(GOOD_EDITED)
    with django_capture_on_commit_callbacks(execute=True):
        services.memory_update(owner=owner, public_id=memory.public_id, content=RAW_EDITED)
    memory.refresh_from_db()
    assert memory.content_optimized == GOOD_EDITED
    assert chat_server.requests[-1]["messages"][1]["content"] == RAW_EDITED


def test_changing_only_tags_keeps_the_compressed_form(write, owner, chat_server, django_capture_on_commit_callbacks):
    chat_server.answer(GOOD)
    memory = write()
    with django_capture_on_commit_callbacks(execute=True):
        services.memory_update(owner=owner, public_id=memory.public_id, tags=["billing"])
    memory.refresh_from_db()
    assert memory.content_optimized == GOOD
    assert len(chat_server.requests) == 1


def test_an_edit_clears_the_reason_of_an_earlier_failure(write, owner, chat_server, django_capture_on_commit_callbacks):
    chat_server.script(Reply(status=401))
    memory = write()
    assert memory.compression_error
    with django_capture_on_commit_callbacks(execute=False):
        updated = services.memory_update(owner=owner, public_id=memory.public_id, content=RAW_EDITED)
    assert updated.compression_status == CompressionStatus.PENDING
    assert updated.compression_error == ""


def test_a_result_for_text_edited_while_the_model_worked_is_not_stored(transactional_db, owner, chat_server, settings):
    """Real concurrency: the edit commits from the server's thread while the model 'thinks'; it
    queues its own compression, whose answer (for the new text) is the one kept."""
    settings.GNOSEM_LLM_TIMEOUT_SECONDS = 60  # the edit embeds its text before the first answer is sent
    chat_server.script(Reply(content=GOOD), Reply(content=GOOD_EDITED))
    memory = services.memory_write(owner=owner, content="short for now")
    store(memory.pk, content=RAW, compression_status=CompressionStatus.PENDING)

    def edit() -> None:
        services.memory_update(owner=owner, public_id=memory.public_id, content=RAW_EDITED)

    chat_server.on_request = edit
    assert compression.memory_compress(memory_id=memory.pk) is None  # its answer was for RAW
    memory.refresh_from_db()
    assert memory.content == RAW_EDITED
    assert memory.content_optimized == GOOD_EDITED
    assert [request["messages"][1]["content"] for request in chat_server.requests] == [RAW, RAW_EDITED]


def test_the_tokens_compression_saves_count_in_the_owners_usage(write, owner, chat_server):
    chat_server.answer(GOOD)
    write()
    chat_server.script(Reply(status=401))
    write(RAW_EDITED)
    usage = selectors.memory_usage(owner)
    assert usage.compressed == 1
    assert usage.tokens_raw == (len(RAW) + 3) // 4 + (len(RAW_EDITED) + 3) // 4
    assert usage.tokens_saved == (len(RAW) + 3) // 4 - (len(GOOD) + 3) // 4


def test_a_pending_compression_is_due_now_and_an_outcome_clears_it(write, chat_server, settings):
    settings.GNOSEM_LLM_RETRY_DELAY_SECONDS = 30
    chat_server.script(Reply(status=503), Reply(content=GOOD))
    try:
        memory = write()
        # The retry is due in 30 s, and its time is on the memory, not only in the queue.
        assert memory.compression_due_at - timezone.now() > timedelta(seconds=25)
        HUEY.flush()
        compress_memory_task.call_local(memory.pk, 2)
        memory.refresh_from_db()
        assert (memory.compression_status, memory.compression_due_at) == (CompressionStatus.COMPRESSED, None)
    finally:
        HUEY.flush()


def test_the_sweep_requeues_a_compression_whose_task_was_lost(
    owner, chat_server, settings, django_capture_on_commit_callbacks
):
    settings.GNOSEM_REQUEUE_AFTER_SECONDS = 300
    lost = services.memory_write(owner=owner, content=RAW)  # its on-commit task never runs here
    waiting = services.memory_write(owner=owner, content=RAW_EDITED)
    Memory.objects.filter(pk=lost.pk).update(compression_due_at=timezone.now() - timedelta(minutes=6))
    # A retry scheduled for later is not overdue, however long ago the memory was written.
    Memory.objects.filter(pk=waiting.pk).update(compression_due_at=timezone.now() + timedelta(minutes=20))
    chat_server.answer(GOOD)

    with django_capture_on_commit_callbacks(execute=True):  # a consumer runs it outside any transaction
        assert requeue_stale_memories_task.call_local() == 1

    lost.refresh_from_db()
    assert (lost.compression_status, lost.content_optimized) == (CompressionStatus.COMPRESSED, GOOD)
    assert Memory.objects.get(pk=waiting.pk).compression_status == CompressionStatus.PENDING
    assert len(chat_server.requests) == 1


def test_a_compression_finding_every_slot_taken_waits_and_leaves_the_thread_free(owner, chat_server):
    from memories import tasks

    memory = services.memory_write(owner=owner, content=RAW)
    chat_server.answer(GOOD)
    slots = tasks.compression_slots()
    taken = 0
    while slots.acquire(blocking=False):  # other threads are all waiting on the model
        taken += 1
    try:
        compress_memory_task.call_local(memory.pk)
        memory.refresh_from_db()
        assert memory.compression_status == CompressionStatus.PENDING and not chat_server.requests
        assert memory.compression_due_at - timezone.now() > timedelta(seconds=3)
        [later] = HUEY.scheduled()
        assert later.args == (memory.pk, 1)
    finally:
        HUEY.flush()
        for _ in range(taken):
            slots.release()

    compress_memory_task.call_local(memory.pk)  # a slot is free again
    memory.refresh_from_db()
    assert memory.compression_status == CompressionStatus.COMPRESSED


def test_the_compression_slots_follow_the_consumers_worker_count_when_used(settings):
    from memories import tasks

    settings.HUEY = {**settings.HUEY, "consumer": {**settings.HUEY["consumer"], "workers": 4}}
    slots = tasks.compression_slots()
    taken = [slots.acquire(blocking=False) for _ in range(4)]
    try:
        assert taken == [True, True, True, False]  # one thread of four is always left to embed
    finally:
        for _ in range(sum(taken)):
            slots.release()
