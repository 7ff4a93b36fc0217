"""Memories, notes and entities live in spaces; a caller reads every space it reaches and writes
where its role allows. A team space here is made directly (its services have their own tests):
what is tested is what each read and write does with the spaces."""

import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts.models import Membership, Role
from accounts.reach import reach_of, token_reach
from accounts.spaces import personal_space_of
from accounts.tokens import token_authenticate, token_create
from gnosem.errors import NotFound, PermissionDenied, ValidationError
from memories import selectors, services
from memories.graph.explore import entity_find, entity_list
from memories.models import Memory, SpaceCorpusStatistic, TermPosting
from memories.notes import services as notes
from memories.reading.counting import memory_count
from memories.search.notes import note_search
from memories.search.pipeline import search_hybrid
from memories.search.signals import keyword_ranking
from memories.selectors import MemoryFilters
from memories.transfer.export import export_chunks, exported_space
from memories.transfer.importing import import_memories
from tests.memories.stored import entities_keyed, matching

pytestmark = pytest.mark.django_db


@pytest.fixture
def editor(team):
    user = get_user_model().objects.create_user("editor", "editor@example.com")
    Membership.objects.create(space=team, user=user, role=Role.EDITOR)
    return user


@pytest.fixture
def viewer(team):
    user = get_user_model().objects.create_user("viewer", "viewer@example.com")
    Membership.objects.create(space=team, user=user, role=Role.VIEWER)
    return user


def indexed(memory: Memory) -> Memory:
    services.memories_index(memory_ids=[memory.pk])
    return memory


def test_a_user_reaches_their_personal_space_first_then_their_teams(owner, team):
    reach = reach_of(owner)
    assert [space.name for space in reach.spaces] == ["Personal", "Platform"]
    assert reach.default_space_id == personal_space_of(owner).pk
    assert reach.find("platform").id == reach.find(str(team.public_id)).id == team.pk


def test_a_space_outside_the_reach_is_not_found_like_one_that_does_not_exist(owner, stranger, team):
    reach = reach_of(stranger)
    for name in ("Platform", str(team.public_id), "No such space"):
        with pytest.raises(NotFound):
            reach.find(name)
    for bad in (None, 7, "", "   ", ["Platform"]):
        with pytest.raises(ValidationError):
            reach.find(bad)


def test_what_one_member_writes_to_the_team_space_another_finds_by_meaning(owner, editor, team):
    written = indexed(
        services.memory_write(owner=editor, content="The staging database moved to port 6543.", space="Platform")
    )
    assert (written.space_id, written.author_id) == (team.pk, editor.pk)

    hits = search_hybrid(owner=owner, query="where does the staging db listen")
    assert [hit.memory.pk for hit in hits] == [written.pk]
    assert selectors.memory_get(owner=owner, public_id=written.public_id).pk == written.pk


def test_a_personal_memory_stays_with_its_author(owner, editor, team):
    private = indexed(services.memory_write(owner=editor, content="My dentist appointment is on Friday at 9."))
    assert private.space_id == personal_space_of(editor).pk

    assert search_hybrid(owner=owner, query="dentist appointment") == []
    with pytest.raises(NotFound):
        selectors.memory_get(owner=owner, public_id=private.public_id)
    with pytest.raises(NotFound):
        services.memory_delete(owner=owner, public_id=private.public_id)


def test_a_stranger_reaches_nothing_of_the_team(owner, stranger, team):
    shared = indexed(
        services.memory_write(owner=owner, content="We chose Argon2id for the new login.", space="Platform")
    )

    assert search_hybrid(owner=stranger, query="Argon2id login") == []
    assert selectors.memory_list(owner=stranger, filters=MemoryFilters(), limit=50).memories == []
    for service in (services.memory_delete, services.memory_reinstate):
        with pytest.raises(NotFound):
            service(owner=stranger, public_id=shared.public_id)
    with pytest.raises(NotFound):
        services.memory_write(owner=stranger, content="Sneaking in.", space="Platform")
    assert Memory.objects.filter(space=team).count() == 1


def test_a_viewer_reads_the_team_but_changes_nothing(owner, viewer, team):
    shared = indexed(services.memory_write(owner=owner, content="Deploys happen Monday to Thursday.", space=team.name))

    assert [hit.memory.pk for hit in search_hybrid(owner=viewer, query="when do deploys happen")] == [shared.pk]
    with pytest.raises(PermissionDenied, match="read the space 'Platform' but not write"):
        services.memory_write(owner=viewer, content="Deploys on Fridays too.", space="Platform")
    with pytest.raises(PermissionDenied):
        services.memory_update(owner=viewer, public_id=shared.public_id, content="Deploys any day.")
    with pytest.raises(PermissionDenied):
        services.memory_delete(owner=viewer, public_id=shared.public_id)
    with pytest.raises(PermissionDenied):
        services.memory_write(
            owner=viewer, content="A correction.", supersedes=[str(shared.public_id)], space="Platform"
        )
    shared.refresh_from_db()
    assert shared.content == "Deploys happen Monday to Thursday." and shared.superseded_by_id is None
    # Their own space is theirs to write.
    assert services.memory_write(owner=viewer, content="A note to self.").space_id == personal_space_of(viewer).pk


def test_a_read_token_writes_nowhere_whatever_the_role(owner, team):
    token = token_authenticate(token_create(owner=owner, name="reader", scope="read").secret)
    reach = token_reach(token)
    assert reach.space_ids == reach_of(owner).space_ids
    for space in (None, "Platform"):
        with pytest.raises(PermissionDenied, match="read only"):
            services.memory_write(owner=reach, content="Blocked.", space=space)
    assert not Memory.objects.exists()


def test_a_removed_member_loses_the_team_on_their_next_call(owner, editor, team):
    shared = indexed(services.memory_write(owner=owner, content="The release train leaves every Tuesday."))
    team_memory = indexed(
        services.memory_write(owner=editor, content="Rotate the PagerDuty key ZX-990.", space="Platform")
    )
    token = token_authenticate(token_create(owner=editor, name="laptop", scope="write").secret)
    assert [hit.memory.pk for hit in search_hybrid(owner=token_reach(token), query="ZX-990")] == [team_memory.pk]

    Membership.objects.filter(space=team, user=editor).delete()

    assert search_hybrid(owner=token_reach(token), query="ZX-990") == []
    with pytest.raises(NotFound):
        selectors.memory_get(owner=token_reach(token), public_id=team_memory.public_id)
    # What they wrote stays in the team, attributed to them.
    team_memory.refresh_from_db()
    assert (team_memory.space_id, team_memory.author_id) == (team.pk, editor.pk)
    assert shared.space_id == personal_space_of(owner).pk


def test_a_correction_stays_within_its_space(owner, team):
    personal = services.memory_write(owner=owner, content="The office opens at 8.")
    with pytest.raises(ValidationError, match="in the space written to"):
        services.memory_write(
            owner=owner, content="The office opens at 9.", supersedes=[str(personal.public_id)], space="Platform"
        )
    assert not Memory.objects.filter(space=team).exists()

    corrected = services.memory_write(
        owner=owner, content="The office opens at 9.", supersedes=[str(personal.public_id)]
    )
    personal.refresh_from_db()
    assert personal.superseded_by_id == corrected.pk


def test_the_same_text_in_two_spaces_is_two_memories(owner, team):
    mine = services.memory_write(owner=owner, content="Standup is at 10:15.")
    ours = services.memory_write(owner=owner, content="Standup is at 10:15.", space="Platform")
    again = services.memory_write(owner=owner, content="standup is at   10:15.", space="Platform")

    assert mine.pk != ours.pk and again.pk == ours.pk and again.written_again
    assert {mine.space_id, ours.space_id} == {personal_space_of(owner).pk, team.pk}


def test_keyword_statistics_across_spaces_are_those_of_their_union(owner, team, stranger):
    """Searching two spaces scores every memory as one space holding both spaces' memories would."""
    texts = [
        "Invoice INV-2041 was paid late by the customer.",
        "The invoice template lives in the finance drive.",
        "Late payments trigger a reminder e-mail after seven days.",
        "The finance drive is backed up weekly.",
        "Customer reminders go out in English and German.",
    ]
    for number, text in enumerate(texts):
        services.memory_write(owner=owner, content=text, space="Platform" if number % 2 else None)
        services.memory_write(owner=stranger, content=text)

    both = [personal_space_of(owner).pk, team.pk]
    union = [personal_space_of(stranger).pk]
    for query in ("invoice paid late", "finance drive", "INV-2041", "reminder"):
        split = keyword_ranking(space_ids=both, query=query, filters=MemoryFilters(), limit=10)
        whole = keyword_ranking(space_ids=union, query=query, filters=MemoryFilters(), limit=10)
        content = {memory.pk: memory.content for memory in Memory.objects.all()}
        assert [(content[item.memory_id], round(item.score, 9)) for item in split] == [
            (content[item.memory_id], round(item.score, 9)) for item in whole
        ]


def test_moving_a_memory_to_another_space_moves_its_keyword_statistics(owner, team):
    memory = services.memory_write(owner=owner, content="Kubernetes upgrade scheduled for March.")
    personal = personal_space_of(owner)

    Memory.objects.filter(pk=memory.pk).update(space=team)

    assert set(TermPosting.objects.filter(memory_id=memory.pk).values_list("space_id", flat=True)) == {team.pk}
    corpus = dict(SpaceCorpusStatistic.objects.values_list("space_id", "documents"))
    assert (corpus.get(personal.pk, 0), corpus[team.pk]) == (0, 1)


def test_reads_narrowed_to_one_space_see_only_it(owner, team):
    services.memory_write(owner=owner, content="Personal: buy a new keyboard.")
    services.memory_write(owner=owner, content="Team: the API gateway runs on port 8443.", space="Platform")
    reach = reach_of(owner)

    assert memory_count(owner=reach, filters=MemoryFilters()).count == 2
    assert memory_count(owner=reach.narrowed("Platform"), filters=MemoryFilters()).count == 1
    listed = selectors.memory_list(owner=reach.narrowed("Personal"), filters=MemoryFilters(), limit=10).memories
    assert [memory.content for memory in listed] == ["Personal: buy a new keyboard."]


def test_notes_live_in_spaces_too(owner, editor, viewer, team):
    note = notes.note_write(
        owner=editor, title="Runbook", content="Restart the ingest worker with systemctl.", space="Platform"
    )
    notes.note_index(note.pk)

    assert [hit.note.pk for hit in note_search(owner=viewer, query="restart the ingest worker")] == [note.pk]
    with pytest.raises(PermissionDenied):
        notes.note_update(owner=viewer, public_id=note.public_id, title="Mine now")
    with pytest.raises(PermissionDenied):
        notes.note_delete(owner=viewer, public_id=note.public_id)
    assert notes.note_get(owner=owner, public_id=note.public_id).author_id == editor.pk


def test_each_space_keeps_its_own_entities(owner, team):
    indexed(services.memory_write(owner=owner, content="Priya Raman owns the billing service."))
    indexed(
        services.memory_write(owner=owner, content="Priya Raman reviews every billing migration.", space="Platform")
    )

    entities = entities_keyed("priya raman")
    assert sorted(entities.values_list("space_id", flat=True)) == sorted([personal_space_of(owner).pk, team.pk])
    # Found by name, the default write space's first; listed once per space.
    assert entity_find(owner=owner, name="Priya Raman").space_id == personal_space_of(owner).pk
    assert [entity.space_id for entity in entity_list(owner=owner, name="priya")].count(team.pk) == 1


def test_a_team_space_is_exported_whole_by_its_owners_and_admins_and_its_editors_take_what_they_wrote(
    owner, editor, team
):
    services.memory_write(owner=editor, content="Our SLO is 99.9 % monthly.", space="Platform")
    services.memory_write(owner=owner, content="Deploys need two approvals.", space="Platform")
    services.memory_write(owner=owner, content="My own reminder.")
    notes.note_write(owner=owner, title="Runbook", content="Restart the worker.", space="Platform")

    editors = json.loads("".join(export_chunks(exported_space(editor, "Platform"))))
    assert [entry["content"] for entry in editors["memories"]] == ["Our SLO is 99.9 % monthly."]
    assert editors["notes"] == []
    document = json.loads("".join(export_chunks(exported_space(owner, "Platform"))))
    assert [entry["content"] for entry in document["memories"]] == [
        "Our SLO is 99.9 % monthly.",
        "Deploys need two approvals.",
    ]
    assert [entry["title"] for entry in document["notes"]] == ["Runbook"]
    personal = json.loads("".join(export_chunks(exported_space(owner))))
    assert [entry["content"] for entry in personal["memories"]] == ["My own reminder."]


def test_an_import_goes_into_the_space_chosen_when_the_caller_may_write_there(owner, editor, viewer, team):
    now = timezone.now()
    document = {
        "format": "gnosem-export",
        "version": 3,
        "memories": [
            {
                "content": "Imported: the VPN certificate expires in May.",
                "created_at": (now - timedelta(days=2)).isoformat(),
            }
        ],
    }
    with pytest.raises(PermissionDenied):
        import_memories(owner=viewer, document=document, space="Platform")
    report = import_memories(owner=editor, document=document, space="Platform")

    assert report.imported == 1
    imported = matching(lambda content: content.startswith("Imported"))[0]
    assert (imported.space_id, imported.author_id) == (team.pk, editor.pk)
    # The same file again is a duplicate there, but new in another space.
    assert import_memories(owner=editor, document=document, space="Platform").duplicates == 1
    assert import_memories(owner=editor, document=document).imported == 1


def test_the_dashboard_shows_each_team_memory_with_its_space_and_author(owner, owner_client, editor, team):
    shared = services.memory_write(owner=editor, content="The release train leaves every Tuesday.", space="Platform")
    services.memory_write(owner=owner, content="My own reminder.")

    listing = owner_client.get("/").content.decode()
    detail = owner_client.get(f"/memories/{shared.public_id}/").content.decode()

    assert 'badge-space" title="In the team space Platform">Platform</span>' in listing
    assert "by editor" in listing
    assert "<dt>Space</dt><dd>Platform (team)</dd>" in detail and "<dt>Author</dt><dd>editor</dd>" in detail


def test_counts_group_by_space_and_by_author(owner, editor, team):
    services.memory_write(owner=owner, content="Personal: renew the passport.")
    services.memory_write(owner=owner, content="Team: the API gateway runs on port 8443.", space="Platform")
    services.memory_write(owner=editor, content="Team: staging moved to port 6543.", space="Platform")

    by_space = memory_count(owner=owner, filters=MemoryFilters(), group_by="space")
    by_author = memory_count(owner=owner, filters=MemoryFilters(), group_by="author")

    assert by_space.groups == [("Platform", 2), ("Personal", 1)]
    assert by_author.groups == [("owner", 2), ("editor", 1)]
    assert memory_count(owner=editor, filters=MemoryFilters(), group_by="space").groups == [("Platform", 2)]
