"""Accounts through allauth's pages: e-mail sign-up, sign-in and -out, password change and reset,
and the throttle on failed sign-ins."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.urls import reverse

PASSWORD = "correct horse battery staple 42"


def sign_up(client, email: str = "ada@example.com", password: str = PASSWORD):
    return client.post(
        reverse("account_signup"), {"email": email, "password1": password, "password2": password}, follow=True
    )


@pytest.mark.django_db
def test_a_visitor_signs_up_with_an_email_and_lands_on_the_dashboard(client):
    response = sign_up(client)
    assert response.status_code == 200
    user = get_user_model().objects.get(email="ada@example.com")
    assert response.wsgi_request.user == user
    assert "Memories" in response.content.decode() and "waiting to be embedded" in response.content.decode()


@pytest.mark.django_db
def test_signing_up_twice_with_one_email_is_refused(client):
    sign_up(client)
    client.logout()
    response = sign_up(client, email="ADA@example.com")
    assert get_user_model().objects.filter(email__iexact="ada@example.com").count() == 1
    assert "already registered" in response.content.decode()


@pytest.mark.django_db
def test_sign_in_and_sign_out_by_email(client):
    sign_up(client)
    client.post(reverse("account_logout"))
    assert "_auth_user_id" not in client.session
    response = client.post(reverse("account_login"), {"login": "ada@example.com", "password": PASSWORD}, follow=True)
    assert response.wsgi_request.user.is_authenticated


@pytest.mark.django_db
def test_sign_in_is_throttled_after_repeated_failures(client):
    sign_up(client)
    client.post(reverse("account_logout"))
    for _ in range(5):
        response = client.post(reverse("account_login"), {"login": "ada@example.com", "password": "wrong"})
        assert response.status_code == 200  # the form again, with its error
    # Even the right password is refused now, with a message saying why.
    response = client.post(reverse("account_login"), {"login": "ada@example.com", "password": PASSWORD})
    assert "Too many failed login attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_password_change(client):
    sign_up(client)
    new = "another long passphrase 77"
    client.post(
        reverse("account_change_password"), {"oldpassword": PASSWORD, "password1": new, "password2": new}, follow=True
    )
    assert get_user_model().objects.get(email="ada@example.com").check_password(new)


@pytest.mark.django_db
def test_password_reset_by_email(client):
    sign_up(client)
    client.post(reverse("account_logout"))
    mail.outbox.clear()
    client.post(reverse("account_reset_password"), {"email": "ada@example.com"})
    assert len(mail.outbox) == 1
    link = re.search(r"https?://\S+/password/reset/key/\S+", mail.outbox[0].body).group(0)
    form_page = client.get(link, follow=True)
    new = "reset passphrase number 9"
    client.post(form_page.redirect_chain[-1][0], {"password1": new, "password2": new}, follow=True)
    assert get_user_model().objects.get(email="ada@example.com").check_password(new)


@pytest.mark.django_db
def test_the_sign_up_form_needs_its_csrf_token():
    from django.test import Client

    response = Client(enforce_csrf_checks=True).post(
        reverse("account_signup"), {"email": "eve@example.com", "password1": PASSWORD, "password2": PASSWORD}
    )
    assert response.status_code == 403
    assert not get_user_model().objects.filter(email="eve@example.com").exists()


@pytest.mark.django_db
def test_behind_a_proxy_the_throttle_counts_per_client_address(client, settings):
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1

    def fail(address: str, email: str):
        return client.post(
            reverse("account_login"),
            {"login": email, "password": "wrong"},
            # The proxy appends the address it saw; what the client put before it is not trusted.
            headers={"X-Forwarded-For": f"192.0.2.1, {address}"},
        )

    for i in range(10):  # ten accounts, one address: the per-address limit
        fail("203.0.113.7", f"user{i}@example.com")
    assert "Too many failed login attempts" in fail("203.0.113.7", "fresh@example.com").content.decode()
    assert "Too many failed login attempts" not in fail("198.51.100.9", "fresh@example.com").content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["account_login", "account_signup", "account_reset_password"])
def test_the_anonymous_account_pages_use_the_sites_layout(client, name):
    page = client.get(reverse(name)).content.decode()
    assert '<link rel="stylesheet" href="/static/gnosem.css">' in page and 'class="brand"' in page


@pytest.mark.parametrize("name", ["account_change_password", "account_email", "account_logout"])
def test_the_signed_in_account_pages_use_the_sites_layout(owner_client, name):
    response = owner_client.get(reverse(name), follow=True)  # no password yet: "set" instead of "change"
    assert response.status_code == 200
    assert 'class="brand"' in response.content.decode() and "Sign out" in response.content.decode()
