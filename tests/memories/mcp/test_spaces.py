"""Spaces over MCP: spaces_list, space_members, `space` on the reading and writing tools,
memory_share, and every stranger's answer: a non-member, a removed member, a viewer writing, a read
token, a token bound elsewhere, a bad `space`."""

import pytest
from mcp import Client

from accounts.models import Membership, Role
from accounts.spaces import personal_space_of
from accounts.tokens import token_create
from memories import services
from memories.models import Memory, Note
from tests.memories.mcp.conftest import run_client
from tests.memories.spaces import member

pytestmark = pytest.mark.django_db


def token(user, scope="write", **binding):
    return token_create(owner=user, name="laptop", scope=scope, **binding).secret


def test_spaces_list_shows_each_space_with_its_role_counts_and_default(mcp, owner, team):
    services.memory_write(owner=owner, content="Personal one.")
    services.memory_write(owner=owner, content="Team one.", space="Platform")
    services.memory_write(owner=owner, content="Team two.", space="Platform")

    spaces = mcp.ok("spaces_list")["spaces"]

    assert [(s["name"], s["kind"], s["role"], s["writable"], s["default"], s["memories"]) for s in spaces] == [
        ("Personal", "personal", "owner", True, True, 1),
        ("Platform", "team", "owner", True, False, 2),
    ]
    assert spaces[1]["id"] == str(team.public_id)


def test_a_write_naming_the_team_space_is_found_by_another_member_and_nobody_else(mcp_as, owner, team, stranger):
    editor = member(team, "editor", Role.EDITOR)
    written = mcp_as(token(owner)).ok("memory_write", {"content": "Staging moved to port 6543.", "space": "Platform"})
    services.memories_index(memory_ids=list(Memory.objects.values_list("pk", flat=True)))

    found = mcp_as(token(editor)).ok("memory_search", {"query": "which port is staging on"})["results"]
    assert [hit["id"] for hit in found] == [written["id"]]
    assert mcp_as(token(stranger)).ok("memory_search", {"query": "which port is staging on"})["results"] == []
    assert Memory.objects.get(public_id=written["id"]).space_id == team.pk


def test_reads_narrowed_to_a_space_see_only_it(mcp, owner, team):
    services.memory_write(owner=owner, content="Buy a standing desk.", tags=["home"])
    services.memory_write(owner=owner, content="The build server is ci-7.", tags=["infra"], space="Platform")

    assert [m["content"] for m in mcp.ok("memory_list", {"space": "Platform"})["memories"]] == [
        "The build server is ci-7."
    ]
    assert mcp.ok("memory_count", {"space": "Personal"})["count"] == 1
    assert mcp.ok("memory_count")["count"] == 2
    assert "ci-7" not in mcp.ok("session_start", {"space": "Personal"})["text"]


def test_a_viewer_reads_the_team_but_every_write_there_is_refused(mcp_as, owner, team):
    viewer = mcp_as(token(member(team, "viewer", Role.VIEWER)))
    shared = services.memory_write(owner=owner, content="Releases go out on Tuesdays.", space="Platform")

    assert viewer.ok("memory_get", {"id": str(shared.public_id)})["content"] == "Releases go out on Tuesdays."
    refusals = [
        viewer.fails("memory_write", {"content": "Releases on Fridays.", "space": "Platform"}),
        viewer.fails("memory_update", {"id": str(shared.public_id), "content": "Releases on Fridays."}),
        viewer.fails("memory_delete", {"id": str(shared.public_id)}),
        viewer.fails("note_write", {"title": "Plan", "content": "Our plan.", "space": "Platform"}),
    ]
    assert all("not write to it (viewer)" in message for message in refusals), refusals
    assert Memory.objects.filter(space=team).count() == 1 and not Note.objects.exists()


def test_a_space_outside_the_reach_is_not_found_like_one_that_does_not_exist(mcp_as, owner, team, stranger):
    outsider = mcp_as(token(stranger))
    for tool, arguments in (
        ("memory_write", {"content": "Hello."}),
        ("memory_search", {"query": "anything"}),
        ("memory_list", {}),
        ("note_write", {"title": "T", "content": "C"}),
    ):
        theirs = outsider.fails(tool, {**arguments, "space": "Platform"})
        nobodys = outsider.fails(tool, {**arguments, "space": "Nowhere"})
        assert theirs == nobodys.replace("Nowhere", "Platform")
        assert "spaces_list shows the spaces you reach" in theirs
        theirs_by_id = outsider.fails(tool, {**arguments, "space": str(team.public_id)})
        assert "No space" in theirs_by_id
    assert not Memory.objects.filter(space=team).exists()


@pytest.mark.parametrize("bad", [7, ["Platform"], {"name": "Platform"}, "", "x" * 101])
def test_a_space_of_the_wrong_shape_is_a_clear_error(mcp, team, bad):
    message = mcp.fails("memory_write", {"content": "Hello.", "space": bad})
    assert "space" in message
    assert not Memory.objects.exists()


def test_a_read_token_lists_spaces_as_read_only_and_cannot_write(mcp_as, owner, team):
    reader = mcp_as(token(owner, scope="read"))

    assert {space["writable"] for space in reader.ok("spaces_list")["spaces"]} == {False}
    assert "memory_write" not in reader.tools()
    assert "read-only" in reader.fails("memory_write", {"content": "Nope.", "space": "Platform"})


def test_a_token_bound_to_the_team_writes_there_and_sees_nothing_personal(mcp_as, owner, team):
    services.memory_write(owner=owner, content="My doctor's appointment is on Monday.")
    bound = mcp_as(token(owner, spaces=["Platform"]))

    assert [space["name"] for space in bound.ok("spaces_list")["spaces"]] == ["Platform"]
    written = bound.ok("memory_write", {"content": "The on-call rota changes on Mondays."})
    assert Memory.objects.get(public_id=written["id"]).space_id == team.pk
    assert [m["content"] for m in bound.ok("memory_list")["memories"]] == ["The on-call rota changes on Mondays."]
    assert "No space" in bound.fails("memory_write", {"content": "Private.", "space": "Personal"})


def test_removing_a_member_ends_their_reach_on_the_next_call(mcp_as, owner, team):
    editor = member(team, "editor", Role.EDITOR)
    caller = mcp_as(token(editor))
    services.memory_write(owner=owner, content="The VPN certificate expires in May.", space="Platform")
    assert len(caller.ok("memory_list")["memories"]) == 1

    Membership.objects.filter(space=team, user=editor).delete()

    assert caller.ok("memory_list")["memories"] == []
    assert [space["name"] for space in caller.ok("spaces_list")["spaces"]] == ["Personal"]
    assert "No space" in caller.fails("memory_write", {"content": "Still here?", "space": "Platform"})
    assert Memory.objects.filter(space=team).count() == 1
    assert personal_space_of(editor).pk not in Memory.objects.values_list("space_id", flat=True)


def test_every_result_says_its_space_and_author_and_session_start_labels_the_teams(mcp_as, owner, team):
    editor = member(team, "editor", Role.EDITOR)
    services.memory_write(owner=editor, content="The staging database moved to port 6543.", space="Platform")
    services.memory_write(owner=owner, content="I prefer short answers.")
    caller = mcp_as(token(owner))

    listed = {m["content"]: (m["space"], m["author"]) for m in caller.ok("memory_list")["memories"]}
    assert listed == {
        "The staging database moved to port 6543.": ("Platform", "editor"),
        "I prefer short answers.": ("Personal", "owner"),
    }
    text = caller.ok("session_start")["text"]
    assert "Platform, by editor] The staging database moved to port 6543." in text
    assert "by owner" not in text
    note = caller.ok("note_write", {"title": "Runbook", "content": "Restart the worker.", "space": "Platform"})
    assert (note["space"], note["author"]) == ("Platform", "owner")


# Sharing a memory into another space, and a space's members


def test_memory_share_copies_by_default_and_moves_on_request(mcp, owner, team):
    written = mcp.ok("memory_write", {"content": "The VPN certificate expires in May."})

    copy = mcp.ok("memory_share", {"id": written["id"], "space": "Platform"})
    assert copy["id"] != written["id"] and copy["duplicate"] is False
    assert (copy["space"], copy["author"], copy["shared_from"], copy["shared_by"]) == (
        "Platform",
        "owner",
        "Personal",
        "owner",
    )
    assert mcp.ok("memory_get", {"id": written["id"]})["space"] == "Personal"

    again = mcp.ok("memory_share", {"id": written["id"], "space": str(team.public_id)})
    assert (again["id"], again["duplicate"]) == (copy["id"], True)

    moved = mcp.ok("memory_share", {"id": copy["id"], "space": "Personal", "move": True})
    assert (moved["id"], moved["duplicate"]) == (written["id"], True)  # the text was there: the copy is gone
    assert not Memory.objects.filter(space=team).exists()


def test_memory_share_refuses_what_the_caller_may_not_do(mcp_as, owner, team, stranger):
    viewer = mcp_as(token(member(team, "viewer", Role.VIEWER)))
    shared = services.memory_write(owner=owner, content="Releases go out on Tuesdays.", space="Platform")
    own = viewer.ok("memory_write", {"content": "I prefer short answers."})

    assert "not write to it (viewer)" in viewer.fails("memory_share", {"id": own["id"], "space": "Platform"})
    moving_out = {"id": str(shared.public_id), "space": "Personal", "move": True}
    assert "not write to it (viewer)" in viewer.fails("memory_share", moving_out)
    assert "Personal" in viewer.ok("memory_share", {"id": str(shared.public_id), "space": "Personal"})["space"]

    outsider = mcp_as(token(stranger))
    theirs = outsider.ok("memory_write", {"content": "The stranger's own note."})
    assert "No memory with id" in outsider.fails("memory_share", {"id": str(shared.public_id), "space": "Personal"})
    unreached = outsider.fails("memory_share", {"id": theirs["id"], "space": "Platform"})
    assert unreached == outsider.fails("memory_share", {"id": theirs["id"], "space": "Nowhere"}).replace(
        "Nowhere", "Platform"
    )
    assert "spaces_list shows the spaces you reach" in unreached
    assert Memory.objects.filter(space=team).count() == 1


def test_a_read_token_cannot_share_and_a_bound_token_shares_only_within_its_spaces(mcp_as, owner, team):
    private = services.memory_write(owner=owner, content="My doctor's appointment is on Monday.")
    shared = services.memory_write(owner=owner, content="The on-call rota changes on Mondays.", space="Platform")
    reader = mcp_as(token(owner, scope="read"))
    assert "memory_share" not in reader.tools()
    assert "read-only" in reader.fails("memory_share", {"id": str(private.public_id), "space": "Platform"})

    bound = mcp_as(token(owner, spaces=["Platform"]))
    assert "No memory with id" in bound.fails("memory_share", {"id": str(private.public_id), "space": "Platform"})
    assert "No space" in bound.fails("memory_share", {"id": str(shared.public_id), "space": "Personal"})
    assert Memory.objects.count() == 2


def test_space_members_lists_who_reads_a_space_owners_first(mcp_as, owner, team):
    viewer = member(team, "viewer", Role.VIEWER)
    member(team, "editor", Role.EDITOR)

    listed = mcp_as(token(viewer, scope="read")).ok("space_members", {"space": "Platform"})

    assert listed["space"] == "Platform"
    assert [(m["username"], m["role"]) for m in listed["members"]] == [
        ("owner", "owner"),
        ("editor", "editor"),
        ("viewer", "viewer"),
    ]
    mine = mcp_as(token(viewer)).ok("space_members", {"space": "Personal"})
    assert [(m["username"], m["role"]) for m in mine["members"]] == [("viewer", "owner")]


def test_space_members_of_a_space_outside_the_reach_is_not_found_like_one_that_does_not_exist(
    mcp_as, owner, team, stranger
):
    outsider = mcp_as(token(stranger))
    assert outsider.fails("space_members", {"space": "Platform"}) == outsider.fails(
        "space_members", {"space": "Nowhere"}
    ).replace("Nowhere", "Platform")
    assert "No space" in outsider.fails("space_members", {"space": str(team.public_id)})

    bound = mcp_as(token(owner, spaces=["Platform"]))
    assert "No space" in bound.fails("space_members", {"space": "Personal"})

    editor = member(team, "editor", Role.EDITOR)
    caller = mcp_as(token(editor))
    assert len(caller.ok("space_members", {"space": "Platform"})["members"]) == 2
    Membership.objects.filter(space=team, user=editor).delete()
    assert "No space" in caller.fails("space_members", {"space": "Platform"})


def test_no_tool_manages_members_or_invitations(mcp):
    assert not {name for name in mcp.tools() if "invit" in name or ("member" in name and name != "space_members")}


def test_the_sdk_client_lists_members_and_shares_into_the_team(live_server, owner, owner_token, team):
    async def script(client: Client) -> tuple[dict, dict]:
        members = await client.call_tool("space_members", {"space": "Platform"})
        written = await client.call_tool("memory_write", {"content": "The staging database is pg-staging-2."})
        shared = await client.call_tool(
            "memory_share", {"id": written.structured_content["id"], "space": "Platform", "move": True}
        )
        return members.structured_content, shared.structured_content

    members, shared = run_client(live_server, owner_token, "auto", script)

    assert [(m["username"], m["role"]) for m in members["members"]] == [("owner", "owner")]
    assert (shared["space"], shared["shared_from"], shared["shared_by"]) == ("Platform", "Personal", "owner")
    assert Memory.objects.get().space_id == team.pk
