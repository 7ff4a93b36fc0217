"""SIGKILL the consumer in the middle of a batch: serve starts it again, and every write
acknowledged before or while it was down is stored, indexed and found."""

import os
import signal

from tests.faults.conftest import Tally, marker

WRITES_BEFORE = 120
WRITES_WHILE_DOWN = 20
TOPICS = ["the build cache", "the deploy pipeline", "the staging database", "the release train", "the on-call rota"]


def content(word: str, number: int) -> str:
    topic = TOPICS[number % len(TOPICS)]
    return f"Note {word}n{number}: we moved {topic} to the new cluster on day {number} and it held up under load."


def word_of(text: str) -> str:
    """The memory's own word ("zq...n17"), found by keyword search in that memory only."""
    return text.split()[1].rstrip(":")


def test_a_worker_killed_mid_batch_is_restarted_and_nothing_is_lost(served):
    word, tally = marker(), Tally()
    worker = served.child_pid("worker")
    assert worker is not None
    for number in range(WRITES_BEFORE):
        served.write(tally, content(word, number))

    # Kill it while it holds a claim on memories it has not stored yet.
    written = list(tally.acknowledged)
    with served.database() as db:

        def mid_batch() -> bool:
            (claimed,) = db.execute(
                "SELECT count(*) FROM memories_memory WHERE indexing_status = 'pending' "
                "AND indexing_lease_until > now() AND public_id = ANY(%s::uuid[])",
                [written],
            ).fetchone()
            return claimed > 0

        served.wait_for(mid_batch, 60, "claimed batch", interval=0.05)
        os.kill(worker, signal.SIGKILL)
        (orphaned,) = db.execute(
            "SELECT count(*) FROM memories_memory WHERE indexing_status = 'pending' AND public_id = ANY(%s::uuid[])",
            [written],
        ).fetchone()
    assert orphaned > 0

    for number in range(WRITES_BEFORE, WRITES_BEFORE + WRITES_WHILE_DOWN):
        served.write(tally, content(word, number))
    served.wait_for(lambda: served.child_pid("worker") not in (None, worker), 15, "new worker process")
    assert f"worker process (pid {worker}) was killed by SIGKILL" in served.log()

    assert tally.refused == []
    served.check_everything_acknowledged_is_kept(
        tally, f"worker SIGKILLed mid-batch ({orphaned} claimed, not stored)", search_for=word_of
    )
    served.wait_for(lambda: served.health()["status"] == "ok", 60, "healthy status after the restart")
