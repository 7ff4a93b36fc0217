"""Sharing a memory into another space (memories.sharing): a copy with its provenance, or the memory
itself moved with nothing derived left pointing back across the wall; and what every stranger gets."""

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from accounts.activity import activity_for_owner
from accounts.models import ActivityAction, Membership, Role, Space, SpaceKind
from accounts.reach import SpaceNotFound, token_reach
from accounts.spaces import personal_space_of
from accounts.tokens import token_create
from gnosem.errors import NotFound, PermissionDenied, QuotaExceeded, ValidationError
from memories import selectors, services
from memories.indexing.sequences import embedding_pieces
from memories.models import (
    Chunk,
    CompressionStatus,
    EntityMention,
    IndexingStatus,
    KeptApart,
    Memory,
    Quota,
    TermPosting,
)
from memories.reading.session import session_start
from memories.sharing import memory_share
from memories.transfer.export import export_chunks, exported_space
from memories.transfer.importing import import_memories
from tests.memories.spaces import member
from tests.memories.stored import store, with_text

pytestmark = pytest.mark.django_db

START = datetime(2025, 5, 6, 14, tzinfo=UTC)


def index_all() -> None:
    while services.memories_index(memory_ids=[]):
        pass


def reader(user, scope: str = "write", **binding):
    """What a request with a new token of `user` reaches."""
    return token_reach(token_create(owner=user, name="laptop", scope=scope, **binding).token)


# A copy


def test_a_copy_is_a_new_memory_of_the_sharer_there_marked_with_where_it_came_from(owner, team):
    original = services.memory_write(
        owner=owner, content="The VPN certificate expires in May.", tags=["vpn"], written_by="claude"
    )

    copy = memory_share(owner=owner, public_id=original.public_id, space="Platform")

    assert copy.public_id != original.public_id and not copy.written_again
    assert (copy.space_id, copy.author, copy.content, copy.tags) == (team.pk, owner, original.content, ["vpn"])
    assert (copy.written_by, copy.created_at) == ("claude", original.created_at)
    assert (copy.shared_from, copy.shared_by) == ("Personal", owner)
    assert copy.indexing_status == IndexingStatus.PENDING
    original.refresh_from_db()
    assert (original.space_id, original.shared_from) == (personal_space_of(owner).pk, "")

    index_all()  # embedded by the worker like any write, in the space it is in
    copy.refresh_from_db()
    assert copy.indexing_status == IndexingStatus.INDEXED
    assert set(Chunk.objects.filter(memory=copy).values_list("space_id", flat=True)) == {team.pk}


def test_a_copy_keeps_the_compressed_form(owner, team):
    original = services.memory_write(owner=owner, content="We deploy on Tuesdays, never on Fridays. " * 12)
    store(original.pk, content_optimized="DEPLOY_DAY=tuesday", compression_status=CompressionStatus.COMPRESSED)

    copy = memory_share(owner=owner, public_id=original.public_id, space="Platform")

    copy.refresh_from_db()
    assert (copy.content_optimized, copy.compression_status) == ("DEPLOY_DAY=tuesday", CompressionStatus.COMPRESSED)


def test_a_copy_counts_toward_the_sharers_quota(owner, team):
    original = services.memory_write(owner=owner, content="Our SLO is 99.9 % monthly.")
    Quota.objects.create(user=owner, max_memories=1)

    with pytest.raises(QuotaExceeded):
        memory_share(owner=owner, public_id=original.public_id, space="Platform")
    assert Memory.objects.count() == 1


def test_text_already_current_there_is_answered_as_a_write_of_it_is(owner, team):
    there = services.memory_write(owner=owner, content="Releases go out on Tuesdays.", space="Platform")
    here = services.memory_write(owner=owner, content="releases go  out on tuesdays.", tags=["release"])

    answer = memory_share(owner=owner, public_id=here.public_id, space="Platform")

    assert answer.written_again and answer.pk == there.pk
    assert answer.tags == ["release"]
    assert Memory.objects.count() == 2


def test_a_teammate_copies_a_team_memory_into_their_own_space(owner, team):
    viewer = member(team, "viewer", Role.VIEWER)
    shared = services.memory_write(owner=owner, content="The staging database is pg-staging-2.", space="Platform")

    copy = memory_share(owner=viewer, public_id=shared.public_id, space="Personal")

    assert (copy.space_id, copy.author, copy.shared_from, copy.shared_by) == (
        personal_space_of(viewer).pk,
        viewer,
        "Platform",
        viewer,
    )


def test_sharing_is_recorded_in_the_sharers_activity_log(owner, team):
    original = services.memory_write(owner=owner, content="The build server is ci-7.")

    copy = memory_share(owner=owner, public_id=original.public_id, space="Platform")

    event = activity_for_owner(owner).first()
    assert event.action == ActivityAction.MEMORY_SHARED
    assert event.detail == {
        "via": "command line",
        "memory_id": str(original.public_id),
        "from": "Personal",
        "to": "Platform",
        "space_id": str(team.public_id),
        "id_there": str(copy.public_id),
    }


# A move


def test_a_move_keeps_the_id_and_history_and_leaves_the_old_space(owner, team):
    memory = services.memory_write(owner=owner, content="The VPN certificate expires in May.", tags=["vpn"])
    services.memory_update(owner=owner, public_id=memory.public_id, content="The VPN certificate expires in June.")

    moved = memory_share(owner=owner, public_id=memory.public_id, space="Platform", move=True)

    assert (moved.pk, moved.public_id, moved.space_id) == (memory.pk, memory.public_id, team.pk)
    assert (moved.shared_from, moved.shared_by, moved.author) == ("Personal", owner, owner)
    assert [revision.content for revision in selectors.memory_revisions(moved)] == [
        "The VPN certificate expires in May."
    ]
    assert not Memory.objects.filter(space=personal_space_of(owner)).exists()
    assert set(TermPosting.objects.filter(memory_id=moved.pk).values_list("space_id", flat=True)) == {team.pk}
    assert activity_for_owner(owner).first().action == ActivityAction.MEMORY_MOVED


def test_after_a_move_nothing_derived_points_back_to_the_old_space(owner, team):
    personal = personal_space_of(owner)
    earlier = services.memory_write(
        owner=owner, content="Maria leads the Atlas project.", written_by="claude", created_at=START
    )
    moved = services.memory_write(
        owner=owner,
        content="Maria moved Atlas to PostgreSQL 16.",
        written_by="claude",
        created_at=START + timedelta(seconds=30),
    )
    reply = services.memory_write(
        owner=owner, content="Yes, she loved it!", written_by="claude", created_at=START + timedelta(seconds=60)
    )
    corrected = services.memory_write(owner=owner, content="Atlas runs on PostgreSQL 15.")
    index_all()
    # Links as indexing and review leave them: it corrects one memory, restates another, and a pair is kept apart.
    Memory.objects.filter(pk=corrected.pk).update(superseded_by=moved)
    Memory.objects.filter(pk=moved.pk).update(duplicate_of=earlier)
    Memory.objects.filter(pk=reply.pk).update(duplicate_of=moved)
    KeptApart.objects.create(first_id=min(earlier.pk, moved.pk), second_id=max(earlier.pk, moved.pk))
    assert Chunk.objects.filter(memory=moved, position__gt=0, start=0).exists()  # read in its predecessor's context
    assert Chunk.objects.filter(memory=reply, position__gt=0, start=0).exists()  # the reply reads it in context
    assert EntityMention.objects.filter(memory=moved, entity__space=personal).exists()

    memory_share(owner=owner, public_id=moved.public_id, space="Platform", move=True)

    moved.refresh_from_db()
    assert moved.duplicate_of is None and not moved.pinned
    assert set(Chunk.objects.filter(memory=moved).values_list("space_id", "position", "start")) == {(team.pk, 0, 0)}
    assert set(EntityMention.objects.filter(memory=moved).values_list("entity__space_id", flat=True)) == {team.pk}
    assert not Memory.objects.filter(space=personal).filter(superseded_by=moved).exists()
    assert not Memory.objects.filter(space=personal).filter(duplicate_of=moved).exists()
    assert not KeptApart.objects.exists()
    corrected.refresh_from_db()
    assert corrected.superseded_by is None  # current again, as when the memory correcting it is deleted
    reply.refresh_from_db()
    assert reply.indexing_status == IndexingStatus.PENDING
    assert not Chunk.objects.filter(memory=reply, position__gt=0, start=0).exists()

    index_all()
    assert set(Chunk.objects.filter(memory=moved).values_list("space_id", flat=True)) == {team.pk}
    assert Memory.objects.get(pk=moved.pk).indexing_status == IndexingStatus.INDEXED
    # The reply is read after the memory before the one that left.
    assert [text for _, text in embedding_pieces([reply])[reply.pk]][1].startswith(earlier.content)


def test_moving_onto_text_current_there_keeps_that_memory_and_removes_the_one_moved(owner, team):
    there = services.memory_write(owner=owner, content="Releases go out on Tuesdays.", space="Platform")
    here = services.memory_write(owner=owner, content="Releases go out on Tuesdays.", tags=["release"])

    answer = memory_share(owner=owner, public_id=here.public_id, space="Platform", move=True)

    assert answer.written_again and answer.pk == there.pk and answer.tags == ["release"]
    assert list(Memory.objects.all()) == [there]


def test_a_move_onto_an_id_the_space_holds_already_is_refused(owner, team):
    memory = services.memory_write(owner=owner, content="The build server is ci-7.")
    document = json.loads("".join(export_chunks(exported_space(owner))))
    document["memories"][0]["content"] = "The build server was ci-6."
    import_memories(owner=owner, document=document, space="Platform")  # the same id, in the team

    with pytest.raises(ValidationError, match="Share a copy instead"):
        memory_share(owner=owner, public_id=memory.public_id, space="Platform", move=True)
    memory.refresh_from_db()
    assert memory.space_id == personal_space_of(owner).pk


# Refusals


def test_the_space_it_is_in_a_superseded_memory_and_bad_arguments_are_refused(owner, team):
    old = services.memory_write(owner=owner, content="We deploy on Mondays.")
    new = services.memory_write(owner=owner, content="We deploy on Tuesdays.", supersedes=[str(old.public_id)])

    with pytest.raises(ValidationError, match="in 'Personal' already"):
        memory_share(owner=owner, public_id=new.public_id, space="Personal")
    with pytest.raises(ValidationError, match=f"superseded by {new.public_id}: share that one"):
        memory_share(owner=owner, public_id=old.public_id, space="Platform")
    with pytest.raises(ValidationError, match="space"):
        memory_share(owner=owner, public_id=new.public_id, space=None)
    with pytest.raises(ValidationError, match="move"):
        memory_share(owner=owner, public_id=new.public_id, space="Platform", move="yes")
    assert not Memory.objects.filter(space=team).exists()


def test_a_stranger_finds_neither_the_memory_nor_the_space(owner, team, stranger):
    mine = services.memory_write(owner=owner, content="The build server is ci-7.")
    theirs = services.memory_write(owner=stranger, content="The stranger's own note.")

    with pytest.raises(NotFound) as unreached:
        memory_share(owner=stranger, public_id=mine.public_id, space="Personal")
    nowhere = uuid.uuid4()
    with pytest.raises(NotFound) as nonexistent:
        memory_share(owner=stranger, public_id=nowhere, space="Personal")
    assert str(unreached.value) == str(nonexistent.value).replace(str(nowhere), str(mine.public_id))
    for space, missing in (("Platform", "Nowhere"), (str(team.public_id), str(uuid.uuid4()))):
        with pytest.raises(SpaceNotFound) as unreached:
            memory_share(owner=stranger, public_id=theirs.public_id, space=space)
        with pytest.raises(SpaceNotFound) as nonexistent:
            memory_share(owner=stranger, public_id=theirs.public_id, space=missing)
        assert str(unreached.value) == str(nonexistent.value).replace(missing, space)
    assert Memory.objects.count() == 2


def test_a_viewer_shares_out_but_neither_into_the_team_nor_moves_out_of_it(owner, team):
    viewer = member(team, "viewer", Role.VIEWER)
    shared = services.memory_write(owner=owner, content="The staging database is pg-staging-2.", space="Platform")
    own = services.memory_write(owner=viewer, content="I prefer short answers.")

    with pytest.raises(PermissionDenied, match="not write to it"):
        memory_share(owner=viewer, public_id=own.public_id, space="Platform")
    with pytest.raises(PermissionDenied, match="not write to it"):
        memory_share(owner=viewer, public_id=shared.public_id, space="Personal", move=True)
    assert Memory.objects.filter(space=team).count() == 1


def test_an_editor_moves_a_teammates_memory_and_it_stays_theirs(owner, team):
    editor = member(team, "editor", Role.EDITOR)
    second = Space.objects.create(name="Research", kind=SpaceKind.TEAM)
    for user in (owner, editor):
        Membership.objects.create(space=second, user=user, role=Role.EDITOR)
    shared = services.memory_write(owner=owner, content="The staging database is pg-staging-2.", space="Platform")

    moved = memory_share(owner=editor, public_id=shared.public_id, space="Research", move=True)

    assert (moved.space_id, moved.author, moved.shared_from, moved.shared_by) == (second.pk, owner, "Platform", editor)


def test_a_removed_member_reaches_the_team_memory_no_more(owner, team):
    editor = member(team, "editor", Role.EDITOR)
    shared = services.memory_write(owner=owner, content="The staging database is pg-staging-2.", space="Platform")
    Membership.objects.filter(space=team, user=editor).delete()

    with pytest.raises(NotFound):
        memory_share(owner=editor, public_id=shared.public_id, space="Personal")
    assert Memory.objects.count() == 1


def test_a_read_token_shares_nothing_and_a_bound_token_stays_within_its_spaces(owner, team):
    private = services.memory_write(owner=owner, content="My doctor's appointment is on Monday.")
    shared = services.memory_write(owner=owner, content="The on-call rota changes on Mondays.", space="Platform")

    with pytest.raises(PermissionDenied, match="read only"):
        memory_share(owner=reader(owner, scope="read"), public_id=private.public_id, space="Platform")
    bound = reader(owner, spaces=["Platform"])
    with pytest.raises(NotFound):
        memory_share(owner=bound, public_id=private.public_id, space="Platform")
    with pytest.raises(SpaceNotFound):
        memory_share(owner=bound, public_id=shared.public_id, space="Personal")
    assert Memory.objects.count() == 2


# Provenance wherever the memory is read


def test_provenance_shows_in_session_start_and_travels_in_exports(owner, team):
    original = services.memory_write(owner=owner, content="The VPN certificate expires in May.")
    copy = memory_share(owner=owner, public_id=original.public_id, space="Platform")

    assert (
        "Platform, by owner, shared from Personal by owner] The VPN certificate"
        in session_start(owner=owner, client="cli").text
    )
    [entry] = json.loads("".join(export_chunks(exported_space(owner, "Platform"))))["memories"]
    assert (entry["id"], entry["shared_from"], entry["shared_by"]) == (str(copy.public_id), "Personal", "owner")

    entry["content"] = "The VPN certificate expires in June."
    import_memories(owner=owner, document={"format": "gnosem-export", "version": 3, "memories": [entry]})
    imported = with_text("The VPN certificate expires in June.")
    assert (imported.shared_from, imported.shared_by) == ("Personal", None)  # accounts do not travel
