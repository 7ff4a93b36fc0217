"""The space switcher of the memories, notes and entities pages: every space the user reaches, or the
one `space` names (by id or name), kept by the search forms, the pager and the links; a space the
user does not reach is a 404, exactly like one that does not exist."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import Membership, Role, Space
from accounts.spaces import member_remove, personal_space_of, team_space_create
from memories import services
from memories.notes import services as notes
from tests.memories.stored import notes_titled

PAGES = ("/", "/notes/", "/entities/")


@pytest.fixture
def team(lead, owner) -> Space:
    """A team space the owner may only read."""
    space = team_space_create(user=lead, name="Platform")
    Membership.objects.create(space=space, user=owner, role=Role.VIEWER)
    return space


@pytest.fixture
def written(owner, lead, team, write_indexed) -> None:
    """A memory and a note in the owner's personal space and in the team's, each naming a project."""
    write_indexed(owner, "Priya Raman reviews the Atlas budget; my salary review is in March.")
    write_indexed(lead, "Deploys of Borealis need two approvals from Kenji Sato.", space="Platform")
    notes.note_write(owner=owner, title="My runbook", content="Restart my laptop.", tags=["mine"])
    notes.note_write(owner=lead, title="Team runbook", content="Restart ci-7.", tags=["ops"], space="Platform")


def page_of(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_each_list_page_offers_all_spaces_then_each_by_name(owner_client, owner, team):
    for path in PAGES:
        page = page_of(owner_client.get(path))

        options = re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', page.split('class="space-switcher"')[1])
        assert options[:3] == [
            ("", "All spaces"),
            (str(personal_space_of(owner).public_id), "Personal"),
            (str(team.public_id), "Platform"),
        ]


def test_a_user_of_one_space_gets_no_switcher(owner_client):
    for path in PAGES:
        assert 'class="space-switcher"' not in page_of(owner_client.get(path))


def test_the_dashboard_lists_and_counts_the_chosen_space_only(owner_client, team, written):
    everything = page_of(owner_client.get("/"))
    team_only = page_of(owner_client.get("/", {"space": str(team.public_id)}))

    assert "salary review" in everything and "Borealis" in everything
    assert "Borealis" in team_only and "salary review" not in team_only
    assert '<div class="figure">1</div><div class="label">memories</div>' in team_only
    assert f'<option value="{team.public_id}" selected>Platform</option>' in team_only
    assert "<h1>Memories in Platform</h1>" in team_only


def test_a_space_is_named_by_its_id_or_its_name_in_any_case(owner_client, team, written):
    by_name = page_of(owner_client.get("/", {"space": "personal"}))

    assert "salary review" in by_name and "Borealis" not in by_name


def test_search_stays_in_the_chosen_space(owner_client, team, written):
    page = page_of(owner_client.get("/", {"space": "Platform", "q": "review approvals budget"}))

    assert "Borealis" in page and "salary review" not in page
    assert f'<input type="hidden" name="space" value="{team.public_id}">' in page
    assert f'href="/?space={team.public_id}">Clear</a>' in page


def test_the_pager_keeps_the_chosen_space(owner_client, owner, team, lead):
    for i in range(30):
        services.memory_write(owner=lead, content=f"team memory {i:02d}", space="Platform")
    services.memory_write(owner=owner, content="a personal memory")

    first = page_of(owner_client.get("/", {"space": str(team.public_id)}))
    older = re.search(r'href="\?([^"]*cursor=[^"]*)">Older', first).group(1).replace("&amp;", "&")
    second = page_of(owner_client.get(f"/?{older}"))

    assert f"space={team.public_id}" in older
    assert "team memory 00" in second and "a personal memory" not in second


def test_the_notes_page_lists_searches_and_links_within_the_chosen_space(owner_client, team, written):
    page = page_of(owner_client.get("/notes/", {"space": str(team.public_id)}))

    assert "Team runbook" in page and "My runbook" not in page
    assert f'href="?space={team.public_id}&amp;tag=ops"' in page
    assert f'<input type="hidden" name="space" value="{team.public_id}">' in page
    assert "Team runbook" in page_of(owner_client.get("/notes/", {"space": str(team.public_id), "tag": "ops"}))
    assert "No note has this tag" in page_of(owner_client.get("/notes/", {"space": "Platform", "tag": "mine"}))


def test_the_entities_page_lists_the_chosen_spaces_entities(owner_client, team, written):
    everything = page_of(owner_client.get("/entities/"))
    team_only = page_of(owner_client.get("/entities/", {"space": str(team.public_id)}))
    mine = page_of(owner_client.get("/entities/", {"space": "Personal"}))

    assert "Kenji Sato" in everything and "Priya Raman" in everything
    assert "Kenji Sato" in team_only and "Priya Raman" not in team_only
    assert "Priya Raman" in mine and "Kenji Sato" not in mine


def test_a_single_space_user_may_still_name_it_and_the_search_keeps_it(owner_client, owner):
    page = page_of(owner_client.get("/", {"space": "Personal"}))

    assert 'class="space-switcher"' not in page
    assert f'<input type="hidden" name="space" value="{personal_space_of(owner).public_id}">' in page


@pytest.mark.parametrize("path", PAGES)
def test_another_users_space_is_a_404_exactly_like_one_that_does_not_exist(owner_client, stranger, path):
    theirs = team_space_create(user=stranger, name="Theirs")
    services.memory_write(owner=stranger, content="Their secret plan.", space="Theirs")

    answers = [
        owner_client.get(path, {"space": space})
        for space in (
            str(theirs.public_id),
            str(personal_space_of(stranger).public_id),
            "Theirs",
            "00000000-0000-4000-8000-000000000000",
            "x" * 500,
        )
    ]

    assert {response.status_code for response in answers} == {404}
    assert len({response.content for response in answers}) == 1
    assert all(b"Their" not in response.content for response in answers)


@pytest.mark.parametrize("path", PAGES)
def test_a_removed_member_can_no_longer_choose_the_space(owner_client, owner, lead, team, path):
    assert owner_client.get(path, {"space": str(team.public_id)}).status_code == 200

    member_remove(user=lead, space_id=team.public_id, member=owner.username)

    assert owner_client.get(path, {"space": str(team.public_id)}).status_code == 404
    assert 'class="space-switcher"' not in page_of(owner_client.get(path))


@pytest.mark.parametrize("path", PAGES)
def test_signed_out_visitors_are_not_shown_any_space(path, team):
    response = Client().get(path, {"space": str(team.public_id)})

    assert response.status_code in (200, 302)
    assert b"Platform" not in response.content


def test_the_notes_forms_write_into_the_switchers_space_and_refuse_one_the_user_only_reads(lead, owner, team):
    docs = team_space_create(user=lead, name="Docs")
    Membership.objects.create(space=docs, user=owner, role=Role.EDITOR)
    page = Client()
    page.force_login(owner)

    listing = page.get(reverse("notes"), {"space": "Docs"}).content.decode()
    page.post(reverse("notes"), {"title": "Runbook", "content": "Restart the worker.", "space": str(docs.public_id)})
    refused = page.post(reverse("notes"), {"title": "Sneaked", "content": "x", "space": "Platform"})

    assert f'<option value="{docs.public_id}" selected>Docs</option>' in listing
    assert "Platform</option>" not in listing.split('id="write-space"')[1].split("</select>")[0]  # read only
    assert [note.space for note in notes_titled("Runbook")] == [docs]
    assert refused.status_code == 400 and "but not write to it (viewer)" in refused.content.decode()
    assert notes_titled("Sneaked") == []
