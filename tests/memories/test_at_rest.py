"""A copy of the database gives none of a user's words away: 200 distinctive phrases planted
through the product (memories, compressed forms, earlier versions, note titles and texts, tags,
entity names, clients) and a plain `pg_dump` of the whole database searched for them."""

import pytest

from bench.planted import database_dump, found_in, plant
from memories.graph.explore import entity_find
from memories.models import Memory, Note
from memories.reading.counting import memory_count
from memories.search.pipeline import search_hybrid
from memories.selectors import MemoryFilters


@pytest.mark.django_db(transaction=True)  # committed: pg_dump reads through a connection of its own
def test_a_pg_dump_holds_none_of_the_planted_phrases(owner):
    planted = plant(owner)

    dump = database_dump()

    assert {place: tables for place, tables in found_in(dump, planted).items() if tables} == {}
    assert sum(len(words) for words in planted.values()) == 200
    assert all(str(memory.public_id) in dump for memory in Memory.objects.all())  # the dump holds the rows
    # Everything planted is there, through the product.
    word = planted["memory text"][7]
    assert word in search_hybrid(owner=owner, query=word)[0].memory.content
    assert {tag for memory in Memory.objects.filter(author=owner) for tag in memory.tags} == set(planted["tag"])
    assert sorted(note.title.removeprefix("Runbook ") for note in Note.objects.all()) == sorted(planted["note title"])
    assert entity_find(owner=owner, name=planted["entity name"][3]).name == planted["entity name"][3]
    clients = memory_count(owner=owner, filters=MemoryFilters(), group_by="written_by").groups or []
    assert set(planted["client"]) <= {client for client, _ in clients}
