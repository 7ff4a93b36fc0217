"""The memory page's share form: a copy or a move into another of the user's spaces, and what a
stranger, a viewer and a removed member get."""

import pytest
from django.test import Client

from accounts.models import Membership, Role
from accounts.spaces import personal_space_of
from memories import services
from memories.models import Memory
from tests.memories.spaces import member

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_page_offers_the_other_writable_spaces_and_a_copy_shows_where_it_came_from(owner_client, owner, team):
    memory = services.memory_write(owner=owner, content="The VPN certificate expires in May.")

    page = owner_client.get(f"/memories/{memory.public_id}/").content.decode()
    assert 'id="share-form"' in page and f'value="{team.public_id}">Platform (team)' in page
    assert 'name="move"' in page

    response = owner_client.post(f"/memories/{memory.public_id}/share", {"space": str(team.public_id)})

    copy = Memory.objects.get(space=team)
    assert response.status_code == 302 and response["Location"] == f"/memories/{copy.public_id}/"
    shown = owner_client.get(response["Location"]).content.decode()
    assert "Shared a copy to “Platform”." in shown
    assert '<dd id="shared-from">Personal by owner</dd>' in shown
    assert Memory.objects.filter(space=personal_space_of(owner)).count() == 1


def test_a_move_takes_the_memory_out_of_its_space(owner_client, owner, team):
    memory = services.memory_write(owner=owner, content="The build server is ci-7.")

    response = owner_client.post(f"/memories/{memory.public_id}/share", {"space": "Platform", "move": "true"})

    assert response["Location"] == f"/memories/{memory.public_id}/"
    assert "Moved to “Platform”." in owner_client.get(response["Location"]).content.decode()
    assert Memory.objects.get().space_id == team.pk


def test_a_refusal_is_shown_on_the_memory_page(owner_client, owner, team):
    memory = services.memory_write(owner=owner, content="The build server is ci-7.")

    response = owner_client.post(f"/memories/{memory.public_id}/share", {"space": "Personal"}, follow=True)

    assert "in &#x27;Personal&#x27; already: name another space." in response.content.decode()
    assert Memory.objects.count() == 1


def test_a_viewer_may_copy_a_team_memory_out_but_not_move_it(owner, team):
    viewer = member(team, "viewer", Role.VIEWER)
    shared = services.memory_write(owner=owner, content="Releases go out on Tuesdays.", space="Platform")
    client = signed_in(viewer)

    page = client.get(f"/memories/{shared.public_id}/").content.decode()
    assert 'id="share-form"' in page and 'name="move"' not in page
    moved = client.post(f"/memories/{shared.public_id}/share", {"space": "Personal", "move": "true"}, follow=True)
    assert "not write to it (viewer)" in moved.content.decode()
    assert Memory.objects.get().space_id == team.pk

    client.post(f"/memories/{shared.public_id}/share", {"space": "Personal"})
    assert Memory.objects.filter(space=personal_space_of(viewer), author=viewer).count() == 1


def test_a_stranger_and_a_removed_member_get_404(owner, team, stranger_client):
    editor = member(team, "editor", Role.EDITOR)
    shared = services.memory_write(owner=owner, content="Releases go out on Tuesdays.", space="Platform")
    Membership.objects.filter(space=team, user=editor).delete()

    for client in (stranger_client, signed_in(editor)):
        assert client.post(f"/memories/{shared.public_id}/share", {"space": "Personal"}).status_code == 404
    assert Memory.objects.count() == 1


def test_a_space_the_user_does_not_reach_is_refused_like_one_that_does_not_exist(owner_client, owner, stranger):
    theirs = personal_space_of(stranger)
    memory = services.memory_write(owner=owner, content="The build server is ci-7.")

    response = owner_client.post(f"/memories/{memory.public_id}/share", {"space": str(theirs.public_id)}, follow=True)

    assert f"No space &#x27;{theirs.public_id}&#x27;." in response.content.decode()
    assert Memory.objects.count() == 1
