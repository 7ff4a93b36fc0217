"""mem0's memories as the real open-source mem0 returns them (`Memory.add(..., infer=False)` with
its local vector store and a local embedding model, then `get_all`), and the platform's paged
`get_all` answer: imported with their ids, metadata and times, found by meaning; bad files refused."""

import json
from datetime import datetime

import pytest

from gnosem.errors import ValidationError
from memories.models import Memory
from memories.search.pipeline import search_hybrid
from memories.transfer import importing
from memories.transfer.formats import read_import_file
from tests.memories.transfer.peer_tools import drive

pytestmark = pytest.mark.django_db

TICKET = "Alice's ticket #4521 about a double charge was resolved with a refund"


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> list[dict]:
    """What mem0's get_all returned, once per user, agent and run (the driver's calls)."""
    folder = tmp_path_factory.mktemp("mem0")
    drive("mem0", "mem0", str(folder))
    return [call["response"] for call in json.loads((folder / "get_all.json").read_text())["calls"]]


def imported(owner, data: bytes, file_format: str | None = None) -> importing.ImportReport:
    return importing.import_file(owner=owner, file=read_import_file(data, file_format))


def test_each_get_all_answer_imports_and_the_memories_they_share_arrive_once(owner, index, answers):
    reports = [imported(owner, json.dumps(answer).encode()) for answer in answers]

    assert {report.format for report in reports} == {"mem0"}
    assert sum(report.imported for report in reports) == 8
    assert sum(report.duplicates for report in reports) == 2  # the ticket is Alice's, the agent's and the run's
    memories = {memory.content: memory for memory in index(*Memory.objects.all())}
    ticket = next(memory for text, memory in memories.items() if text.startswith(TICKET))
    assert ticket.written_by == "mem0"
    assert {"mem0-user:alice", "mem0-agent:support-agent", "mem0-run:run-2024-06-01", "ticket:4521"} <= set(ticket.tags)
    item = next(item for answer in answers for item in answer["results"] if item["memory"].startswith(TICKET))
    assert ticket.created_at == datetime.fromisoformat(item["created_at"])
    peanuts = memories["Noted: no peanuts in any recipe."]
    assert {"mem0-actor:chef-bot", "category:health"} <= set(peanuts.tags)
    bob = next(memory for text, memory in memories.items() if "Procope" in text)
    assert {"mem0-user:bob", "travel", "food", "lang:fr"} <= set(bob.tags)
    assert search_hybrid(owner=owner, query="food allergy")[0].memory.content == "I am allergic to peanuts."
    assert search_hybrid(owner=owner, query="4521")[0].memory.pk == ticket.pk


PLATFORM_PAGE = {
    "count": 2,
    "next": None,
    "previous": None,
    "results": [
        {
            "id": "3c5d0c59-3a5e-4a61-8d8e-6d4a3f0c9b11",
            "memory": "Prefers window seats on long flights",
            "user_id": "carol",
            "session_id": "trip-2025",
            "app_id": "travel-app",
            "metadata": {"source": "chat"},
            "categories": ["travel", "preferences"],
            "structured_attributes": {"day": 3},
            "created_at": "2025-03-02T10:15:00Z",
            "updated_at": "2025-03-04T08:00:00Z",
        },
        {"id": "5e1f", "memory": "Works in Lisbon", "created_at": "2025-03-01T09:00:00-05:00"},
    ],
}


def test_the_platforms_get_all_page_imports_with_its_session_as_the_run(owner):
    report = imported(owner, json.dumps(PLATFORM_PAGE).encode())

    assert (report.imported, report.records) == (2, 2)
    stored = {memory.content: memory for memory in Memory.objects.all()}
    seat = stored["Prefers window seats on long flights"]
    assert seat.tags == [
        "mem0-user:carol",
        "mem0-run:trip-2025",
        "mem0-app:travel-app",
        "travel",
        "preferences",
        "source:chat",
    ]
    assert seat.created_at.isoformat() == "2025-03-02T10:15:00+00:00"
    assert stored["Works in Lisbon"].created_at.isoformat() == "2025-03-01T14:00:00+00:00"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"results": [{"memory": 7}]}, "entry 1"),
        ({"results": [{"memory": "x", "created_at": "next Tuesday"}]}, "entry 1"),
        ({"results": [{"memory": "x", "metadata": [1]}]}, "entry 1"),
        ({"results": [{"memory": ""}]}, "entry 1"),
        ({"results": [{"memory": "x" * 60_000}]}, "50,000"),
        ({"something": "else"}, "not mem0 memories"),
    ],
)
def test_a_bad_file_is_refused_naming_the_entry(owner, document, message):
    with pytest.raises(ValidationError) as refused:
        imported(owner, json.dumps(document).encode(), "mem0")

    assert message in refused.value.message
    assert Memory.objects.count() == 0
