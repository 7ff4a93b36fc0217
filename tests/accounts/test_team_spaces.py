"""Team spaces: making, renaming and deleting them, their members and roles, and invitation links."""

import threading
import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from accounts.activity import activity_for_owner
from accounts.models import ActivityAction, Membership, Role, Space, SpaceInvitation
from accounts.spaces import (
    member_remove,
    member_role_change,
    personal_space_of,
    space_delete,
    space_hand_over,
    space_invitation_accept,
    space_invitation_create,
    space_invitation_revoke,
    space_invitations,
    space_leave,
    space_members,
    space_rename,
    spaces_of,
    team_space_create,
)
from gnosem.errors import NotFound, PermissionDenied, ValidationError
from memories.models import Memory

pytestmark = pytest.mark.django_db


def make_user(username: str, **fields):
    return get_user_model().objects.create_user(username=username, email=f"{username}@example.com", **fields)


def role_of(space: Space, user) -> str | None:
    return Membership.objects.filter(space=space, user=user).values_list("role", flat=True).first()


def actions(user) -> list[str]:
    return [event.action for event in activity_for_owner(user)]


@pytest.fixture
def team(owner) -> Space:
    return team_space_create(user=owner, name="Research")


@pytest.fixture
def members(team) -> dict[str, object]:
    """One member of the team for each role below owner, by role."""
    joined = {}
    for role in (Role.ADMIN, Role.EDITOR, Role.VIEWER):
        joined[role] = make_user(role)
        Membership.objects.create(space=team, user=joined[role], role=role)
    return joined


# Making a team space


def test_a_user_makes_a_team_space_and_owns_it(owner):
    space = team_space_create(user=owner, name="  Research  ")

    assert (space.name, space.kind, space.personal_of) == ("Research", "team", None)
    assert role_of(space, owner) == Role.OWNER
    event = activity_for_owner(owner).first()
    assert event.action == ActivityAction.SPACE_CREATED
    assert event.detail == {"via": "command line", "space": "Research", "space_id": str(space.public_id)}


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "1-100 characters"),
        ("   ", "1-100 characters"),
        ("x" * 101, "1-100 characters"),
        (None, "1-100 characters"),
        (["Research"], "1-100 characters"),
        ("two\nlines", "control characters or line breaks"),
        ("a\ttab", "control characters or line breaks"),
        ("evil\u202etxt", "direction-changing"),
        ("Personal", "everyone's own space"),
        (" personal ", "everyone's own space"),
    ],
)
def test_a_name_must_be_one_line_of_1_to_100_characters_and_not_personal(owner, name, problem):
    with pytest.raises(ValidationError, match=problem) as refusal:
        team_space_create(user=owner, name=name)

    assert refusal.value.field == "name"
    assert not Space.objects.filter(kind="team").exists()


def test_a_name_of_100_characters_is_taken(owner):
    assert team_space_create(user=owner, name="x" * 100).name == "x" * 100


def test_a_user_cannot_have_two_spaces_whose_names_differ_only_in_case(owner, stranger, team):
    with pytest.raises(ValidationError, match="already belong to a space called “RESEARCH”"):
        team_space_create(user=owner, name="RESEARCH")

    assert team_space_create(user=stranger, name="research").name == "research"


def test_nobody_makes_team_spaces_when_they_are_off(owner, settings):
    settings.GNOSEM_TEAM_SPACES = "off"
    staff = make_user("operator", is_staff=True)

    for user in (owner, staff):
        with pytest.raises(PermissionDenied, match="nobody may make team spaces"):
            team_space_create(user=user, name="Research")
    assert not Space.objects.filter(kind="team").exists()


def test_only_staff_make_team_spaces_when_the_policy_says_staff(owner, settings):
    settings.GNOSEM_TEAM_SPACES = "staff"

    with pytest.raises(PermissionDenied, match="only staff may make team spaces"):
        team_space_create(user=owner, name="Research")
    assert team_space_create(user=make_user("operator", is_staff=True), name="Research").kind == "team"


@pytest.mark.django_db(transaction=True)
def test_the_same_name_sent_twice_at_once_makes_one_space():
    user = make_user("racer")
    start, outcomes = threading.Barrier(4), []

    def create() -> None:
        start.wait()
        try:
            team_space_create(user=user, name="Research")
            outcomes.append("made")
        except ValidationError:
            outcomes.append("refused")
        finally:
            connection.close()

    run_at_once(create, 4)

    assert sorted(outcomes) == ["made"] + ["refused"] * 3
    assert Space.objects.filter(kind="team", name="Research").count() == 1


# What strangers and each role may do


def with_id(space_id: uuid.UUID) -> dict[str, Callable]:
    """Every service that names a space, called on `space_id` with otherwise sensible arguments."""
    return {
        "rename": lambda user: space_rename(user=user, space_id=space_id, name="Renamed"),
        "delete": lambda user: space_delete(user=user, space_id=space_id, confirm_name="Research"),
        "members": lambda user: space_members(user=user, space_id=space_id),
        "role": lambda user: member_role_change(user=user, space_id=space_id, member="editor", role="viewer"),
        "remove": lambda user: member_remove(user=user, space_id=space_id, member="editor"),
        "leave": lambda user: space_leave(user=user, space_id=space_id),
        "hand over": lambda user: space_hand_over(user=user, space_id=space_id, to="editor"),
        "invite": lambda user: space_invitation_create(user=user, space_id=space_id, role="viewer"),
        "invitations": lambda user: space_invitations(user=user, space_id=space_id),
        "revoke": lambda user: space_invitation_revoke(user=user, space_id=space_id, invitation_id=uuid.uuid4()),
    }


@pytest.mark.parametrize("operation", with_id(uuid.uuid4()).keys())
def test_a_stranger_is_told_the_space_does_not_exist_as_for_one_that_never_was(
    operation, team, members, stranger, owner
):
    missing = uuid.uuid4()

    with pytest.raises(NotFound) as on_team:
        with_id(team.public_id)[operation](stranger)
    with pytest.raises(NotFound) as on_missing:
        with_id(missing)[operation](stranger)

    assert str(on_team.value).replace(str(team.public_id), "?") == str(on_missing.value).replace(str(missing), "?")
    assert str(team.public_id) in str(on_team.value) and "Research" not in str(on_team.value)
    assert Space.objects.get(pk=team.pk).name == "Research"
    assert Membership.objects.filter(space=team).count() == 4
    assert actions(stranger) == []


@pytest.mark.parametrize("role", [Role.EDITOR, Role.VIEWER])
@pytest.mark.parametrize("operation", ["rename", "role", "remove", "invite", "invitations", "revoke"])
def test_editors_and_viewers_cannot_manage_the_space(team, members, role, operation):
    with pytest.raises(PermissionDenied, match="owners and admins"):
        with_id(team.public_id)[operation](members[role])

    assert Space.objects.get(pk=team.pk).name == "Research"
    assert role_of(team, members[Role.EDITOR]) == Role.EDITOR


@pytest.mark.parametrize("role", [Role.ADMIN, Role.EDITOR, Role.VIEWER])
def test_only_an_owner_deletes_or_hands_over_the_space(team, members, role):
    for operation in ("delete", "hand over"):
        with pytest.raises(PermissionDenied, match="Only the space's owners may"):
            with_id(team.public_id)[operation](members[role])

    assert Space.objects.filter(pk=team.pk).exists() and role_of(team, members[Role.EDITOR]) == Role.EDITOR


def test_an_admin_cannot_make_an_owner_nor_change_or_remove_one(team, members, owner):
    admin = members[Role.ADMIN]

    with pytest.raises(PermissionDenied, match="make an owner or change an owner's role"):
        member_role_change(user=admin, space_id=team.public_id, member="editor", role="owner")
    with pytest.raises(PermissionDenied, match="make an owner or change an owner's role"):
        member_role_change(user=admin, space_id=team.public_id, member="admin", role="owner")
    with pytest.raises(PermissionDenied, match="make an owner or change an owner's role"):
        member_role_change(user=admin, space_id=team.public_id, member="owner", role="viewer")
    with pytest.raises(PermissionDenied, match="remove an owner"):
        member_remove(user=admin, space_id=team.public_id, member="owner")

    assert [role_of(team, user) for user in (owner, admin, members[Role.EDITOR])] == ["owner", "admin", "editor"]


def test_an_admin_renames_invites_and_manages_members_below_owner(team, members):
    admin, editor, viewer = members[Role.ADMIN], members[Role.EDITOR], members[Role.VIEWER]

    space_rename(user=admin, space_id=team.public_id, name="Lab")
    member_role_change(user=admin, space_id=team.public_id, member="viewer", role="admin")
    member_remove(user=admin, space_id=team.public_id, member="editor")
    issued = space_invitation_create(user=admin, space_id=team.public_id, role="admin")

    assert Space.objects.get(pk=team.pk).name == "Lab"
    assert (role_of(team, viewer), role_of(team, editor)) == ("admin", None)
    assert list(space_invitations(user=admin, space_id=team.public_id)) == [issued.invitation]
    assert actions(admin) == ["invitation_made", "member_removed", "role_changed", "space_renamed"]


def test_any_member_reads_the_members_owners_first(team, members, owner):
    listed = list(space_members(user=members[Role.VIEWER], space_id=team.public_id))

    assert [(m.user.username, m.user.email, m.role) for m in listed] == [
        ("owner", "owner@example.com", "owner"),
        ("admin", "admin@example.com", "admin"),
        ("editor", "editor@example.com", "editor"),
        ("viewer", "viewer@example.com", "viewer"),
    ]
    assert all(m.joined_at <= timezone.now() for m in listed)


# Renaming and deleting


def test_an_owner_renames_the_space_and_the_log_says_from_what(team, owner):
    space_rename(user=owner, space_id=team.public_id, name=" Lab notes ")

    assert Space.objects.get(pk=team.pk).name == "Lab notes"
    assert activity_for_owner(owner).first().detail == {
        "via": "command line",
        "space": "Lab notes",
        "space_id": str(team.public_id),
        "was": "Research",
    }


def test_renaming_to_another_case_of_its_own_name_is_allowed_and_to_the_same_name_is_no_change(team, owner):
    space_rename(user=owner, space_id=team.public_id, name="Research")
    space_rename(user=owner, space_id=team.public_id, name="RESEARCH")

    assert Space.objects.get(pk=team.pk).name == "RESEARCH"
    assert actions(owner) == ["space_renamed", "space_created"]


def test_a_space_cannot_be_renamed_to_the_name_of_another_of_the_users_spaces(team, owner):
    other = team_space_create(user=owner, name="Lab")

    for name in ("research", "Personal", "\n"):
        with pytest.raises(ValidationError):
            space_rename(user=owner, space_id=other.public_id, name=name)
    assert Space.objects.get(pk=other.pk).name == "Lab"


def test_a_personal_space_cannot_be_renamed_left_shared_or_deleted(owner):
    personal = personal_space_of(owner).public_id

    with pytest.raises(ValidationError, match="always called “Personal”"):
        space_rename(user=owner, space_id=personal, name="Mine")
    with pytest.raises(ValidationError, match="goes only with your account"):
        space_delete(user=owner, space_id=personal, confirm_name="Personal")
    with pytest.raises(ValidationError, match="goes only with your account"):
        space_leave(user=owner, space_id=personal)
    with pytest.raises(ValidationError, match="yours alone"):
        space_invitation_create(user=owner, space_id=personal, role="editor")
    with pytest.raises(ValidationError, match="last owner"):
        member_role_change(user=owner, space_id=personal, member="owner", role="admin")

    assert role_of(personal_space_of(owner), owner) == Role.OWNER and personal_space_of(owner).name == "Personal"


@pytest.mark.parametrize("typed", ["research", "Research ", "", None])
def test_deleting_needs_the_name_typed_exactly(team, owner, typed):
    with pytest.raises(ValidationError, match="type the space's name exactly, “Research”") as refusal:
        space_delete(user=owner, space_id=team.public_id, confirm_name=typed)

    assert refusal.value.field == "confirm_name"
    assert Space.objects.filter(pk=team.pk).exists()


def test_deleting_a_space_deletes_everything_it_holds_and_nothing_else(team, members, owner):
    now = timezone.now()
    Memory.objects.create(space=team, author=owner, content="in the team", created_at=now, updated_at=now)
    kept = Memory.objects.create(
        space=personal_space_of(owner), author=owner, content="my own", created_at=now, updated_at=now
    )
    space_invitation_create(user=owner, space_id=team.public_id, role="viewer")

    space_delete(user=owner, space_id=team.public_id, confirm_name="Research")

    assert not Space.objects.filter(pk=team.pk).exists()
    assert not Membership.objects.filter(space_id=team.pk).exists()
    assert not SpaceInvitation.objects.exists()
    assert list(Memory.objects.all()) == [kept]
    assert activity_for_owner(owner).first().detail == {
        "via": "command line",
        "space": "Research",
        "space_id": str(team.public_id),
    }
    with pytest.raises(NotFound):
        space_members(user=members[Role.ADMIN], space_id=team.public_id)


# Roles, removal, leaving and handing over


def test_an_owner_changes_a_role_and_the_log_says_from_what_to_what(team, members, owner):
    member_role_change(user=owner, space_id=team.public_id, member="editor", role="viewer")
    member_role_change(user=owner, space_id=team.public_id, member="editor", role="viewer")

    assert role_of(team, members[Role.EDITOR]) == Role.VIEWER
    assert actions(owner) == ["role_changed", "space_created"]
    detail = activity_for_owner(owner).first().detail
    assert (detail["member"], detail["role"], detail["was"]) == ("editor", "viewer", "editor")


def test_a_role_change_needs_a_known_role_and_a_member(team, members, owner, stranger):
    with pytest.raises(ValidationError, match="must be one of owner, admin, editor, viewer"):
        member_role_change(user=owner, space_id=team.public_id, member="editor", role="boss")
    with pytest.raises(NotFound, match="No member 'stranger' in this space"):
        member_role_change(user=owner, space_id=team.public_id, member="stranger", role="viewer")

    assert role_of(team, members[Role.EDITOR]) == Role.EDITOR and role_of(team, stranger) is None


def test_the_last_owner_cannot_step_down_but_one_of_two_owners_can(team, members, owner):
    with pytest.raises(ValidationError, match="owner is the space's last owner: hand the space over"):
        member_role_change(user=owner, space_id=team.public_id, member="owner", role="admin")

    member_role_change(user=owner, space_id=team.public_id, member="admin", role="owner")
    member_role_change(user=owner, space_id=team.public_id, member="owner", role="admin")

    assert (role_of(team, owner), role_of(team, members[Role.ADMIN])) == ("admin", "owner")


def test_an_owner_removes_another_owner_but_nobody_removes_themselves(team, members, owner):
    member_role_change(user=owner, space_id=team.public_id, member="admin", role="owner")

    member_remove(user=owner, space_id=team.public_id, member="admin")
    with pytest.raises(ValidationError, match="leave the space instead"):
        member_remove(user=owner, space_id=team.public_id, member="owner")

    assert (role_of(team, members[Role.ADMIN]), role_of(team, owner)) == (None, "owner")


def test_a_removed_member_no_longer_finds_the_space(team, members, owner):
    member_remove(user=owner, space_id=team.public_id, member="viewer")

    with pytest.raises(NotFound):
        space_members(user=members[Role.VIEWER], space_id=team.public_id)
    assert activity_for_owner(owner).first().detail["member"] == "viewer"


def test_a_member_leaves_and_no_longer_finds_the_space(team, members):
    editor = members[Role.EDITOR]

    space_leave(user=editor, space_id=team.public_id)

    assert role_of(team, editor) is None
    assert actions(editor) == ["space_left"]
    with pytest.raises(NotFound):
        space_leave(user=editor, space_id=team.public_id)


def test_the_last_owner_cannot_leave_until_another_owns_the_space(team, members, owner):
    with pytest.raises(ValidationError, match="last owner of “Research”: hand it over to another member first"):
        space_leave(user=owner, space_id=team.public_id)

    space_hand_over(user=owner, space_id=team.public_id, to="editor")
    space_leave(user=owner, space_id=team.public_id)

    assert role_of(team, owner) is None and role_of(team, members[Role.EDITOR]) == Role.OWNER


def test_handing_over_makes_the_member_owner_and_the_owner_an_admin(team, members, owner):
    space_hand_over(user=owner, space_id=team.public_id, to="viewer")

    assert (role_of(team, members[Role.VIEWER]), role_of(team, owner)) == ("owner", "admin")
    assert activity_for_owner(owner).first().detail["to"] == "viewer"
    with pytest.raises(PermissionDenied):
        space_delete(user=owner, space_id=team.public_id, confirm_name="Research")


def test_a_space_is_handed_over_only_to_another_member(team, members, owner, stranger):
    with pytest.raises(ValidationError, match="own the space already"):
        space_hand_over(user=owner, space_id=team.public_id, to="owner")
    with pytest.raises(NotFound, match="No member 'stranger'"):
        space_hand_over(user=owner, space_id=team.public_id, to="stranger")
    with pytest.raises(ValidationError) as refusal:
        space_hand_over(user=owner, space_id=team.public_id, to=None)

    assert refusal.value.field == "to"
    assert role_of(team, owner) == Role.OWNER


@pytest.mark.django_db(transaction=True)
def test_two_owners_leaving_at_once_leave_the_space_one_owner():
    first, second = make_user("first"), make_user("second")
    space = team_space_create(user=first, name="Research")
    Membership.objects.create(space=space, user=second, role=Role.OWNER)
    start, outcomes = threading.Barrier(2), []

    def leave(user) -> None:
        start.wait()
        try:
            space_leave(user=user, space_id=space.public_id)
            outcomes.append("left")
        except ValidationError:
            outcomes.append("refused")
        finally:
            connection.close()

    run_at_once(leave, 2, args=[(first,), (second,)])

    assert sorted(outcomes) == ["left", "refused"]
    assert Membership.objects.filter(space=space, role=Role.OWNER).count() == 1


# Invitations


def test_an_invitation_link_lets_someone_join_with_its_role(team, owner, stranger):
    issued = space_invitation_create(user=owner, space_id=team.public_id, role="editor")

    joined = space_invitation_accept(user=stranger, secret=issued.secret)

    assert (joined.space, joined.user, joined.role) == (team, stranger, "editor")
    assert issued.secret.startswith("spi_") and issued.secret not in issued.invitation.digest
    assert not SpaceInvitation.objects.filter(digest__contains=issued.secret[4:]).exists()
    assert issued.url("https://memory.example.org/") == f"https://memory.example.org/spaces/join/{issued.secret}/"
    invitation = SpaceInvitation.objects.get(pk=issued.invitation.pk)
    assert (invitation.used_by, invitation.created_by) == (stranger, owner) and invitation.used_at is not None
    assert actions(stranger) == ["invitation_used"]
    assert actions(owner) == ["member_added", "invitation_made", "space_created"]
    added = activity_for_owner(owner).first()
    assert added.detail == {
        "via": "invitation link",
        "space": "Research",
        "space_id": str(team.public_id),
        "member": "stranger",
        "role": "editor",
    }
    assert added.ip is None


def test_an_invitation_lasts_the_days_asked_within_a_month(team, owner):
    issued = space_invitation_create(user=owner, space_id=team.public_id, role="viewer", days=30)
    assert issued.invitation.expires_at - issued.invitation.created_at == pytest.approx(
        timedelta(days=30), abs=timedelta(seconds=1)
    )

    for days in (0, 31, True, "7", None):
        with pytest.raises(ValidationError, match="1 to 30 days"):
            space_invitation_create(user=owner, space_id=team.public_id, role="viewer", days=days)


@pytest.mark.parametrize(("role", "problem"), [("owner", "hand the space over"), ("boss", "admin, editor, viewer")])
def test_an_invitation_makes_an_admin_editor_or_viewer_only(team, owner, role, problem):
    with pytest.raises(ValidationError, match=problem):
        space_invitation_create(user=owner, space_id=team.public_id, role=role)

    assert not SpaceInvitation.objects.exists()


def test_an_invitation_works_once(team, owner, stranger):
    issued = space_invitation_create(user=owner, space_id=team.public_id, role="viewer")
    space_invitation_accept(user=stranger, secret=issued.secret)

    with pytest.raises(ValidationError, match="used already") as refusal:
        space_invitation_accept(user=make_user("late"), secret=issued.secret)

    assert "Research" not in str(refusal.value)
    assert Membership.objects.filter(space=team).count() == 2


def test_an_expired_invitation_is_refused_naming_its_date_not_its_space(team, owner, stranger):
    issued = space_invitation_create(user=owner, space_id=team.public_id, role="viewer")
    yesterday = timezone.now() - timedelta(days=1)
    SpaceInvitation.objects.filter(pk=issued.invitation.pk).update(expires_at=yesterday)

    with pytest.raises(ValidationError, match=f"expired on {yesterday:%Y-%m-%d}") as refusal:
        space_invitation_accept(user=stranger, secret=issued.secret)

    assert "Research" not in str(refusal.value) and role_of(team, stranger) is None


def test_a_withdrawn_invitation_is_refused(team, members, stranger):
    admin = members[Role.ADMIN]
    issued = space_invitation_create(user=admin, space_id=team.public_id, role="viewer")

    revoked = space_invitation_revoke(user=admin, space_id=team.public_id, invitation_id=issued.invitation.public_id)
    space_invitation_revoke(user=admin, space_id=team.public_id, invitation_id=issued.invitation.public_id)

    assert revoked.revoked_at is not None
    assert actions(admin) == ["invitation_revoked", "invitation_made"]
    with pytest.raises(ValidationError, match="withdrawn") as refusal:
        space_invitation_accept(user=stranger, secret=issued.secret)
    assert "Research" not in str(refusal.value) and role_of(team, stranger) is None


@pytest.mark.parametrize("secret", ["spi_" + "x" * 43, "inv_abc", "", None, "spi_" + "x" * 200, 42])
def test_a_link_of_no_invitation_is_not_found(team, stranger, secret):
    with pytest.raises(NotFound, match="No invitation has this link"):
        space_invitation_accept(user=stranger, secret=secret)


def test_a_member_opening_an_invitation_is_told_so_and_leaves_it_for_someone_else(team, members, owner, stranger):
    issued = space_invitation_create(user=owner, space_id=team.public_id, role="admin")

    with pytest.raises(ValidationError, match="already a member of “Research”"):
        space_invitation_accept(user=members[Role.VIEWER], secret=issued.secret)

    assert role_of(team, members[Role.VIEWER]) == Role.VIEWER
    assert space_invitation_accept(user=stranger, secret=issued.secret).role == Role.ADMIN


def test_the_invitations_list_shows_only_those_still_usable(team, owner, stranger):
    def invite():
        return space_invitation_create(user=owner, space_id=team.public_id, role="viewer")

    used, withdrawn, expired, open_ = invite(), invite(), invite(), invite()
    space_invitation_accept(user=stranger, secret=used.secret)
    space_invitation_revoke(user=owner, space_id=team.public_id, invitation_id=withdrawn.invitation.public_id)
    SpaceInvitation.objects.filter(pk=expired.invitation.pk).update(expires_at=timezone.now())

    assert list(space_invitations(user=owner, space_id=team.public_id)) == [open_.invitation]


def test_a_used_invitation_or_one_of_another_space_cannot_be_withdrawn(team, owner, stranger):
    used = space_invitation_create(user=owner, space_id=team.public_id, role="viewer")
    space_invitation_accept(user=stranger, secret=used.secret)
    other = team_space_create(user=owner, name="Lab")
    elsewhere = space_invitation_create(user=owner, space_id=other.public_id, role="viewer")

    with pytest.raises(ValidationError, match="remove the member who joined instead"):
        space_invitation_revoke(user=owner, space_id=team.public_id, invitation_id=used.invitation.public_id)
    with pytest.raises(NotFound, match="No invitation with id"):
        space_invitation_revoke(user=owner, space_id=team.public_id, invitation_id=elsewhere.invitation.public_id)

    assert SpaceInvitation.objects.get(pk=elsewhere.invitation.pk).revoked_at is None


def test_the_link_of_a_deleted_space_leads_nowhere(team, owner, stranger):
    issued = space_invitation_create(user=owner, space_id=team.public_id, role="viewer")
    space_delete(user=owner, space_id=team.public_id, confirm_name="Research")

    with pytest.raises(NotFound, match="No invitation has this link"):
        space_invitation_accept(user=stranger, secret=issued.secret)


@pytest.mark.django_db(transaction=True)
def test_of_many_people_opening_one_link_at_once_one_joins():
    owner = make_user("inviter")
    space = team_space_create(user=owner, name="Research")
    secret = space_invitation_create(user=owner, space_id=space.public_id, role="editor").secret
    people = [make_user(f"person{i}") for i in range(8)]
    start, outcomes = threading.Barrier(len(people)), []

    def accept(user) -> None:
        start.wait()
        try:
            space_invitation_accept(user=user, secret=secret)
            outcomes.append("joined")
        except ValidationError:
            outcomes.append("refused")
        finally:
            connection.close()

    run_at_once(accept, len(people), args=[(user,) for user in people])

    assert sorted(outcomes) == ["joined"] + ["refused"] * 7
    assert Membership.objects.filter(space=space).count() == 2


# The user's spaces


def test_a_users_spaces_come_personal_first_then_by_name_with_role_and_member_count(owner, stranger):
    zoo = team_space_create(user=stranger, name="zoo")
    alpha = team_space_create(user=owner, name="Alpha")
    beta = team_space_create(user=owner, name="beta")
    Membership.objects.create(space=zoo, user=owner, role=Role.VIEWER)
    Membership.objects.create(space=beta, user=stranger, role=Role.EDITOR)

    listed = [(s.space, s.role, s.member_count) for s in spaces_of(owner)]

    assert listed == [
        (personal_space_of(owner), "owner", 1),
        (alpha, "owner", 1),
        (beta, "owner", 2),
        (zoo, "viewer", 2),
    ]


def run_at_once(target: Callable, count: int, args: list[tuple] | None = None) -> None:
    threads = [threading.Thread(target=target, args=args[i] if args else ()) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
