"""The consent page chooses the spaces a connection reaches (all, or those ticked) and where it writes
by default; the choice rides with the grant to the code exchange, holds for every refreshed token,
and a space the user is not a member of grants nothing."""

import json

import pytest
from django.test import Client
from oauth2_provider.models import get_grant_model

from accounts.models import ApiToken, Membership, Role, Space
from accounts.spaces import member_remove, personal_space_of, space_delete, team_space_create
from memories import services
from memories.models import Memory
from tests.accounts.oauth.grants import Authorization, exchange, redirect_params, refresh, registered_client
from tests.memories.stored import matching

Grant = get_grant_model()


@pytest.fixture
def team(lead, owner) -> Space:
    """A team space the owner edits, led by someone else (who can remove the owner)."""
    space = team_space_create(user=lead, name="Platform")
    Membership.objects.create(space=space, user=owner, role=Role.EDITOR)
    return space


@pytest.fixture
def assistant(db):
    return registered_client("Claude")


class Connected:
    """A connection's tokens, used at the REST API the way an assistant uses them."""

    def __init__(self, tokens: dict, client) -> None:
        self.tokens, self.client = tokens, client

    def api(self) -> Client:
        return Client(headers={"Authorization": f"Bearer {self.tokens['access_token']}"})

    def spaces(self) -> list[str]:
        return [space["name"] for space in self.api().get("/api/v1/spaces").json()["spaces"]]

    def write(self, content: str, **fields: str):
        body = json.dumps({"content": content, **fields})
        return self.api().post("/api/v1/memories", body, content_type="application/json")

    def listed(self) -> list[str]:
        return [memory["content"] for memory in self.api().get("/api/v1/memories").json()["memories"]]

    def refreshed(self) -> "Connected":
        response = refresh(self.client, self.tokens["refresh_token"])
        assert response.status_code == 200, response.content
        return Connected(response.json(), self.client)


def answer(browser: Client, authorization: Authorization, **fields):
    """The consent page shown, then answered with Allow and these form fields."""
    assert browser.get(authorization.url).status_code == 200
    return browser.post(authorization.url, {"decision": "allow", **fields})


def connect(browser: Client, client, **fields) -> Connected:
    authorization = Authorization(client)
    code = redirect_params(answer(browser, authorization, **fields))["code"]
    response = exchange(authorization, code)
    assert response.status_code == 200, response.content
    return Connected(response.json(), client)


def test_the_consent_page_offers_all_spaces_or_those_ticked_and_the_default(owner_client, owner, assistant, team):
    page = owner_client.get(Authorization(assistant).url).content.decode()

    assert '<input type="radio" name="reach" value="all" checked>' in page
    assert f'name="spaces" value="{personal_space_of(owner).public_id}"' in page
    assert f'name="spaces" value="{team.public_id}"' in page
    assert f'<option value="{team.public_id}">Platform</option>' in page
    assert "(editor)" in page


def test_a_user_of_one_space_is_not_asked_and_the_connection_reaches_all_they_join(owner_client, owner, assistant):
    assert 'name="reach"' not in owner_client.get(Authorization(assistant).url).content.decode()

    connected = connect(owner_client, assistant)
    team_space_create(user=owner, name="Later")

    assert ApiToken.objects.get(oauth_client=assistant).all_spaces
    assert connected.spaces() == ["Personal", "Later"]


def test_a_connection_granted_only_the_team_sees_it_alone_and_writes_there_also_after_a_refresh(
    owner_client, owner, assistant, team
):
    services.memory_write(owner=owner, content="My salary review is in March.")
    services.memory_write(owner=owner, content="Deploys need two approvals.", space="Platform")

    connected = connect(owner_client, assistant, reach="chosen", spaces=[str(team.public_id)])

    for round in ("granted", "refreshed"):
        if round == "refreshed":
            connected = connected.refreshed()
        assert connected.spaces() == ["Platform"]
        listed = connected.listed()
        assert "Deploys need two approvals." in listed and "My salary review is in March." not in listed
        written = connected.write(f"The retro is on Fridays ({round}).")
        assert written.status_code == 201, written.content
        assert Memory.objects.get(public_id=written.json()["id"]).space_id == team.pk
        assert connected.write("Sneak into personal.", space="Personal").status_code == 404
    assert matching(lambda content: content == "Sneak into personal.") == []


def test_the_default_space_chosen_takes_the_writes_that_name_none(owner_client, owner, assistant, team):
    personal = personal_space_of(owner)
    connected = connect(
        owner_client,
        assistant,
        reach="chosen",
        spaces=[str(personal.public_id), str(team.public_id)],
        default_space=str(team.public_id),
    )

    assert connected.spaces() == ["Personal", "Platform"]
    written = connected.write("The team retro is on Fridays.")
    assert Memory.objects.get(public_id=written.json()["id"]).space_id == team.pk
    mine = connected.write("My dentist is on Tuesday.", space="Personal")
    assert Memory.objects.get(public_id=mine.json()["id"]).space_id == personal.pk


def test_all_spaces_with_a_team_default_writes_to_the_team(owner_client, assistant, team):
    connected = connect(owner_client, assistant, reach="all", default_space=str(team.public_id))

    assert connected.spaces() == ["Personal", "Platform"]
    assert Memory.objects.get(public_id=connected.write("Team first.").json()["id"]).space_id == team.pk


def test_a_read_only_connection_to_the_team_reads_it_and_writes_nothing(owner_client, owner, assistant, team):
    services.memory_write(owner=owner, content="Deploys need two approvals.", space="Platform")

    connected = connect(owner_client, assistant, reach="chosen", spaces=[str(team.public_id)], read_only="1")

    assert connected.listed() == ["Deploys need two approvals."]
    assert connected.write("Anything.").status_code == 403
    assert connected.write("Anything.", space="Platform").status_code == 403
    assert matching(lambda content: content == "Anything.") == []


def test_a_member_removed_from_the_team_has_a_connection_that_sees_nothing_there(
    owner_client, owner, lead, assistant, team
):
    services.memory_write(owner=owner, content="Deploys need two approvals.", space="Platform")
    connected = connect(owner_client, assistant, reach="chosen", spaces=[str(team.public_id)])

    member_remove(user=lead, space_id=team.public_id, member=owner.username)

    assert connected.spaces() == []
    assert connected.listed() == []
    assert connected.write("Still here?").status_code == 404


def test_a_team_deleted_before_the_code_is_exchanged_leaves_the_connection_reaching_nothing(
    owner_client, owner, lead, assistant, team
):
    services.memory_write(owner=owner, content="My salary review is in March.")
    authorization = Authorization(assistant)
    code = redirect_params(answer(owner_client, authorization, reach="chosen", spaces=[str(team.public_id)]))["code"]
    space_delete(user=lead, space_id=team.public_id, confirm_name="Platform")

    connected = Connected(exchange(authorization, code).json(), assistant)

    assert connected.spaces() == [] and connected.listed() == []


@pytest.mark.parametrize(
    "fields, says",
    [
        ({"reach": "chosen"}, "tick at least one space"),
        ({"reach": "chosen", "spaces": "not-a-space"}, "No space"),
        ({"reach": "all", "default_space": "00000000-0000-4000-8000-000000000000"}, "No space"),
    ],
)
def test_a_choice_that_names_no_space_of_the_user_grants_nothing(owner_client, assistant, team, fields, says):
    response = answer(owner_client, Authorization(assistant), **fields)

    assert response.status_code == 400
    assert says in response.content.decode()
    assert not Grant.objects.exists() and not ApiToken.objects.filter(oauth_client=assistant).exists()


def test_a_tampered_answer_naming_a_strangers_space_is_refused_like_a_missing_one(
    owner_client, stranger, assistant, team
):
    theirs = team_space_create(user=stranger, name="Theirs")
    authorization = Authorization(assistant)

    for fields in (
        {"reach": "chosen", "spaces": str(theirs.public_id)},
        {"reach": "chosen", "spaces": [str(team.public_id), str(theirs.public_id)]},
        {"reach": "chosen", "spaces": str(team.public_id), "default_space": str(theirs.public_id)},
        {"reach": "all", "default_space": str(theirs.public_id)},
    ):
        response = answer(owner_client, authorization, **fields)

        assert response.status_code == 400
        page = response.content.decode()
        assert f"No space &#x27;{theirs.public_id}&#x27;." in page
        assert "Theirs" not in page
    assert not Grant.objects.exists() and not ApiToken.objects.filter(oauth_client=assistant).exists()


def test_a_default_outside_the_spaces_ticked_is_refused(owner_client, owner, assistant, team):
    personal = personal_space_of(owner)
    fields = {"spaces": str(team.public_id), "default_space": str(personal.public_id)}

    response = answer(owner_client, Authorization(assistant), reach="chosen", **fields)

    assert response.status_code == 400
    assert "must be one of the spaces the token is bound to" in response.content.decode()
    assert not Grant.objects.exists()


def test_a_refused_choice_is_shown_back_as_it_was(owner_client, assistant, team):
    page = answer(owner_client, Authorization(assistant), reach="chosen", read_only="1").content.decode()

    assert '<input type="radio" name="reach" value="chosen" checked>' in page
    assert 'id="read_only" checked' in page


def test_deny_grants_nothing_whatever_spaces_it_names(owner_client, stranger, assistant, team):
    theirs = team_space_create(user=stranger, name="Theirs")
    authorization = Authorization(assistant)
    owner_client.get(authorization.url)

    response = owner_client.post(authorization.url, {"decision": "deny", "reach": "chosen", "spaces": theirs.public_id})

    assert redirect_params(response)["error"] == "access_denied"
    assert not Grant.objects.exists()


def test_a_client_cannot_slip_spaces_in_through_the_request(owner_client, owner, assistant, team):
    services.memory_write(owner=owner, content="My salary review is in March.")
    claims = json.dumps({"gnosem_spaces": {"spaces": None, "default_space": None}})
    authorization = Authorization(assistant, extra={"claims": claims})
    code = redirect_params(answer(owner_client, authorization, reach="chosen", spaces=str(team.public_id)))["code"]

    connected = Connected(exchange(authorization, code, claims=claims).json(), assistant)

    assert connected.spaces() == ["Platform"]


def test_the_tokens_page_shows_each_connections_spaces_and_default(owner_client, assistant, team):
    connect(owner_client, assistant, reach="chosen", spaces=[str(team.public_id)])
    connect(owner_client, registered_client("ChatGPT"))

    html = owner_client.get("/tokens/").content.decode()
    section = html[html.index('id="connected-applications"') : html.index("<h2>Create a token</h2>")]
    claude, chatgpt = section.index("Claude"), section.index("ChatGPT")
    claude_row = section[claude : section.index("</tr>", claude)]
    chatgpt_row = section[chatgpt : section.index("</tr>", chatgpt)]

    assert '<td class="token-spaces">Platform</td>' in claude_row
    assert '<td class="token-default-space">Platform</td>' in claude_row
    assert '<td class="token-spaces">all spaces</td>' in chatgpt_row
    assert '<td class="token-default-space">Personal</td>' in chatgpt_row
