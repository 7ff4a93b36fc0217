"""The Django admin's sign-in is throttled like the site's, and staff make invitations there."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from accounts.models import Invite, Space
from accounts.spaces import personal_space_of

PASSWORD = "staff passphrase that is long 7"


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_superuser(username="root", email="root@example.com", password=PASSWORD)


def admin_sign_in(client: Client, username: str, password: str, address: str = "203.0.113.7"):
    return client.post(
        reverse("admin:login"),
        {"username": username, "password": password, "next": reverse("admin:index")},
        REMOTE_ADDR=address,
    )


def test_staff_sign_in_to_the_admin_with_the_right_password(client, staff):
    response = admin_sign_in(client, "root", PASSWORD)
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(staff.pk)


def test_admin_sign_in_is_refused_after_repeated_failures_even_with_the_right_password(client, staff):
    for _ in range(5):
        response = admin_sign_in(client, "root", "guess")
        assert response.status_code == 200 and "_auth_user_id" not in client.session
    response = admin_sign_in(client, "root", PASSWORD)
    assert "Too many failed login attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session
    # From another address the staff member still gets in: failures count per account and address.
    other = Client()
    assert admin_sign_in(other, "root", PASSWORD, address="198.51.100.9").status_code == 302


def test_admin_failures_count_against_the_sites_per_address_limit(client, staff):
    for number in range(10):
        admin_sign_in(client, f"guess{number}", "guess")
    response = client.post(
        reverse("account_login"), {"login": "root@example.com", "password": PASSWORD}, REMOTE_ADDR="203.0.113.7"
    )
    assert "Too many failed login attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_staff_create_an_invitation_in_the_admin_and_see_its_link_once(client, staff, settings):
    settings.GNOSEM_SIGNUP = "invite"
    client.force_login(staff)
    response = client.post(
        reverse("admin:accounts_invite_add"),
        {"email": "", "expires_at_0": "2999-01-01", "expires_at_1": "00:00:00"},
        follow=True,
    )
    link = re.search(r"http://testserver/accounts/signup/\?invite=(inv_[A-Za-z0-9_-]+)", response.content.decode())
    assert link, response.content.decode()[:2000]
    invite = Invite.objects.get()
    assert invite.created_by == staff
    assert link.group(1) not in invite.digest
    visitor = Client()
    assert visitor.get(link.group(0)).status_code == 200
    # The list never shows the link again.
    assert link.group(1) not in client.get(reverse("admin:accounts_invite_changelist")).content.decode()


def test_the_activity_log_is_read_only_in_the_admin(client, staff):
    client.force_login(staff)
    assert client.get(reverse("admin:accounts_activityevent_changelist")).status_code == 200
    assert client.get(reverse("admin:accounts_activityevent_add")).status_code == 403


def test_staff_see_each_space_with_its_members_and_change_none(client, staff, owner):
    client.force_login(staff)
    space = personal_space_of(owner)

    listing = client.get(reverse("admin:accounts_space_changelist"), {"q": "owner@example.com"}).content.decode()
    page = client.get(reverse("admin:accounts_space_change", args=[space.pk])).content.decode()

    assert str(space.public_id) in listing and str(personal_space_of(staff).public_id) not in listing
    assert "Memberships" in page and "Personal (personal)" in page
    assert client.get(reverse("admin:accounts_space_add")).status_code == 403
    assert client.post(reverse("admin:accounts_space_delete", args=[space.pk]), {"post": "yes"}).status_code == 403
    assert Space.objects.filter(pk=space.pk).exists()


def test_people_who_are_not_staff_never_see_the_spaces(client, owner):
    client.force_login(owner)
    response = client.get(reverse("admin:accounts_space_changelist"))
    assert response.status_code == 302 and reverse("admin:login") in response["Location"]
