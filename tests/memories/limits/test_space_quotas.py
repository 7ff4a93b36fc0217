"""Quotas per team space: what a space holds, whoever wrote it, bounded beside each writer's own
quota; new team spaces get GNOSEM_TEAM_SPACE_MAX_*; writes, edits, notes, moves and imports into a
full space are refused with nothing changed; its members see the quota on the space's page."""

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import Role, Space
from accounts.spaces import team_space_create
from gnosem.errors import QuotaExceeded
from memories import services
from memories.limits.quotas import space_quota_usage
from memories.models import Memory, Note, Quota, SpaceQuota
from memories.notes import services as notes
from memories.sharing import memory_share
from memories.transfer.importing import import_memories
from tests.memories.limits.test_quotas import export_of
from tests.memories.mcp.conftest import LEGACY, McpCaller

pytestmark = pytest.mark.django_db


def test_members_within_their_own_quotas_cannot_grow_a_space_past_its_quota(owner, team, team_member):
    quota = SpaceQuota.objects.create(space=team, max_memories=2)
    editor = team_member("editor", Role.EDITOR)
    services.memory_write(owner=owner, content="Deploys need two approvals.", space="Platform")
    services.memory_write(owner=editor, content="Staging listens on port 6543.", space="Platform")

    with pytest.raises(QuotaExceeded) as refused:
        services.memory_write(owner=editor, content="The release train leaves on Tuesdays.", space="Platform")
    with pytest.raises(QuotaExceeded):
        notes.note_write(owner=owner, title="Runbook", content="Restart the worker.", space="Platform")

    assert str(refused.value).startswith(
        "The space 'Platform' is full: its quota is 2 memories and notes, and it holds 2 memories and 0 notes."
    )
    assert Memory.objects.filter(space=team).count() == 2 and not Note.objects.exists()
    # Their personal spaces are bounded by their own quotas only.
    services.memory_write(owner=editor, content="The release train leaves on Tuesdays.")
    assert space_quota_usage(quota).memories.used == 2


def test_the_writers_own_quota_is_checked_first_and_says_so(owner, team):
    Quota.objects.create(user=owner, max_memories=1)
    SpaceQuota.objects.create(space=team, max_memories=1)
    services.memory_write(owner=owner, content="In my personal space.")

    with pytest.raises(QuotaExceeded, match=r"^Quota reached: 1 memories and notes; you have 1 memory"):
        services.memory_write(owner=owner, content="Into the team.", space="Platform")


def test_an_edit_may_not_grow_a_space_past_its_characters(owner, team):
    SpaceQuota.objects.create(space=team, max_chars=60)
    memory = services.memory_write(owner=owner, content="Short text.", space="Platform")

    with pytest.raises(QuotaExceeded, match="is full: its quota is 60 characters"):
        services.memory_update(owner=owner, public_id=memory.public_id, content="A much longer text " * 3)

    memory.refresh_from_db()
    assert memory.content == "Short text." and not memory.revisions.exists()


def test_a_move_or_a_copy_into_a_full_space_is_refused_and_the_memory_stays(owner, team):
    SpaceQuota.objects.create(space=team, max_memories=1)
    services.memory_write(owner=owner, content="Already in the team.", space="Platform")
    mine = services.memory_write(owner=owner, content="Staging listens on port 6543.")

    for move in (True, False):
        with pytest.raises(QuotaExceeded, match="The space 'Platform' is full"):
            memory_share(owner=owner, public_id=mine.public_id, space="Platform", move=move)

    mine.refresh_from_db()
    assert mine.space.kind == "personal" and Memory.objects.filter(space=team).count() == 1


def test_an_import_into_a_full_space_imports_nothing(owner, team):
    SpaceQuota.objects.create(space=team, max_memories=2)
    services.memory_write(owner=owner, content="Already in the team.", space="Platform")

    with pytest.raises(QuotaExceeded, match="1 left, and this would add 2"):
        import_memories(owner=owner, document=export_of("first", "second"), space="Platform")

    assert Memory.objects.filter(space=team).count() == 1
    assert import_memories(owner=owner, document=export_of("first"), space="Platform").imported == 1


def test_mcp_refuses_a_write_into_a_full_space_with_a_tool_error(client, owner, owner_token, team):
    SpaceQuota.objects.create(space=team, max_memories=1)
    mcp = McpCaller(client, owner_token, LEGACY)
    mcp.ok("memory_write", {"content": "first", "space": "Platform"})

    message = mcp.fails("memory_write", {"content": "second", "space": "Platform"})

    assert message.startswith("The space 'Platform' is full")
    assert "ask the operator to raise the space's quota" in message
    mcp.ok("memory_write", {"content": "second"})  # the personal space has room


def test_new_team_spaces_get_the_configured_quota_and_personal_spaces_none(owner, settings):
    assert team_space_create(user=owner, name="Unlimited") is not None
    assert not SpaceQuota.objects.exists()

    settings.GNOSEM_TEAM_SPACE_MAX_MEMORIES = 500
    settings.GNOSEM_TEAM_SPACE_MAX_CHARS = 100_000
    space = team_space_create(user=owner, name="Bounded")

    quota = SpaceQuota.objects.get()
    assert (quota.space, quota.max_memories, quota.max_chars, quota.max_tokens) == (space, 500, 100_000, None)
    assert not SpaceQuota.objects.filter(space__kind="personal").exists()


def test_members_see_the_quota_on_the_spaces_page_and_strangers_nothing(owner, team, stranger):
    SpaceQuota.objects.create(space=team, max_memories=10)
    services.memory_write(owner=owner, content="Deploys need two approvals.", space="Platform")
    owner_page, stranger_page = Client(), Client()
    owner_page.force_login(owner)
    stranger_page.force_login(stranger)
    url = reverse("space", kwargs={"space_id": team.public_id})

    page = owner_page.get(url).content.decode()

    assert "Its quota:\n      1 of 10 memories and notes" in page
    assert stranger_page.get(url).status_code == 404
    personal = Space.objects.get(personal_of=owner)
    assert "Its quota" not in owner_page.get(reverse("space", kwargs={"space_id": personal.public_id})).content.decode()


def test_the_operator_edits_a_spaces_quota_in_the_admin(admin_client, team):
    SpaceQuota.objects.create(space=team, max_memories=10)

    listing = admin_client.get(reverse("admin:memories_spacequota_changelist"))

    assert listing.status_code == 200 and "Platform" in listing.content.decode()
