"""GNOSEM_SIGNUP: open (anyone), invite (a single-use link from staff) or closed."""

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.invites import invite_create, invite_find
from accounts.models import Invite
from tests.accounts.email_confirmation import confirm, sign_up


def create_invite(*args: str) -> str:
    stdout, stderr = StringIO(), StringIO()
    call_command("createinvite", *args, "--base-url", "http://testserver", stdout=stdout, stderr=stderr)
    return stdout.getvalue().strip()


def exists(email: str) -> bool:
    return get_user_model().objects.filter(email=email).exists()


@pytest.mark.django_db
def test_sign_up_is_open_by_default(client, settings):
    assert settings.GNOSEM_SIGNUP == "open"
    sign_up(client, "ada@example.com")
    assert exists("ada@example.com")


@pytest.mark.django_db
def test_closed_sign_up_says_so_and_creates_nobody(client, settings):
    settings.GNOSEM_SIGNUP = "closed"
    page = client.get(reverse("account_signup"))
    assert page.status_code == 403
    assert "does not take new sign-ups" in page.content.decode()
    response = sign_up(client, "ada@example.com")
    assert response.status_code == 403
    assert not exists("ada@example.com")


@pytest.mark.django_db
def test_invite_only_sign_up_refuses_visitors_without_a_link(client, settings):
    settings.GNOSEM_SIGNUP = "invite"
    page = client.get(reverse("account_signup"))
    assert page.status_code == 403 and "by invitation" in page.content.decode()
    sign_up(client, "ada@example.com")
    assert not exists("ada@example.com")
    assert client.get(reverse("account_signup") + "?invite=inv_madeup").status_code == 403


@pytest.mark.django_db
def test_an_invitation_link_signs_up_one_person_once(client, settings):
    settings.GNOSEM_SIGNUP = "invite"
    link = create_invite()
    assert re.fullmatch(r"http://testserver/accounts/signup/\?invite=inv_[A-Za-z0-9_-]{43}", link)
    assert client.get(link).status_code == 200
    sign_up(client, "ada@example.com")
    ada = get_user_model().objects.get(email="ada@example.com")
    invite = Invite.objects.get()
    assert invite.used_by == ada and invite.used_at is not None
    assert confirm(client, "ada@example.com").wsgi_request.user == ada  # confirmed from the mail: signed in
    # The same link a second time, by someone else: refused.
    other = Client()
    page = other.get(link)
    assert page.status_code == 403 and "already used" in page.content.decode()
    sign_up(other, "eve@example.com")
    assert not exists("eve@example.com")


@pytest.mark.django_db
def test_an_expired_invitation_is_refused(client, settings):
    settings.GNOSEM_SIGNUP = "invite"
    link = create_invite("--days", "1")
    Invite.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get(link).status_code == 403
    sign_up(client, "ada@example.com")
    assert not exists("ada@example.com")


@pytest.mark.django_db
def test_an_invitation_for_one_address_signs_up_only_that_address(client, settings):
    settings.GNOSEM_SIGNUP = "invite"
    client.get(create_invite("--email", "ada@example.com"))
    response = sign_up(client, "eve@example.com")
    assert "This invitation is for another e-mail address" in response.content.decode()
    assert not exists("eve@example.com")
    sign_up(client, "ADA@example.com")
    assert exists("ada@example.com")


@pytest.mark.django_db
def test_invitations_are_stored_only_as_a_digest(settings):
    issued = invite_create(created_by=None, days=3)
    stored = Invite.objects.filter(pk=issued.invite.pk).values().get()
    assert all(issued.secret not in str(value) for value in stored.values())
    assert invite_find(issued.secret) == issued.invite
