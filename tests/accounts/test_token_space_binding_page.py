"""The Tokens page binds a new token to all the user's spaces or to those ticked, with a default write
space, and lists each token's spaces; a choice naming a space the user is not a member of makes no
token, and a token bound to spaces that are gone reaches nothing."""

import json
import re

import pytest
from django.test import Client

from accounts.models import ApiToken, Membership, Role, Space
from accounts.reach import token_reach
from accounts.spaces import member_remove, personal_space_of, space_delete, team_space_create
from memories import services
from memories.models import Memory
from tests.memories.stored import matching

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(lead, owner) -> Space:
    """A team space the owner edits, led by someone else."""
    space = team_space_create(user=lead, name="Platform")
    Membership.objects.create(space=space, user=owner, role=Role.EDITOR)
    return space


def create(browser: Client, **fields):
    return browser.post("/tokens/", {"name": "laptop", "scope": "write", **fields})


def issued_secret(response) -> str:
    assert response.status_code == 200, response.content
    return re.search(r'<code id="new-token">([^<]+)</code>', response.content.decode()).group(1)


def token_row(page: str, name: str) -> str:
    tokens = page[page.index("<h2>Your tokens</h2>") : page.index("<h2>Connected applications</h2>")]
    start = tokens.index(f"<td>{name}</td>")
    return tokens[start : tokens.index("</tr>", start)]


def api_write(secret: str, content: str, **fields: str):
    body = json.dumps({"content": content, **fields})
    return Client(headers={"Authorization": f"Bearer {secret}"}).post(
        "/api/v1/memories", body, content_type="application/json"
    )


def test_the_form_offers_all_spaces_or_those_ticked_and_a_default(owner_client, owner, team):
    for path in ("/tokens/", "/connect/"):
        page = owner_client.get(path).content.decode()

        assert '<input type="radio" name="reach" value="all" checked>' in page
        assert f'name="spaces" value="{personal_space_of(owner).public_id}"' in page
        assert f'name="spaces" value="{team.public_id}"' in page
        assert f'<option value="{team.public_id}">Platform</option>' in page


def test_a_user_of_one_space_is_not_asked(owner_client):
    assert 'name="reach"' not in owner_client.get("/tokens/").content.decode()


def test_a_token_for_all_spaces_reaches_those_joined_later_too(owner_client, owner, team):
    secret = issued_secret(create(owner_client, reach="all"))
    team_space_create(user=owner, name="Later")

    token = ApiToken.objects.get(owner=owner)
    assert token.all_spaces and not token.spaces.exists()
    assert [space.name for space in token_reach(token).spaces] == ["Personal", "Later", "Platform"]
    row = token_row(owner_client.get("/tokens/").content.decode(), "laptop")
    assert '<td class="token-spaces">all spaces</td>' in row
    assert '<td class="token-default-space">Personal</td>' in row
    assert secret.startswith("gno_")


def test_a_token_bound_to_the_team_reaches_it_alone_and_writes_there(owner_client, owner, team):
    secret = issued_secret(create(owner_client, reach="chosen", spaces=[str(team.public_id)]))

    reach = token_reach(ApiToken.objects.get(owner=owner))
    assert [space.name for space in reach.spaces] == ["Platform"] and reach.default_space_id == team.pk
    written = api_write(secret, "The retro is on Fridays.")
    assert Memory.objects.get(public_id=written.json()["id"]).space_id == team.pk
    assert api_write(secret, "Sneak in.", space="Personal").status_code == 404
    row = token_row(owner_client.get("/tokens/").content.decode(), "laptop")
    assert '<td class="token-spaces">Platform</td>' in row
    assert '<td class="token-default-space">Platform</td>' in row


def test_the_default_chosen_takes_the_writes_that_name_no_space(owner_client, owner, team):
    personal = personal_space_of(owner)
    spaces = [str(personal.public_id), str(team.public_id)]
    secret = issued_secret(create(owner_client, reach="chosen", spaces=spaces, default_space=str(team.public_id)))

    assert Memory.objects.get(public_id=api_write(secret, "Team first.").json()["id"]).space_id == team.pk
    row = token_row(owner_client.get("/tokens/").content.decode(), "laptop")
    assert '<td class="token-spaces">Personal, Platform</td>' in row
    assert '<td class="token-default-space">Platform</td>' in row


def test_a_read_token_is_listed_as_writing_nowhere(owner_client, team):
    issued_secret(create(owner_client, scope="read", reach="chosen", spaces=[str(team.public_id)]))

    row = token_row(owner_client.get("/tokens/").content.decode(), "laptop")
    assert '<td class="token-default-space"><span class="muted">—</span></td>' in row


@pytest.mark.parametrize(
    "fields, says",
    [
        ({"reach": "chosen"}, "tick at least one space"),
        ({"reach": "chosen", "spaces": "00000000-0000-4000-8000-000000000000"}, "No space"),
        ({"reach": "all", "default_space": "00000000-0000-4000-8000-000000000000"}, "No space"),
    ],
)
def test_a_choice_naming_no_space_of_the_user_makes_no_token(owner_client, owner, team, fields, says):
    response = create(owner_client, **fields)

    assert response.status_code == 400 and says in response.content.decode()
    assert not ApiToken.objects.filter(owner=owner).exists()


def test_a_form_naming_a_strangers_space_makes_no_token_and_names_nothing_of_it(owner_client, owner, stranger, team):
    theirs = team_space_create(user=stranger, name="Theirs")

    for fields in (
        {"reach": "chosen", "spaces": str(theirs.public_id)},
        {"reach": "chosen", "spaces": [str(team.public_id), str(theirs.public_id)]},
        {"reach": "chosen", "spaces": str(personal_space_of(stranger).public_id)},
        {"reach": "all", "default_space": str(theirs.public_id)},
    ):
        response = create(owner_client, **fields)

        page = response.content.decode()
        assert response.status_code == 400 and "No space" in page and "Theirs" not in page
    assert not ApiToken.objects.filter(owner=owner).exists()


def test_a_default_outside_the_spaces_ticked_is_refused(owner_client, owner, team):
    fields = {"spaces": str(team.public_id), "default_space": str(personal_space_of(owner).public_id)}

    response = create(owner_client, reach="chosen", **fields)

    assert response.status_code == 400
    assert "must be one of the spaces the token is bound to" in response.content.decode()
    assert not ApiToken.objects.filter(owner=owner).exists()


def test_a_refused_form_is_shown_back_as_it_was(owner_client, team):
    page = create(owner_client, name="ci runner", reach="chosen", default_space=str(team.public_id)).content.decode()

    assert 'value="ci runner"' in page
    assert '<input type="radio" name="reach" value="chosen" checked>' in page
    assert f'<option value="{team.public_id}" selected>Platform</option>' in page


def test_a_viewers_token_bound_to_the_team_reads_it_and_cannot_write_there(owner_client, owner, team):
    Membership.objects.filter(space=team, user=owner).update(role=Role.VIEWER)

    secret = issued_secret(create(owner_client, reach="chosen", spaces=[str(team.public_id)]))

    assert api_write(secret, "Anything.").status_code == 403
    assert matching(lambda content: content == "Anything.") == []


def test_a_token_bound_to_a_space_later_deleted_reaches_nothing_rather_than_everything(owner_client, owner, lead, team):
    services.memory_write(owner=owner, content="My salary review is in March.")
    secret = issued_secret(create(owner_client, reach="chosen", spaces=[str(team.public_id)]))

    space_delete(user=lead, space_id=team.public_id, confirm_name="Platform")

    assert token_reach(ApiToken.objects.get(owner=owner)).spaces == ()
    api = Client(headers={"Authorization": f"Bearer {secret}"})
    assert api.get("/api/v1/memories").json()["memories"] == []
    assert api_write(secret, "Anything.").status_code == 404
    row = token_row(owner_client.get("/tokens/").content.decode(), "laptop")
    assert '<td class="token-spaces"><span class="muted">none left</span></td>' in row


def test_a_token_bound_to_a_space_the_user_was_removed_from_reaches_nothing(owner_client, owner, lead, team):
    secret = issued_secret(create(owner_client, reach="chosen", spaces=[str(team.public_id)]))

    member_remove(user=lead, space_id=team.public_id, member=owner.username)

    assert token_reach(ApiToken.objects.get(owner=owner)).spaces == ()
    assert api_write(secret, "Still here?").status_code == 404


def test_another_user_sees_none_of_the_owners_tokens_or_spaces(owner_client, stranger_client, team):
    issued_secret(create(owner_client, name="owner only", reach="chosen", spaces=[str(team.public_id)]))

    page = stranger_client.get("/tokens/").content.decode()

    assert "owner only" not in page and "Platform" not in page
