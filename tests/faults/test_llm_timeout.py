"""The model times out on every call: long memories are kept raw, indexed and found at once
(embedding never waits on compression), and compression works again when the model answers."""

from tests.faults.conftest import Tally, marker
from tests.memories.chat_server import Reply

WRITES = 4


def test_memories_are_kept_and_found_while_the_model_times_out(served, chat):
    word, tally = marker(), Tally()
    chat.script(Reply(content="FACT=too late", delay=5))  # GNOSEM_LLM_TIMEOUT_SECONDS is 1
    asked_before = len(chat.requests)
    padding = "The quarterly review covered hiring, the office move, the vendor contracts and the roadmap. " * 5
    for number in range(WRITES):
        served.write(tally, f"{word}t{number} {padding}")
    assert tally.refused == []
    served.check_everything_acknowledged_is_kept(tally, "LLM timing out", search_for=lambda text: text.split()[0])

    def compression_given_up() -> bool:
        with served.database() as db:
            rows = db.execute(
                "SELECT compression_status, content_optimized IS NULL FROM memories_memory "
                "WHERE public_id = ANY(%s::uuid[])",
                [list(tally.acknowledged)],
            ).fetchall()
        return len(rows) == WRITES and all(status == "llm_error" and kept_raw for status, kept_raw in rows)

    served.wait_for(compression_given_up, 60, "compression to give up (fail open)", interval=0.5)
    assert len(chat.requests) - asked_before >= WRITES * 2  # each tried GNOSEM_LLM_MAX_ATTEMPTS times

    # The model is back: the next long memory is compressed.
    chat.script(Reply(content=f"FACT={word} recovered"))
    recovered = Tally()
    served.write(recovered, f"{word}r {padding}")
    (memory_id,) = recovered.acknowledged

    def compressed() -> bool:
        memory = served.session.get(f"{served.url}/api/v1/memories/{memory_id}", timeout=30).json()
        return memory["optimized"] and memory["content"] == f"FACT={word} recovered"

    served.wait_for(compressed, 60, "compression after the model recovered", interval=0.5)
