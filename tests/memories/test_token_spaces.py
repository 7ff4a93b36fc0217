"""A token reaches every space of its user, or only those it is bound to, and writes to its default
space unless a call names another; a membership ended ends the token's reach there on its next call."""

import pytest

from accounts.models import Membership, Role, Space, SpaceKind
from accounts.reach import token_reach
from accounts.spaces import personal_space_of
from accounts.tokens import token_authenticate, token_create
from gnosem.errors import NotFound, ValidationError
from memories import selectors, services
from memories.search.pipeline import search_hybrid

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(owner):
    space = Space.objects.create(name="Platform", kind=SpaceKind.TEAM)
    Membership.objects.create(space=space, user=owner, role=Role.EDITOR)
    return space


def token_for(owner, **binding):
    return token_authenticate(token_create(owner=owner, name="laptop", scope="write", **binding).secret)


def test_an_unbound_token_reaches_every_space_and_writes_to_the_personal_one(owner, team):
    reach = token_reach(token_for(owner))

    assert {space.name for space in reach.spaces} == {"Personal", "Platform"}
    assert services.memory_write(owner=reach, content="Mine.").space_id == personal_space_of(owner).pk


def test_a_token_bound_to_the_team_sees_only_the_team_and_writes_there(owner, team):
    private = services.memory_write(owner=owner, content="My salary review is in March.")
    reach = token_reach(token_for(owner, spaces=["Platform"]))

    assert [space.name for space in reach.spaces] == ["Platform"]
    written = services.memory_write(owner=reach, content="The team retro is on Fridays.")
    assert written.space_id == team.pk
    assert search_hybrid(owner=reach, query="salary review March") == []
    with pytest.raises(NotFound):
        selectors.memory_get(owner=reach, public_id=private.public_id)
    with pytest.raises(NotFound):
        services.memory_write(owner=reach, content="Sneak into personal.", space="Personal")


def test_a_default_space_takes_the_writes_that_name_none(owner, team):
    reach = token_reach(token_for(owner, default_space=str(team.public_id)))

    assert services.memory_write(owner=reach, content="Team by default.").space_id == team.pk
    assert services.memory_write(owner=reach, content="Mine.", space="Personal").space_id == personal_space_of(owner).pk


def test_a_token_bound_to_a_space_its_user_left_reaches_nothing(owner, team):
    written = services.memory_write(owner=owner, content="Deploys need two approvals.", space="Platform")
    token = token_for(owner, spaces=["Platform"])
    Membership.objects.filter(space=team, user=owner).delete()

    reach = token_reach(token)
    assert reach.spaces == () and reach.default_space_id is None
    assert search_hybrid(owner=reach, query="deploy approvals") == []
    with pytest.raises(NotFound):
        selectors.memory_get(owner=reach, public_id=written.public_id)
    with pytest.raises(NotFound, match="reaches no space"):
        services.memory_write(owner=reach, content="Anything.")


def test_binding_is_checked_when_the_token_is_made(owner, stranger, team):
    elsewhere = Space.objects.create(name="Elsewhere", kind=SpaceKind.TEAM)
    Membership.objects.create(space=elsewhere, user=stranger, role=Role.OWNER)

    with pytest.raises(NotFound):
        token_create(owner=owner, name="x", scope="write", spaces=["Elsewhere"])
    with pytest.raises(NotFound):
        token_create(owner=owner, name="x", scope="write", spaces=[str(elsewhere.public_id)])
    with pytest.raises(ValidationError, match="one of the spaces the token is bound to"):
        token_create(owner=owner, name="x", scope="write", spaces=["Platform"], default_space="Personal")
    with pytest.raises(ValidationError):
        token_create(owner=owner, name="x", scope="write", spaces="Platform")
    assert not owner.api_tokens.exists()


def test_createtoken_binds_from_the_command_line(owner, team, command):
    secret, _ = command(
        "createtoken", "owner", "--space", "Platform", "--space", "Personal", "--default-space", "Platform"
    )
    reach = token_reach(token_authenticate(secret.strip()))

    assert {space.name for space in reach.spaces} == {"Personal", "Platform"}
    assert reach.default_space_id == team.pk
