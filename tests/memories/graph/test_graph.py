"""The graph: entities linked as memories are indexed, updated, compressed and deleted; explore_graph
through the service, MCP and REST; graph expansion in search; the rebuild command; and a stranger
seeing none of it."""

import re
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.spaces import personal_space_of
from gnosem.errors import NotFound, ValidationError
from memories import services
from memories.entities.extraction import entity_key
from memories.graph import linking as graph
from memories.graph.explore import EDGES_PER_ENTITY, MAX_ENTRY_MEMORIES, QUERY_RESULTS, graph_explore
from memories.models import Entity, EntityMention, Memory, NoteMention
from memories.notes import services as notes
from memories.search.pipeline import search_hybrid
from tests.memories.conftest import GOOD, RAW
from tests.memories.stored import entities_keyed

ATLAS_DEADLINE = "Priya Raman moved the Atlas launch to June because the payments audit slipped."
ATLAS_STACK = "The Atlas service runs on PostgreSQL 16; its migration scripts live in /srv/atlas/migrations."
PRIYA_HIKING = "Priya Raman goes hiking in the Dolomites every September."
ERROR_CODE = "The checkout fails with ERR-4312 when the payments audit flag is still set."


def mention_names(memory: Memory) -> set[str]:
    return {entity.key for entity in Entity.objects.filter(mentions__memory=memory)}


@pytest.fixture
def atlas(owner, index) -> list[Memory]:
    return index(
        services.memory_write(owner=owner, content=ATLAS_DEADLINE, tags=["project:atlas"]),
        services.memory_write(owner=owner, content=ATLAS_STACK),
        services.memory_write(owner=owner, content=PRIYA_HIKING),
        services.memory_write(owner=owner, content=ERROR_CODE),
    )


def test_indexing_links_the_entities_of_text_and_tags(atlas):
    deadline, stack, _hiking, error = atlas

    assert {"priya raman", "atlas"} <= mention_names(deadline)
    assert {"atlas", "postgresql 16", "/srv/atlas/migrations"} <= mention_names(stack)
    assert "err-4312" in mention_names(error)
    tagged = EntityMention.objects.get(memory=deadline, entity__in=entities_keyed("atlas"))
    assert tagged.source == "tag" and tagged.weight == graph.SOURCE_WEIGHTS["tag"]
    assert entities_keyed("atlas").get().kind == "project"  # the tag's namespace names the kind


def test_an_update_relinks_at_once_and_a_deletion_unlinks(owner, atlas):
    _deadline, stack, hiking, error = atlas

    services.memory_update(owner=owner, public_id=hiking.public_id, content="Priya Raman goes sailing near Split.")
    assert entity_key("Dolomites") not in mention_names(hiking)
    assert "split" in mention_names(hiking)
    services.memory_update(owner=owner, public_id=stack.public_id, tags=["team:payments"])
    assert "team:payments" in mention_names(stack) or "payments" in mention_names(stack)

    services.memory_delete(owner=owner, public_id=error.public_id)
    assert not EntityMention.objects.filter(entity__in=entities_keyed("err-4312")).exists()
    entities_keyed("err-4312").update(linked_at=timezone.now() - graph.PRUNE_AFTER - timedelta(minutes=1))
    assert graph.entities_prune() >= 1
    assert not entities_keyed("err-4312").exists()
    assert entities_keyed("atlas").exists()  # still mentioned: never pruned


def test_pruning_keeps_the_entities_only_a_note_mentions(owner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # the note's embedding, as a worker would run it
        note = notes.note_write(owner=owner, title="Kestrel", content="Priya Raman runs the Kestrel Labs account.")
    assert NoteMention.objects.filter(note=note, entity__in=entities_keyed("priya raman")).exists()
    Entity.objects.filter(space__personal_of=owner).update(
        linked_at=timezone.now() - graph.PRUNE_AFTER - timedelta(minutes=1)
    )

    assert graph.entities_prune() == 0

    assert NoteMention.objects.filter(note=note, entity__in=entities_keyed("priya raman")).exists()


def test_compressed_facts_link_their_entities(owner, chat_server, django_capture_on_commit_callbacks):
    chat_server.answer(GOOD)
    with django_capture_on_commit_callbacks(execute=True):  # embedding and compression, as a worker would
        memory = services.memory_write(owner=owner, content=RAW)

    fact = EntityMention.objects.get(memory=memory, entity__in=entities_keyed("billing"))
    assert fact.source == "fact:PROJECT" and fact.weight == graph.SOURCE_WEIGHTS["fact"]
    assert entities_keyed("billing", space__personal_of=owner).get().kind == "project"


def test_explore_from_an_entity_gives_its_neighbours_edges_and_memories(owner, atlas):
    deadline, stack, hiking, _error = atlas

    view = graph_explore(owner=owner, entity="priya raman")

    assert [entity.key for entity in view.entry] == ["priya raman"]
    names = {node.entity.key for node in view.nodes}
    assert {"atlas", entity_key("Dolomites")} <= names
    edge = next(edge for edge in view.edges if {edge.source.key, edge.target.key} == {"priya raman", "atlas"})
    assert edge.memories == 1 and edge.memory_ids == [deadline.public_id]
    assert "tag" in edge.via
    assert {memory.pk for memory in view.memories} >= {deadline.pk, hiking.pk}
    assert stack.pk not in {memory.pk for memory in view.memories}  # Priya is not in it: one step further

    further = graph_explore(owner=owner, entity="Priya Raman", depth=2)
    assert "/srv/atlas/migrations" in {node.entity.key for node in further.nodes} or stack.pk in {
        memory.pk for memory in further.memories
    }
    assert max(node.depth for node in further.nodes) == 2


def test_explore_from_a_query_starts_at_the_entities_of_its_results(owner, atlas):
    query = "when does the Atlas launch happen?"

    view = graph_explore(owner=owner, query=query)

    entry = {entity.pk for entity in view.entry}
    assert "atlas" in {entity.key for entity in view.entry}
    ranked = [
        hit.memory.pk
        for hit in search_hybrid(owner=owner, query=query, top_k=QUERY_RESULTS, diversity=0)
        if EntityMention.objects.filter(memory=hit.memory, entity_id__in=entry).exists()
    ]
    assert [memory.pk for memory in view.memories][: len(ranked)] == ranked  # the query's results, best first


KESTREL_LABS = (
    "Kestrel Labs pays its invoices on the first of the month.",
    "Our contact at Kestrel Labs prefers email to phone calls.",
    "The contract with Kestrel Labs renews every spring.",
)


def test_exploring_an_entity_shows_its_own_memories_and_notes_edges_or_not(
    owner, index, mcp, client, owner_token, django_capture_on_commit_callbacks
):
    lone = index(*(services.memory_write(owner=owner, content=text) for text in KESTREL_LABS))
    assert all(mention_names(memory) == {"kestrel lab"} for memory in lone)  # no other entity: no edge

    view = graph_explore(owner=owner, entity="Kestrel Labs")

    assert view.edges == [] and [node.memories for node in view.nodes] == [3]
    assert [memory.pk for memory in view.memories] == [memory.pk for memory in reversed(lone)]  # newest first

    linked, correction = index(
        services.memory_write(owner=owner, content="Priya Raman signed the Kestrel Labs contract."),
        services.memory_write(
            owner=owner, content="Kestrel Labs pays its invoices on the fifth.", supersedes=[str(lone[0].public_id)]
        ),
    )
    with django_capture_on_commit_callbacks(execute=True):
        note = notes.note_write(owner=owner, title="Vendors", content="# Vendors\n\nKestrel Labs sends its reports.")

    view = graph_explore(owner=owner, entity="Kestrel Labs")

    # Its own, newest first (the one behind the edge among them), and the superseded one never.
    expected = [correction, linked, lone[2], lone[1]]
    assert [memory.pk for memory in view.memories] == [memory.pk for memory in expected]
    assert view.notes == [note]
    result = mcp.ok("explore_graph", {"entity": "Kestrel Labs"})
    assert [memory["id"] for memory in result["memories"]] == [str(memory.public_id) for memory in expected]
    assert result["notes"] == [{"id": str(note.public_id), "title": "Vendors"}]
    headers = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}"}
    answer = client.get(reverse("api-graph"), {"entity": "kestrel labs"}, **headers).json()
    assert [memory["id"] for memory in answer["memories"]] == [memory["id"] for memory in result["memories"]]
    found = mcp.ok("explore_graph", {"query": "when does Kestrel Labs pay its invoices?"})
    assert str(correction.public_id) in {memory["id"] for memory in found["memories"]}
    assert str(lone[0].public_id) not in {memory["id"] for memory in found["memories"]}


def test_mentions_follow_their_memorys_supersession_and_date(owner, atlas):
    deadline, stack, _hiking, _error = atlas

    def atlas_view() -> tuple[int, set[int]]:
        view = graph_explore(owner=owner, entity="Atlas")
        return view.nodes[0].memories, {memory.pk for memory in view.memories}

    assert atlas_view() == (2, {deadline.pk, stack.pk})
    mentions = EntityMention.objects.filter(memory=stack)
    assert all(mention.memory_current and mention.memory_created_at == stack.created_at for mention in mentions)

    Memory.objects.filter(pk=stack.pk).update(superseded_by=deadline)
    assert not any(mention.memory_current for mention in mentions.all())
    assert atlas_view() == (1, {deadline.pk})

    earlier = stack.created_at - timedelta(days=30)
    Memory.objects.filter(pk=stack.pk).update(superseded_by=None, created_at=earlier)
    assert all(mention.memory_current and mention.memory_created_at == earlier for mention in mentions.all())
    assert atlas_view() == (2, {deadline.pk, stack.pk})
    assert graph_explore(owner=owner, entity="Atlas").nodes[0].first_seen == earlier


def test_an_entitys_page_lists_the_notes_that_mention_it(owner, owner_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # the notes' indexing, as a worker would run it
        vendors = notes.note_write(owner=owner, title="Vendors", content="Kestrel Labs sends its reports.")
        notes.note_write(owner=owner, title="Hiking", content="The Dolomites in June.")
    entity = entities_keyed("kestrel lab", space__personal_of=owner).get()

    page = owner_client.get(reverse("entity_detail", args=[entity.public_id])).content.decode()

    assert "mentioned by 0 memories and 1 note" in page
    notes_section = page[page.index('id="entity-notes"') :]
    assert reverse("note_detail", args=[vendors.public_id]) in notes_section and "Vendors" in notes_section
    assert "Hiking" not in notes_section


def test_an_entitys_own_memories_come_firmest_mention_first(owner, atlas):
    deadline, stack, _hiking, _error = atlas  # Atlas: a tag of the older one, a word of the newer one's text

    view = graph_explore(owner=owner, entity="Atlas")

    assert [memory.pk for memory in view.memories][:2] == [deadline.pk, stack.pk]


def test_an_entity_many_memories_mention_shows_a_bounded_few_and_its_page_lists_them(owner, index, owner_client):
    def releases(numbers: range) -> list[Memory]:
        return index(
            *(
                services.memory_write(owner=owner, content=f"Kestrel Labs shipped release {i} of the sensor firmware.")
                for i in numbers
            )
        )

    many = releases(range(2))
    with CaptureQueriesContext(connection) as few_queries:
        graph_explore(owner=owner, entity="Kestrel Labs")
    many += releases(range(2, MAX_ENTRY_MEMORIES + 3))

    with CaptureQueriesContext(connection) as queries:
        view = graph_explore(owner=owner, entity="Kestrel Labs")

    assert len(queries) == len(few_queries)  # none per memory
    assert [memory.pk for memory in view.memories] == [memory.pk for memory in reversed(many)][:MAX_ENTRY_MEMORIES]
    entity = entities_keyed("kestrel lab", space__personal_of=owner).get()
    page = owner_client.get(reverse("entity_detail", args=[entity.public_id])).content.decode()
    assert all(f"/memories/{memory.public_id}/" in page for memory in many)


def test_an_exploration_shows_two_edges_per_entity_each_naming_its_newest_memory(owner, index):
    names = ["amber", "birch", "cedar", "dune", "ember", "fjord"]
    projects = [f"project:{name}" for name in names]
    _older, newer = index(
        services.memory_write(owner=owner, content="These projects share one release train.", tags=projects),
        services.memory_write(owner=owner, content="These projects moved to the spring release train.", tags=projects),
    )

    for start in names:  # the fifteen pairs weigh the same, so no start's edges may lose to row order
        view = graph_explore(owner=owner, entity=start)  # up to 20 entities: six are there

        assert {node.entity.name for node in view.nodes} == set(names)
        assert len(view.edges) == EDGES_PER_ENTITY * 6 < 15  # of the fifteen pairs
        pairs = [{edge.source.name, edge.target.name} for edge in view.edges]
        assert all({start, name} in pairs for name in names if name != start)  # what brought each in
        assert all(edge.memories == 2 and edge.memory_ids == [newer.public_id] for edge in view.edges)


def test_bad_explore_arguments_are_clear_errors(owner, atlas):
    with pytest.raises(NotFound, match="No entity named 'Pryia'") as unknown:
        graph_explore(owner=owner, entity="Pryia")
    assert "Similar" in str(unknown.value) or "query" in str(unknown.value)
    with pytest.raises(NotFound, match="Similar names: Priya Raman"):
        graph_explore(owner=owner, entity="Priya")
    with pytest.raises(ValidationError, match="depth"):
        graph_explore(owner=owner, entity="Atlas", depth=3)
    with pytest.raises(ValidationError, match="either"):
        graph_explore(owner=owner, entity="Atlas", query="launch")
    with pytest.raises(ValidationError, match="either"):
        graph_explore(owner=owner)
    with pytest.raises(ValidationError, match="limit"):
        graph_explore(owner=owner, entity="Atlas", limit=0)
    with pytest.raises(ValidationError, match="entity"):
        graph_explore(owner=owner, entity="x" * 201)


def test_explore_over_mcp_and_rest(owner, atlas, mcp, client, owner_token):
    result = mcp.ok("explore_graph", {"entity": "Atlas", "max_tokens": 100})
    assert result["entry"] == ["atlas"] or result["entry"][0].casefold() == "atlas"
    assert result["edges"] and all(edge["memory_ids"] for edge in result["edges"])
    assert "cut_for_budget" in result

    message = mcp.fails("explore_graph", {"entity": "Nobody"})
    assert "No entity named 'Nobody'" in message and "memory_search" not in message
    assert "depth" in mcp.fails("explore_graph", {"entity": "Atlas", "depth": 5})

    headers = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}"}
    answer = client.get(reverse("api-graph"), {"entity": "priya raman", "depth": 2}, **headers)
    assert answer.status_code == 200, answer.content
    assert {"priya raman", "atlas"} <= {entity["name"].casefold() for entity in answer.json()["entities"]}
    missing = client.get(reverse("api-graph"), {"entity": "Nobody"}, **headers)
    assert missing.status_code == 404 and "No entity named" in missing.json()["error"]["message"]
    assert client.get(reverse("api-graph"), {"entity": "Atlas", "depth": "x"}, **headers).status_code == 400


def test_a_stranger_sees_none_of_the_owners_graph(owner, stranger, atlas, index, mcp_as, stranger_token, client):
    index(services.memory_write(owner=stranger, content="Priya Raman and I play chess at the Lisbon club on Tuesdays."))

    view = graph_explore(owner=stranger, entity="Priya Raman")
    assert {memory.space_id for memory in view.memories} == {personal_space_of(stranger).pk}
    assert "atlas" not in {node.entity.key for node in view.nodes}
    with pytest.raises(NotFound):
        graph_explore(owner=stranger, entity="Atlas")
    assert "No entity named" in mcp_as(stranger_token).fails("explore_graph", {"entity": "ERR-4312"})
    headers = {"HTTP_AUTHORIZATION": f"Bearer {stranger_token}"}
    assert client.get(reverse("api-graph"), {"entity": "Atlas"}, **headers).status_code == 404
    owners_entity = entities_keyed("atlas", space__personal_of=owner).get()
    unknown = uuid.uuid4()
    theirs = mcp_as(stranger_token).fails("explore_graph", {"entity_id": str(owners_entity.public_id)})
    nobodys = mcp_as(stranger_token).fails("explore_graph", {"entity_id": str(unknown)})
    assert theirs == nobodys.replace(str(unknown), str(owners_entity.public_id))
    by_id = client.get(reverse("api-graph"), {"entity_id": str(owners_entity.public_id)}, **headers)
    assert by_id.status_code == 404 and "No entity with id" in by_id.json()["error"]["message"]
    client.force_login(stranger)
    assert client.get(reverse("entity_detail", args=[owners_entity.public_id])).status_code == 404
    assert "Atlas" not in client.get(reverse("entities")).content.decode()


def test_graph_expansion_finds_a_memory_through_a_shared_entity(owner, index, settings):
    memories = index(
        services.memory_write(owner=owner, content="Our new mobile checkout has the codename Kestrel."),
        services.memory_write(owner=owner, content="The only payment provider in Kestrel will be Stripe."),
        *(
            services.memory_write(owner=owner, content=f"Unrelated note {i} about the office plants and coffee.")
            for i in range(12)
        ),
    )
    query = "what is the codename of the new mobile checkout?"

    settings.GNOSEM_WEIGHT_GRAPH = 0.5
    hits = search_hybrid(owner=owner, query=query, top_k=5, diversity=0)
    reached = next(hit for hit in hits if hit.memory.pk == memories[1].pk)
    assert reached.signals["graph"]["via"] == ["Kestrel"]

    settings.GNOSEM_WEIGHT_GRAPH = 0.0
    hits = search_hybrid(owner=owner, query=query, top_k=5, diversity=0)
    assert all("graph" not in hit.signals for hit in hits)


def test_rebuildgraph_relinks_every_memory(owner, atlas, command):
    EntityMention.objects.all().delete()

    out, err = command("rebuildgraph")

    assert "4 memories and notes relinked" in out
    assert "priya raman" in mention_names(atlas[0])
    out, err = command("rebuildgraph", "--user", owner.username)
    assert "4 memories and notes relinked" in out and "Only the spaces of" in err


def test_entity_pages_list_draw_and_escape(owner, owner_client, index):
    index(
        services.memory_write(owner=owner, content="Ask @mallory about <script>alert(1)</script> with Priya Raman."),
        services.memory_write(owner=owner, content="@mallory and Priya Raman run the Friday demo."),
    )
    listing = owner_client.get(reverse("entities"), {"q": "mallory"})
    assert listing.status_code == 200 and "@mallory" in listing.content.decode()
    entity = entities_keyed("@mallory", space__personal_of=owner).get()

    page = owner_client.get(reverse("entity_detail", args=[entity.public_id]))

    html = page.content.decode()
    assert page.status_code == 200
    assert '<svg id="neighbourhood"' in html and "Priya Raman" in html
    assert "<script>alert(1)</script>" not in html
    assert owner_client.get(reverse("entity_detail", args=[uuid.uuid4()])).status_code == 404
    assert owner_client.get(reverse("entities"), {"kind": "bogus", "q": "x" * 5000}).status_code == 200


def test_graph_expansion_in_a_store_where_every_memory_shares_the_entity(owner, index, settings):
    """An entity every memory mentions says nothing (ln N/df = 0): search answers without it."""
    settings.GNOSEM_WEIGHT_GRAPH = 0.5
    index(
        services.memory_write(owner=owner, content="The codename of the checkout is Kestrel."),
        services.memory_write(owner=owner, content="We ship Kestrel in June."),
    )

    hits = search_hybrid(owner=owner, query="when does Kestrel ship?")

    assert hits and all("graph" not in hit.signals for hit in hits)


def test_deleting_an_account_takes_its_graph_with_it(owner, stranger, atlas, index):
    index(services.memory_write(owner=stranger, content="Priya Raman and I play chess at the Lisbon club on Tuesdays."))

    space_id = personal_space_of(owner).pk
    assert Entity.objects.filter(space_id=space_id).exists()

    owner.delete()

    assert not Entity.objects.filter(space_id=space_id).exists()
    assert EntityMention.objects.filter(entity__space__personal_of=stranger).exists()


ENTITY_PAGE = re.compile(r'href="/entities/([^/"]+)/"')


def test_the_ids_of_a_users_entities_say_nothing_about_other_users_writes(owner, stranger, index, client):
    """Two users whose new entities are created interleaved: each sees only random ids, so the
    gaps between them cannot count the other's writes."""
    for i in range(4):
        for user in (owner, stranger):
            index(services.memory_write(owner=user, content=f"Priya Raman reviewed ERR-{4310 + i} in /srv/app{i}."))
    client.force_login(owner)

    listed = ENTITY_PAGE.findall(client.get(reverse("entities")).content.decode())

    owners = {
        str(public_id)
        for public_id in Entity.objects.filter(space__personal_of=owner).values_list("public_id", flat=True)
    }
    assert len(listed) >= 8 and set(listed) == owners
    assert all(uuid.UUID(public_id).version == 4 for public_id in listed)  # random, not row numbers
    linked = set(ENTITY_PAGE.findall(client.get(reverse("entity_detail", args=[listed[0]])).content.decode()))
    assert len(linked) > 1 and linked <= owners  # the drawing's and the list's links


def test_an_entity_page_is_not_addressed_by_its_row_number(owner, owner_client, atlas):
    entity = entities_keyed("atlas", space__personal_of=owner).get()

    assert owner_client.get(f"/entities/{entity.pk}/").status_code == 404
    assert owner_client.get(f"/entities/{entity.public_id}/").status_code == 200


def test_explore_by_entity_id_over_mcp_and_rest(owner, atlas, mcp, client, owner_token):
    named = mcp.ok("explore_graph", {"entity": "Priya Raman"})
    ids = {entity["name"]: entity["id"] for entity in named["entities"]}
    atlas_id = next(entity_id for name, entity_id in ids.items() if name.casefold() == "atlas")
    assert str(entities_keyed("atlas", space__personal_of=owner).get().public_id) == atlas_id

    result = mcp.ok("explore_graph", {"entity_id": atlas_id})
    assert result["entry"][0].casefold() == "atlas"
    assert {entity["id"] for entity in result["entities"]} >= {atlas_id, ids["Priya Raman"]}
    headers = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}"}
    answer = client.get(reverse("api-graph"), {"entity_id": atlas_id}, **headers)
    assert answer.status_code == 200, answer.content
    assert answer.json()["entry"] == result["entry"]

    assert "entity_id" in mcp.fails("explore_graph", {"entity_id": "17"})
    assert "either" in mcp.fails("explore_graph", {"entity_id": atlas_id, "entity": "Atlas"})
    bad = client.get(reverse("api-graph"), {"entity_id": "17"}, **headers)
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "entity_id"
    unknown = mcp.fails("explore_graph", {"entity_id": str(uuid.uuid4())})
    assert "No entity with id" in unknown and "by name or query" in unknown


def test_exploring_lists_the_notes_of_the_entry_newest_first_and_only_reached_ones(
    owner, stranger, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):  # the notes' indexing, as a worker would run it
        older = notes.note_write(owner=owner, title="Vendors", content="Kestrel Labs sends its reports.")
        newer = notes.note_write(owner=owner, title="Contracts", content="Kestrel Labs renews in spring.")
        notes.note_write(owner=owner, title="Hiking", content="The Dolomites in June.")
        notes.note_write(owner=stranger, title="Theirs", content="Kestrel Labs pays late.")
    notes.note_update(owner=owner, public_id=older.public_id, title="Vendors, updated")

    view = graph_explore(owner=owner, entity="Kestrel Labs")

    assert [note.pk for note in view.notes] == [older.pk, newer.pk]
