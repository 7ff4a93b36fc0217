"""Team spaces managed over REST: making, renaming and deleting them, members and roles, leaving,
handing over, invitations, and sharing a memory into a space; and what every stranger gets: a
non-member, a removed member, a viewer writing, an editor managing members, a token bound to other
spaces, a read token trying every write."""

import json
import uuid

import pytest
from django.test import Client

from accounts.activity import activity_for_owner
from accounts.models import ActivityAction, Membership, Role, Space, SpaceInvitation, SpaceKind
from accounts.spaces import space_invitation_create, team_space_create
from accounts.tokens import token_create
from memories import services
from memories.models import Memory
from tests.memories.spaces import member

pytestmark = pytest.mark.django_db


class Api:
    def __init__(self, user, scope="write", **binding):
        self.issued = token_create(owner=user, name="script", scope=scope, **binding)
        self.client = Client(headers={"Authorization": f"Bearer {self.issued.secret}"})

    def send(self, method, path, body=None, query=""):
        url = f"/api/v1/{path}{query}"
        if body is None:
            return getattr(self.client, method)(url)
        return getattr(self.client, method)(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def team(owner) -> Space:
    return team_space_create(user=owner, name="Research")


def role_of(team, username):
    return Membership.objects.filter(space=team, user__username=username).values_list("role", flat=True).first()


def every_operation(team, username="viewer", invitation_id=None):
    """(method, path, body) of every operation on one space, reading and writing."""
    space = f"spaces/{team.public_id}"
    invitation = invitation_id or uuid.uuid4()
    return [
        ("get", f"{space}/members", None),
        ("get", f"{space}/invitations", None),
        ("patch", space, {"name": "Renamed"}),
        ("delete", space, {"confirm_name": team.name}),
        ("patch", f"{space}/members/{username}", {"role": "editor"}),
        ("delete", f"{space}/members/{username}", None),
        ("post", f"{space}/leave", None),
        ("post", f"{space}/hand-over", {"to": username}),
        ("post", f"{space}/invitations", {"role": "viewer"}),
        ("delete", f"{space}/invitations/{invitation}", None),
        ("get", f"{space}/key", None),
        ("post", f"{space}/key", None),
    ]


def assert_untouched(team, roles):
    team.refresh_from_db()
    assert team.name == "Research"
    assert {m.user.username: m.role for m in Membership.objects.filter(space=team).select_related("user")} == roles


# What owners and admins do


def test_a_user_makes_renames_and_deletes_a_team_space(owner):
    api = Api(owner)

    made = api.send("post", "spaces", {"name": "  Research  "})
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["name"], body["kind"], body["role"], body["writable"], body["default"]) == (
        "Research",
        "team",
        "owner",
        True,
        False,
    )
    space_id = body["id"]
    assert [space["name"] for space in api.send("get", "spaces").json()["spaces"]] == ["Personal", "Research"]

    renamed = api.send("patch", f"spaces/{space_id}", {"name": "Platform"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "Platform"

    wrong = api.send("delete", f"spaces/{space_id}", {"confirm_name": "platform"})
    assert wrong.status_code == 400 and wrong.json()["error"]["field"] == "confirm_name"
    assert api.send("delete", f"spaces/{space_id}", query="?confirm_name=Platform").status_code == 204
    assert not Space.objects.filter(public_id=space_id).exists()
    assert [event.action for event in activity_for_owner(owner)][:3] == [
        ActivityAction.SPACE_DELETED,
        ActivityAction.SPACE_RENAMED,
        ActivityAction.SPACE_CREATED,
    ]
    assert activity_for_owner(owner).first().token == api.issued.token


def test_a_deletion_confirmed_in_the_body_deletes_the_space_and_what_it_holds(owner, team):
    services.memory_write(owner=owner, content="The build server is ci-7.", space="Research")

    assert Api(owner).send("delete", f"spaces/{team.public_id}", {"confirm_name": "Research"}).status_code == 204
    assert not Memory.objects.exists()


def test_the_members_are_listed_owners_first_and_roles_change(owner, team):
    member(team, "viewer", Role.VIEWER)
    api = Api(owner)

    listed = api.send("get", f"spaces/{team.public_id}/members").json()
    assert listed["space"] == "Research"
    assert [(m["username"], m["role"]) for m in listed["members"]] == [("owner", "owner"), ("viewer", "viewer")]

    changed = api.send("patch", f"spaces/{team.public_id}/members/viewer", {"role": "editor"})
    assert changed.status_code == 200 and changed.json()["role"] == "editor"
    assert role_of(team, "viewer") == "editor"
    assert api.send("patch", f"spaces/{team.public_id}/members/owner", {"role": "admin"}).status_code == 400
    assert api.send("patch", f"spaces/{team.public_id}/members/nobody", {"role": "viewer"}).status_code == 404


def test_a_member_is_removed_leaves_and_the_space_is_handed_over(owner, team):
    member(team, "viewer", Role.VIEWER)
    admin = member(team, "admin", Role.ADMIN)
    api = Api(owner)

    assert api.send("delete", f"spaces/{team.public_id}/members/viewer").status_code == 204
    assert role_of(team, "viewer") is None
    assert api.send("delete", f"spaces/{team.public_id}/members/owner").status_code == 400  # leave instead

    handed = api.send("post", f"spaces/{team.public_id}/hand-over", {"to": "admin"})
    assert handed.status_code == 200
    assert [(m["username"], m["role"]) for m in handed.json()["members"]] == [("admin", "owner"), ("owner", "admin")]

    assert Api(admin).send("post", f"spaces/{team.public_id}/leave").status_code == 400  # its last owner
    assert api.send("post", f"spaces/{team.public_id}/leave").status_code == 204
    assert role_of(team, "owner") is None


def test_invitations_are_made_listed_withdrawn_and_accepted(owner, team, stranger):
    api = Api(owner)

    made = api.send("post", f"spaces/{team.public_id}/invitations", {"role": "editor", "days": 3})
    assert made.status_code == 201, made.content
    issued = made.json()
    assert issued["role"] == "editor" and issued["created_by"] == "owner"
    assert issued["secret"].startswith("spi_") and issued["url"] == f"http://testserver/spaces/join/{issued['secret']}/"
    assert api.send("post", f"spaces/{team.public_id}/invitations", {"role": "owner"}).status_code == 400
    listed = api.send("get", f"spaces/{team.public_id}/invitations").json()["invitations"]
    assert [invitation["id"] for invitation in listed] == [issued["id"]]
    assert "secret" not in listed[0]

    joined = Api(stranger).send("post", "invitations/accept", {"secret": issued["secret"]})
    assert joined.status_code == 200, joined.content
    assert (joined.json()["name"], joined.json()["role"]) == ("Research", "editor")
    assert role_of(team, "stranger") == "editor"
    again = Api(stranger).send("post", "invitations/accept", {"secret": issued["secret"]})
    assert again.status_code == 400 and "used already" in again.json()["error"]["message"]
    assert Api(stranger).send("post", "invitations/accept", {"secret": "spi_nothing"}).status_code == 404

    other = api.send("post", f"spaces/{team.public_id}/invitations", {"role": "viewer"}).json()
    assert api.send("delete", f"spaces/{team.public_id}/invitations/{other['id']}").status_code == 204
    assert SpaceInvitation.objects.get(public_id=other["id"]).revoked_at is not None
    assert api.send("delete", f"spaces/{team.public_id}/invitations/{issued['id']}").status_code == 400  # used
    assert api.send("delete", f"spaces/{team.public_id}/invitations/{uuid.uuid4()}").status_code == 404


def test_a_memory_is_shared_into_a_space_over_rest(owner, team):
    api = Api(owner)
    written = api.send("post", "memories", {"content": "The VPN certificate expires in May."}).json()

    copy = api.send("post", f"memories/{written['id']}/share", {"space": "Research"})
    assert copy.status_code == 201, copy.content
    assert copy["Location"] == f"/api/v1/memories/{copy.json()['id']}"
    assert (copy.json()["space"], copy.json()["shared_from"], copy.json()["shared_by"]) == (
        "Research",
        "Personal",
        "owner",
    )
    again = api.send("post", f"memories/{written['id']}/share", {"space": "Research"})
    assert again.status_code == 200 and again.json()["duplicate"] is True

    moved = api.send("post", f"memories/{copy.json()['id']}/share", {"space": "Personal", "move": True})
    assert moved.status_code == 200 and moved.json()["id"] == written["id"]
    assert not Memory.objects.filter(space=team).exists()
    assert api.send("post", f"memories/{written['id']}/share", {"space": "Personal"}).status_code == 400
    assert api.send("post", f"memories/{written['id']}/share", {"move": True}).status_code == 400


# Strangers


def test_a_non_member_gets_404_for_every_operation_like_for_a_space_that_does_not_exist(owner, team, stranger):
    member(team, "viewer", Role.VIEWER)
    outsider = Api(stranger)
    nowhere = Space(public_id=uuid.uuid4(), name="Research")

    for (method, path, body), (_, missing, _) in zip(every_operation(team), every_operation(nowhere), strict=True):
        theirs = outsider.send(method, path, body)
        nobodys = outsider.send(method, missing, body)
        assert theirs.status_code == nobodys.status_code == 404, (method, path, theirs.content)
        assert theirs.json() == json.loads(
            nobodys.content.decode().replace(str(nowhere.public_id), str(team.public_id))
        )
    assert_untouched(team, {"owner": "owner", "viewer": "viewer"})


def test_a_removed_member_gets_404_on_their_next_call(owner, team):
    admin = member(team, "admin", Role.ADMIN)
    member(team, "viewer", Role.VIEWER)
    api = Api(admin)
    assert api.send("get", f"spaces/{team.public_id}/members").status_code == 200

    Membership.objects.filter(space=team, user=admin).delete()

    for method, path, body in every_operation(team):
        assert api.send(method, path, body).status_code == 404, (method, path)
    assert_untouched(team, {"owner": "owner", "viewer": "viewer"})


def test_a_viewer_reads_the_members_but_changes_nothing(owner, team):
    viewer = Api(member(team, "viewer", Role.VIEWER))
    editor = member(team, "editor", Role.EDITOR)

    assert viewer.send("get", f"spaces/{team.public_id}/members").status_code == 200
    for method, path, body in every_operation(team, username="editor")[1:]:
        if path.endswith("/leave"):
            continue  # anyone may leave
        response = viewer.send(method, path, body)
        assert response.status_code == 403, (method, path, response.content)
        assert response.json()["error"]["code"] == "forbidden"
    assert_untouched(team, {"owner": "owner", "viewer": "viewer", editor.username: "editor"})


def test_an_editor_writes_memories_but_manages_neither_members_nor_invitations(owner, team):
    editor = Api(member(team, "editor", Role.EDITOR))
    member(team, "viewer", Role.VIEWER)

    for method, path, body in every_operation(team)[1:]:
        if path.endswith("/leave"):
            continue
        response = editor.send(method, path, body)
        assert response.status_code == 403, (method, path, response.content)
        assert "Only the space's owners" in response.json()["error"]["message"]
    assert editor.send("post", "memories", {"content": "Editors write.", "space": "Research"}).status_code == 201
    assert_untouched(team, {"owner": "owner", "editor": "editor", "viewer": "viewer"})


def test_a_read_token_gets_the_403_every_write_gets(owner, team):
    reader = Api(owner, scope="read")
    member(team, "viewer", Role.VIEWER)
    memory = services.memory_write(owner=owner, content="The build server is ci-7.")
    invitation = space_invitation_create(user=owner, space_id=team.public_id, role="viewer")

    writes = [op for op in every_operation(team, invitation_id=invitation.invitation.public_id) if op[0] != "get"]
    writes += [
        ("post", "spaces", {"name": "Another"}),
        ("post", "invitations/accept", {"secret": invitation.secret}),
        ("post", f"memories/{memory.public_id}/share", {"space": "Research"}),
    ]
    for method, path, body in writes:
        response = reader.send(method, path, body)
        assert response.status_code == 403, (method, path, response.content)
        assert "read-only" in response.json()["error"]["message"]
    assert reader.send("get", f"spaces/{team.public_id}/members").status_code == 200
    assert reader.send("get", f"spaces/{team.public_id}/invitations").status_code == 200
    assert_untouched(team, {"owner": "owner", "viewer": "viewer"})
    assert Space.objects.filter(kind=SpaceKind.TEAM).count() == 1 and Memory.objects.count() == 1


def test_a_token_bound_to_other_spaces_reaches_this_one_no_more_than_a_stranger(owner, team):
    other = team_space_create(user=owner, name="Platform")
    bound = Api(owner, spaces=["Platform"])
    member(team, "viewer", Role.VIEWER)

    for method, path, body in every_operation(team):
        response = bound.send(method, path, body)
        assert response.status_code == 404, (method, path, response.content)
        assert response.json()["error"]["message"] == f"No space with id {team.public_id}."
    assert bound.send("get", f"spaces/{other.public_id}/members").status_code == 200
    assert_untouched(team, {"owner": "owner", "viewer": "viewer"})


def test_a_bound_token_neither_makes_nor_joins_spaces(owner, team, stranger):
    secret = space_invitation_create(user=owner, space_id=team.public_id, role="viewer").secret
    bound = Api(stranger, spaces=["Personal"])

    made = bound.send("post", "spaces", {"name": "Side project"})
    assert made.status_code == 403 and "bound to chosen spaces" in made.json()["error"]["message"]
    joined = bound.send("post", "invitations/accept", {"secret": secret})
    assert joined.status_code == 403 and "bound to chosen spaces" in joined.json()["error"]["message"]
    assert not Space.objects.filter(name="Side project").exists()
    assert role_of(team, "stranger") is None
    assert Api(stranger).send("post", "invitations/accept", {"secret": secret}).status_code == 200


def test_a_server_without_team_spaces_refuses_making_one(settings, owner):
    settings.GNOSEM_TEAM_SPACES = "off"

    response = Api(owner).send("post", "spaces", {"name": "Research"})

    assert response.status_code == 403 and "nobody may make team spaces" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("spaces", {"name": ""}, "name"),
        ("spaces", {"name": "Personal"}, "name"),
        ("spaces", {"title": "Research"}, "title"),
        ("spaces", ["Research"], "body"),
    ],
)
def test_a_bad_body_is_a_clear_400(owner, path, body, field):
    response = Api(owner).send("post", path, body)

    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] == field
    assert not Space.objects.filter(kind=SpaceKind.TEAM).exists()


def test_a_username_holding_a_nul_character_is_a_clear_400(owner, team):
    response = Api(owner).send("delete", f"spaces/{team.public_id}/members/a%00b")

    assert response.status_code == 400 and response.json()["error"]["field"] == "member"
