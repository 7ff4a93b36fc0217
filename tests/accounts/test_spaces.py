"""Every account has its personal space, however the account was made."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from accounts.models import Membership, Space
from accounts.spaces import personal_space_create, personal_space_of

pytestmark = pytest.mark.django_db


def test_an_account_made_any_way_has_one_personal_space_it_owns(client, settings, monkeypatch):
    settings.GNOSEM_SIGNUP = "open"
    made = [get_user_model().objects.create_user("plain", "plain@example.com", "pw-long-enough-1")]
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "pw-long-enough-2")
    call_command("createsuperuser", "--noinput", username="root", email="root@example.com")
    made.append(get_user_model().objects.get(username="root"))
    client.post(
        reverse("account_signup"),
        {"email": "web@example.com", "password1": "a-long-enough-pw-3", "password2": "a-long-enough-pw-3"},
    )
    made.append(get_user_model().objects.get(email="web@example.com"))

    for user in made:
        space = personal_space_of(user)
        assert (space.kind, space.name, space.personal_of_id) == ("personal", "Personal", user.pk)
        assert list(Membership.objects.filter(space=space).values_list("user", "role")) == [(user.pk, "owner")]
    assert Space.objects.count() == 3


def test_making_the_personal_space_again_changes_nothing(owner):
    assert personal_space_create(owner) == personal_space_of(owner)
    assert Space.objects.filter(personal_of=owner).count() == Membership.objects.filter(user=owner).count() == 1
