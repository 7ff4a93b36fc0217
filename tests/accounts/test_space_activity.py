"""A team space's activity: what anyone did to or in it, for its owners and admins, on its page;
nothing of another space's, nothing for editors, viewers or strangers."""

import re

import pytest
from django.urls import reverse

from accounts.models import ActivityAction, Role
from accounts.spaces import (
    member_role_change,
    space_activity,
    space_invitation_accept,
    space_invitation_create,
    space_rename,
    team_space_create,
)
from gnosem.errors import NotFound, PermissionDenied
from memories import services
from memories.sharing import memory_share
from tests.accounts.test_space_pages import make_user, signed_in, text

pytestmark = pytest.mark.django_db


def test_owners_and_admins_see_what_everyone_did_in_the_space_newest_first(owner):
    team = team_space_create(user=owner, name="Research")
    other = team_space_create(user=owner, name="Elsewhere")
    editor = make_user("editor")
    issued = space_invitation_create(user=owner, space_id=team.public_id, role=Role.EDITOR)
    space_invitation_accept(user=editor, secret=issued.secret)
    mine = services.memory_write(owner=editor, content="Staging listens on port 6543.")
    memory_share(owner=editor, public_id=mine.public_id, space="Research")
    space_rename(user=owner, space_id=other.public_id, name="Still elsewhere")
    member_role_change(user=owner, space_id=team.public_id, member="editor", role=Role.ADMIN)

    events = list(space_activity(user=owner, space_id=team.public_id))

    assert [(event.owner.username, event.action) for event in events] == [
        ("owner", ActivityAction.ROLE_CHANGED),
        ("editor", ActivityAction.MEMORY_SHARED),
        ("owner", ActivityAction.MEMBER_ADDED),
        ("editor", ActivityAction.INVITATION_USED),
        ("owner", ActivityAction.INVITATION_MADE),
        ("owner", ActivityAction.SPACE_CREATED),
    ]
    page = text(signed_in(editor).get(reverse("space", args=[team.public_id])))  # an admin now
    assert 'id="space-activity"' in page and "from Personal to Research" in page and "editor as admin" in page
    assert "Still elsewhere" not in page


def test_editors_viewers_and_strangers_see_no_activity(owner):
    team = team_space_create(user=owner, name="Research")
    viewer, stranger = make_user("viewer"), make_user("stranger")
    issued = space_invitation_create(user=owner, space_id=team.public_id, role=Role.VIEWER)
    space_invitation_accept(user=viewer, secret=issued.secret)

    with pytest.raises(PermissionDenied, match="see its activity"):
        space_activity(user=viewer, space_id=team.public_id)
    with pytest.raises(NotFound):
        space_activity(user=stranger, space_id=team.public_id)
    assert 'id="space-activity"' not in text(signed_in(viewer).get(reverse("space", args=[team.public_id])))
    assert signed_in(stranger).get(reverse("space", args=[team.public_id])).status_code == 404


def test_the_activity_page_says_what_each_space_event_was_about(owner, owner_client):
    team = team_space_create(user=owner, name="Research")
    space_rename(user=owner, space_id=team.public_id, name="Lab")

    page = text(owner_client.get(reverse("activity")))

    assert "space renamed" in page and re.search(r"Lab\s*\(was Research\)", page)
