"""The Spaces pages: the list, one space with its members and invitations, and the invitation link."""

import json
import re
import uuid
from datetime import timedelta
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import Membership, Role, Space, SpaceInvitation
from accounts.spaces import member_remove, personal_space_of, space_invitation_create, team_space_create
from memories.models import Memory
from memories.services import memory_write
from tests.accounts.email_confirmation import PASSWORD, confirm

pytestmark = pytest.mark.django_db


def make_user(username: str, **fields):
    return get_user_model().objects.create_user(username=username, email=f"{username}@example.com", **fields)


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def role_of(space: Space, user) -> str | None:
    return Membership.objects.filter(space=space, user=user).values_list("role", flat=True).first()


def text(response) -> str:
    return response.content.decode()


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


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


def space_url(space: Space, name: str = "space", *args) -> str:
    return reverse(name, args=[space.public_id, *args])


def post(client: Client, space: Space, name: str, data: dict | None = None, *args):
    return client.post(space_url(space, name, *args), data or {}, follow=True)


# The POST actions of a space's page, with a form that would be accepted from its owner.
ACTIONS = {
    "space_rename": {"name": "Renamed"},
    "space_delete": {"confirm_name": "Research"},
    "space_leave": {},
    "space_hand_over": {"to": "admin"},
    "space_member_role": {"member": "viewer", "role": "editor"},
    "space_member_remove": {"member": "viewer"},
    "space_invitation_create": {"role": "editor", "days": "7"},
}


# The list of spaces


def test_the_spaces_page_lists_each_space_with_kind_role_members_and_memories(owner, team, members):
    memory_write(owner=owner, content="The lab's freezer is set to -80 °C.", space="Research")
    memory_write(owner=owner, content="Buy oat milk.")
    memory_write(owner=owner, content="Oat milk is bought.")

    page = text(signed_in(owner).get(reverse("spaces")))

    rows = re.findall(r"<tr>\s*<td><a href=\"([^\"]+)\">([^<]+)</a></td>\s*" + r"<td>([^<]*)</td>\s*" * 4, page)
    assert rows == [
        (space_url(personal_space_of(owner)), "Personal", "personal", "owner", "1", "2"),
        (space_url(team), "Research", "team", "owner", "4", "1"),
    ]
    viewer_page = text(signed_in(members[Role.VIEWER]).get(reverse("spaces")))
    assert re.search(r">Research</a></td>\s*<td>team</td>\s*<td>viewer</td>\s*<td>4</td>\s*<td>1</td>", viewer_page)


def test_the_navigation_leads_to_spaces_between_notes_and_tokens(owner_client):
    page = text(owner_client.get(reverse("spaces")))
    nav = page.split("<nav>")[1].split("</nav>")[0]
    assert nav.index(">Notes</a>") < nav.index(f'<a href="{reverse("spaces")}">Spaces</a>') < nav.index(">Tokens</a>")


def test_making_a_team_space_opens_it_with_you_as_its_owner(owner, owner_client):
    response = owner_client.post(reverse("spaces"), {"name": "  Platform  "}, follow=True)

    space = Space.objects.get(name="Platform")
    assert response.redirect_chain == [(space_url(space), 302)]
    assert role_of(space, owner) == Role.OWNER
    assert messages_of(response) == ["“Platform” is made, with you as its owner: invite its members below."]


@pytest.mark.parametrize(
    ("name", "refusal"),
    [
        ("", "Give the space a name of 1-100 characters"),
        ("personal", "“Personal” is the name of everyone's own space"),
        ("research", "You already belong to a space called “research”"),
    ],
)
def test_a_refused_name_is_shown_and_makes_nothing(owner_client, team, name, refusal):
    response = owner_client.post(reverse("spaces"), {"name": name})

    assert response.status_code == 400
    assert refusal in messages_of(response)[0]
    assert Space.objects.filter(kind="team").count() == 1
    assert f'value="{name}"' in text(response)


@pytest.mark.parametrize(
    ("policy", "is_staff", "reason"),
    [
        ("off", True, "On this server nobody may make team spaces; ask its operator."),
        ("staff", False, "On this server only staff may make team spaces; ask its operator."),
    ],
)
def test_when_the_operator_forbids_team_spaces_the_form_gives_way_to_the_reason(
    settings, owner, owner_client, policy, is_staff, reason
):
    settings.GNOSEM_TEAM_SPACES = policy
    owner.is_staff = is_staff
    owner.save()

    page = text(owner_client.get(reverse("spaces")))
    assert reason in page and 'name="name"' not in page
    response = owner_client.post(reverse("spaces"), {"name": "Platform"})
    assert response.status_code == 400 and messages_of(response) == [reason]
    assert not Space.objects.filter(kind="team").exists()


def test_staff_may_make_team_spaces_when_the_policy_is_staff(settings, owner, owner_client):
    settings.GNOSEM_TEAM_SPACES = "staff"
    owner.is_staff = True
    owner.save()

    assert 'name="name"' in text(owner_client.get(reverse("spaces")))
    owner_client.post(reverse("spaces"), {"name": "Platform"})
    assert Space.objects.filter(name="Platform").exists()


# One space: what each role sees


def test_the_owner_sees_every_section_and_the_export_before_deleting(owner, team, members):
    page = text(signed_in(owner).get(space_url(team)))

    for member in ("owner", "admin", "editor", "viewer"):
        assert f"<td>{member}" in page
    for action in ACTIONS:
        assert f'action="{space_url(team, action)}"' in page, action
    export = f'href="{reverse("export")}?space={team.public_id}"'
    assert page.index(export) < page.index(f'action="{space_url(team, "space_delete")}"')
    assert '<option value="owner"' in page  # owners may make owners


def test_an_admin_manages_members_and_invitations_but_not_ownership(team, members):
    page = text(signed_in(members[Role.ADMIN]).get(space_url(team)))

    managing = ("space_member_role", "space_member_remove", "space_invitation_create", "space_rename", "space_leave")
    for action in managing:
        assert f'action="{space_url(team, action)}"' in page, action
    for action in ("space_hand_over", "space_delete"):
        assert f'action="{space_url(team, action)}"' not in page, action
    assert '<option value="owner"' not in page
    # The owner's row offers the admin nothing to change.
    owner_row = page.split("<td>owner<")[1].split("</tr>")[0]
    assert "<form" not in owner_row


@pytest.mark.parametrize("role", [Role.EDITOR, Role.VIEWER])
def test_editors_and_viewers_see_the_members_and_may_only_leave(team, members, role):
    page = text(signed_in(members[role]).get(space_url(team)))

    assert all(f"<td>{member}" in page for member in ("owner", "admin", "editor", "viewer"))
    forms = re.findall(r'<form method="post" action="([^"]+)"', page)
    assert [url for url in forms if url.startswith(reverse("spaces"))] == [space_url(team, "space_leave")]
    assert f"{reverse('export')}?space=" not in page


def test_a_personal_space_shows_only_itself_and_its_key(owner, owner_client):
    personal = personal_space_of(owner)
    memory_write(owner=owner, content="Buy oat milk.")

    page = text(owner_client.get(space_url(personal)))

    assert "Your personal space is yours alone" in page and "holding 1 memory" in page
    forms = re.findall(r'<form method="post" action="([^"]+)"', page)
    assert [url for url in forms if url.startswith(reverse("spaces"))] == [space_url(personal, "space_key_rotate")]
    assert f'href="{reverse("export")}?space={personal.public_id}"' in page


# One space: every action works and says so


def test_the_owner_renames_the_space(owner, team):
    response = post(signed_in(owner), team, "space_rename", {"name": "Lab"})

    assert messages_of(response) == ["The space is called “Lab” now."]
    team.refresh_from_db()
    assert team.name == "Lab" and "<h1>Lab</h1>" in text(response)


def test_an_admin_changes_a_role_and_removes_a_member(team, members):
    admin = signed_in(members[Role.ADMIN])

    response = post(admin, team, "space_member_role", {"member": "viewer", "role": "editor"})
    assert messages_of(response) == ["viewer's role is editor now."]
    assert role_of(team, members[Role.VIEWER]) == Role.EDITOR

    response = post(admin, team, "space_member_remove", {"member": "viewer"})
    assert messages_of(response) == ["viewer is no longer a member: their next request reaches nothing in “Research”."]
    assert role_of(team, members[Role.VIEWER]) is None


def test_the_owner_hands_the_space_over_and_becomes_an_admin(owner, team, members):
    response = post(signed_in(owner), team, "space_hand_over", {"to": "editor"})

    assert messages_of(response) == ["editor owns “Research” now; you are one of its admins."]
    assert (role_of(team, members[Role.EDITOR]), role_of(team, owner)) == (Role.OWNER, Role.ADMIN)
    assert f'action="{space_url(team, "space_delete")}"' not in text(response)


def test_a_member_leaves_and_the_space_is_gone_from_their_pages(team, members):
    editor = signed_in(members[Role.EDITOR])

    response = post(editor, team, "space_leave")

    assert response.redirect_chain == [(reverse("spaces"), 302)]
    assert messages_of(response) == ["You left “Research”: nothing in it is within your reach any more."]
    assert role_of(team, members[Role.EDITOR]) is None and ">Research</a>" not in text(response)
    assert editor.get(space_url(team)).status_code == 404


def test_the_owner_deletes_the_space_typing_its_name(owner, team, members):
    memory_write(owner=owner, content="The lab's freezer is set to -80 °C.", space="Research")

    response = post(signed_in(owner), team, "space_delete", {"confirm_name": "Research"})

    assert response.redirect_chain == [(reverse("spaces"), 302)]
    assert messages_of(response) == ["“Research” is deleted, with everything it held."]
    assert not Space.objects.filter(pk=team.pk).exists()
    assert not Memory.objects.filter(space_id=team.pk).exists()


def test_an_invitation_link_is_shown_once_and_lets_one_person_in(owner, team):
    owner_client = signed_in(owner)
    response = owner_client.post(space_url(team, "space_invitation_create"), {"role": "viewer", "days": "3"})

    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    url = re.search(r'<code id="invitation-url">([^<]+)</code>', text(response)).group(1)
    assert url.startswith("http://testserver/spaces/join/spi_")
    invitation = SpaceInvitation.objects.get(space=team)
    assert invitation.role == Role.VIEWER
    assert timedelta(days=2, hours=23) < invitation.expires_at - timezone.now() <= timedelta(days=3)
    # Shown once: the page lists the open invitation, not its link.
    again = text(owner_client.get(space_url(team)))
    assert url not in again and "spi_" not in again
    assert f'action="{space_url(team, "space_invitation_revoke", invitation.public_id)}"' in again

    joiner = make_user("joiner")
    signed_in(joiner).post(url.removeprefix("http://testserver"))
    assert role_of(team, joiner) == Role.VIEWER


def test_withdrawing_an_invitation_stops_its_link(owner, team, stranger):
    issued = space_invitation_create(user=owner, space_id=team.public_id, role="editor")

    response = post(signed_in(owner), team, "space_invitation_revoke", None, issued.invitation.public_id)

    assert messages_of(response) == ["The invitation is withdrawn: its link no longer lets anyone in."]
    assert "No open invitations." in text(response)
    signed_in(stranger).post(reverse("space_join", args=[issued.secret]))
    assert role_of(team, stranger) is None


# One space: every refusal is shown, and changes nothing


@pytest.mark.parametrize(
    ("who", "action", "data", "refusal"),
    [
        ("admin", "space_member_role", {"member": "owner", "role": "admin"}, "owners may make an owner or change"),
        ("admin", "space_member_role", {"member": "viewer", "role": "owner"}, "owners may make an owner or change"),
        ("admin", "space_member_remove", {"member": "owner"}, "Only the space's owners may remove an owner"),
        ("admin", "space_hand_over", {"to": "editor"}, "Only the space's owners may hand it over; you are an admin."),
        ("admin", "space_delete", {"confirm_name": "Research"}, "Only the space's owners may delete it"),
        ("editor", "space_member_role", {"member": "viewer", "role": "editor"}, "Only the space's owners and admins"),
        ("editor", "space_member_remove", {"member": "viewer"}, "Only the space's owners and admins may remove"),
        ("editor", "space_invitation_create", {"role": "editor", "days": "7"}, "may invite people; you are an editor"),
        ("editor", "space_rename", {"name": "Mine"}, "Only the space's owners and admins may rename it"),
        ("viewer", "space_member_role", {"member": "viewer", "role": "admin"}, "Only the space's owners and admins"),
        ("viewer", "space_invitation_create", {"role": "viewer", "days": "7"}, "may invite people; you are a viewer"),
        ("viewer", "space_hand_over", {"to": "viewer"}, "Only the space's owners may hand it over"),
        ("owner", "space_leave", {}, "You are the last owner of “Research”: hand it over"),
        ("owner", "space_delete", {"confirm_name": "research"}, "Type the space's name exactly, “Research”"),
        ("owner", "space_member_role", {"member": "owner", "role": "admin"}, "is the space's last owner: hand"),
        ("owner", "space_member_role", {"member": "viewer", "role": "boss"}, "Must be one of owner, admin"),
        ("owner", "space_member_role", {"member": "nobody", "role": "admin"}, "No member 'nobody' in this space."),
        ("owner", "space_member_remove", {"member": "owner"}, "You cannot remove yourself: leave the space instead."),
        ("owner", "space_hand_over", {"to": "owner"}, "You own the space already"),
        ("owner", "space_rename", {"name": "Personal"}, "“Personal” is the name of everyone's own space"),
        ("owner", "space_invitation_create", {"role": "owner", "days": "7"}, "An invitation cannot make an owner"),
        ("owner", "space_invitation_create", {"role": "editor", "days": "31"}, "An invitation lasts 1 to 30 days."),
        ("owner", "space_invitation_create", {"role": "editor", "days": "0"}, "An invitation lasts 1 to 30 days."),
        ("owner", "space_invitation_create", {"role": "editor", "days": "a week"}, "An invitation lasts 1 to 30 days."),
    ],
)
def test_a_refusal_is_shown_on_the_page_and_changes_nothing(owner, team, members, who, action, data, refusal):
    user = owner if who == "owner" else members[who]
    before = sorted(Membership.objects.values_list("space_id", "user_id", "role"))

    response = post(signed_in(user), team, action, data)

    assert response.redirect_chain == [(space_url(team), 302)]
    assert len(messages_of(response)) == 1 and refusal in messages_of(response)[0], messages_of(response)
    assert 'class="error"' in text(response)
    assert sorted(Membership.objects.values_list("space_id", "user_id", "role")) == before
    assert Space.objects.get(pk=team.pk).name == "Research"
    assert not SpaceInvitation.objects.exists()


def test_an_editor_cannot_withdraw_an_invitation(owner, team, members):
    issued = space_invitation_create(user=owner, space_id=team.public_id, role="editor")

    response = post(signed_in(members[Role.EDITOR]), team, "space_invitation_revoke", None, issued.invitation.public_id)

    assert messages_of(response) == ["Only the space's owners and admins may withdraw invitations; you are an editor."]
    assert SpaceInvitation.objects.get().revoked_at is None


def test_an_invitation_of_another_space_cannot_be_withdrawn_from_this_one(owner, team, stranger):
    theirs = team_space_create(user=stranger, name="Theirs")
    issued = space_invitation_create(user=stranger, space_id=theirs.public_id, role="editor")

    response = post(signed_in(owner), team, "space_invitation_revoke", None, issued.invitation.public_id)

    assert messages_of(response) == [f"No invitation with id {issued.invitation.public_id} in this space."]
    assert SpaceInvitation.objects.get().revoked_at is None


@pytest.mark.parametrize(
    ("action", "refusal"),
    [
        ("space_rename", "Your personal space is always called “Personal”."),
        ("space_delete", "Your personal space goes only with your account."),
        ("space_leave", "Your personal space goes only with your account."),
        ("space_invitation_create", "A personal space is yours alone: make a team space to share memories."),
    ],
)
def test_a_personal_space_cannot_be_renamed_left_deleted_or_shared(owner, owner_client, action, refusal):
    personal = personal_space_of(owner)
    data = {"name": "Mine", "confirm_name": "Personal", "role": "editor", "days": "7"}

    response = post(owner_client, personal, action, data)

    assert messages_of(response) == [refusal]
    assert Space.objects.filter(pk=personal.pk, name="Personal").exists()
    assert not SpaceInvitation.objects.exists()


# Strangers


NO_INVITATION = uuid.UUID("00000000-0000-4000-8000-000000000000")


def every_url(space: Space) -> list[tuple[str, str]]:
    """(method, URL) of every page and action of a space."""
    return [
        ("get", space_url(space)),
        *[("post", space_url(space, action)) for action in ACTIONS],
        ("post", space_url(space, "space_invitation_revoke", NO_INVITATION)),
    ]


def test_a_non_member_gets_the_same_404_as_for_a_space_that_does_not_exist(owner, team, members, stranger):
    issued = space_invitation_create(user=owner, space_id=team.public_id, role="editor")
    nowhere = Space(public_id=uuid.uuid4())
    stranger_client = signed_in(stranger)
    answers = []

    for space in (team, nowhere):
        for method, url in every_url(space):
            data = ACTIONS.get(url.rsplit("/", 1)[-1], {})
            response = getattr(stranger_client, method)(url, data)
            answers.append((method, url.replace(str(space.public_id), "ID"), response.status_code, text(response)))
        revoke = space_url(space, "space_invitation_revoke", issued.invitation.public_id)
        response = stranger_client.post(revoke)
        answers.append(("post", "revoke", response.status_code, text(response)))

    half = len(answers) // 2
    assert answers[:half] == answers[half:]
    assert {status for _, _, status, _ in answers} == {404}
    assert "Research" not in "".join(page for *_, page in answers)
    assert Space.objects.get(pk=team.pk).name == "Research" and SpaceInvitation.objects.get().revoked_at is None
    assert sorted(Membership.objects.filter(space=team).values_list("role", flat=True)) == sorted(Role.values)


def test_a_removed_member_gets_404_on_every_url(owner, team, members):
    editor = signed_in(members[Role.EDITOR])
    assert editor.get(space_url(team)).status_code == 200

    member_remove(user=owner, space_id=team.public_id, member="editor")

    for method, url in every_url(team):
        assert getattr(editor, method)(url, ACTIONS.get(url.rsplit("/", 1)[-1], {})).status_code == 404, url
    assert ">Research</a>" not in text(editor.get(reverse("spaces")))


def test_signed_out_visitors_are_sent_to_sign_in(team):
    urls = [("get", reverse("spaces")), ("post", reverse("spaces")), *every_url(team)]
    for method, url in urls:
        response = getattr(Client(), method)(url)
        assert response.status_code == 302, url
        assert response["Location"] == f"{reverse('account_login')}?next={quote(url)}", url
    assert Space.objects.get(pk=team.pk).name == "Research"


def test_actions_need_a_post_with_the_csrf_token(owner, team, members):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)

    page = text(client.get(space_url(team)))
    forms = re.findall(r'<form method="post".*?</form>', page, re.DOTALL)
    assert len(forms) >= len(ACTIONS) and all("csrfmiddlewaretoken" in form for form in forms)
    assert "csrfmiddlewaretoken" in text(client.get(reverse("spaces")))

    for action, data in ACTIONS.items():
        assert client.get(space_url(team, action)).status_code == 405, action
        assert client.post(space_url(team, action), data).status_code == 403, action
    assert client.post(reverse("spaces"), {"name": "Platform"}).status_code == 403
    assert Space.objects.get(pk=team.pk).name == "Research" and Space.objects.filter(kind="team").count() == 1
    assert not SpaceInvitation.objects.exists()


# The export link


def test_the_export_link_downloads_that_space_whole_for_its_owners_and_admins_and_their_own_part_for_others(
    owner, team, members, stranger
):
    memory_write(owner=owner, content="The lab's freezer is set to -80 °C.", space="Research")
    memory_write(owner=members[Role.EDITOR], content="Order dry ice on Mondays.", space="Research")
    memory_write(owner=owner, content="Buy oat milk.")
    link = f"{reverse('export')}?space={team.public_id}"

    def exported(user) -> list[str]:
        response = signed_in(user).get(link)
        assert response.status_code == 200
        return [memory["content"] for memory in json.loads(b"".join(response.streaming_content))["memories"]]

    whole = ["The lab's freezer is set to -80 °C.", "Order dry ice on Mondays."]
    assert exported(owner) == exported(members[Role.ADMIN]) == whole
    assert exported(members[Role.EDITOR]) == ["Order dry ice on Mondays."]
    assert exported(members[Role.VIEWER]) == []
    not_member = signed_in(stranger).get(link)
    nowhere = signed_in(stranger).get(f"{reverse('export')}?space={uuid.uuid4()}")
    assert not_member.status_code == nowhere.status_code == 404
    assert text(not_member) == text(nowhere)


# The invitation link


@pytest.fixture
def invitation(owner, team):
    return space_invitation_create(user=owner, space_id=team.public_id, role="editor")


def test_the_link_names_the_space_and_role_and_accepting_joins(owner, team, invitation, stranger):
    client = signed_in(stranger)
    page = text(client.get(reverse("space_join", args=[invitation.secret])))
    assert "owner invites you" in page and "“Research”" in page and "<strong>editor</strong>" in page
    assert role_of(team, stranger) is None  # opening the link joins nobody

    response = client.post(reverse("space_join", args=[invitation.secret]), follow=True)

    assert response.redirect_chain == [(space_url(team), 302)]
    assert messages_of(response) == ["You joined “Research” as editor."]
    assert role_of(team, stranger) == Role.EDITOR


UNUSABLE = "This invitation has been used already: a link lets one person in. Ask whoever invited you for a new link."


def test_a_used_link_is_refused_without_naming_its_space(team, invitation, stranger):
    signed_in(stranger).post(reverse("space_join", args=[invitation.secret]))
    latecomer = signed_in(make_user("latecomer"))

    for method in ("get", "post"):
        response = getattr(latecomer, method)(reverse("space_join", args=[invitation.secret]))
        assert response.status_code == 400
        assert UNUSABLE in text(response) and "Research" not in text(response)
    assert role_of(team, get_user_model().objects.get(username="latecomer")) is None


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"expires_at": timezone.now() - timedelta(minutes=1)}, "This invitation expired on "),
        ({"revoked_at": timezone.now()}, "This invitation was withdrawn. Ask whoever invited you for a new link."),
    ],
)
def test_an_expired_or_withdrawn_link_is_refused_without_naming_its_space(team, invitation, stranger, change, refusal):
    SpaceInvitation.objects.filter(pk=invitation.invitation.pk).update(**change)
    client = signed_in(stranger)

    for method in ("get", "post"):
        response = getattr(client, method)(reverse("space_join", args=[invitation.secret]))
        assert response.status_code == 400
        assert refusal in text(response) and "Research" not in text(response)
    assert role_of(team, stranger) is None


@pytest.mark.parametrize("secret", ["spi_nothing", "nothing", "spi_" + "x" * 200])
def test_an_unknown_link_is_refused(stranger, secret):
    response = signed_in(stranger).get(reverse("space_join", args=[secret]))

    assert response.status_code == 400
    assert "No invitation has this link: check that it was copied whole, or ask for a new one." in text(response)


def test_a_member_opening_a_link_is_told_so_and_the_link_stays_unused(owner, team, invitation):
    response = signed_in(owner).post(reverse("space_join", args=[invitation.secret]))

    assert "You are already a member of “Research”; the link is left unused for someone else." in text(response)
    assert SpaceInvitation.objects.get().used_at is None


def test_a_signed_out_visitor_signs_in_and_lands_back_on_the_link(team, invitation):
    ada = make_user("ada", password=PASSWORD)
    link = reverse("space_join", args=[invitation.secret])
    client = Client()

    response = client.get(link)
    assert response["Location"] == f"{reverse('account_login')}?next={quote(link)}"
    login_page = text(client.get(response["Location"]))
    assert f"{reverse('account_signup')}?next={quote(link, safe='')}" in login_page  # sign-up keeps it too

    response = client.post(
        response["Location"], {"login": "ada@example.com", "password": PASSWORD, "next": link}, follow=True
    )
    assert response.redirect_chain[-1][0] == link and "“Research”" in text(response)
    client.post(link)
    assert role_of(team, ada) == Role.EDITOR


def test_a_visitor_who_signs_up_from_the_link_lands_back_on_it_once_confirmed(team, invitation):
    link = reverse("space_join", args=[invitation.secret])
    client = Client()
    client.post(
        f"{reverse('account_signup')}?next={quote(link)}",
        {"email": "new@example.com", "password1": PASSWORD, "password2": PASSWORD, "next": link},
    )

    response = confirm(client, "new@example.com")

    assert response.redirect_chain[-1][0] == link and "“Research”" in text(response)
    client.post(link)
    assert role_of(team, get_user_model().objects.get(email="new@example.com")) == Role.EDITOR
