"""Accounts through allauth's pages: e-mail sign-up confirmed by mail, sign-in and -out, password
change and reset, and the throttle on failed sign-ins."""

import re

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from tests.accounts.email_confirmation import PASSWORD, confirm, confirmation_link, sign_up, sign_up_and_confirm


@pytest.mark.django_db
def test_a_visitor_signs_up_confirms_the_address_from_the_mail_and_lands_on_the_dashboard(client):
    response = sign_up(client)
    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("account_email_verification_sent")
    assert not response.wsgi_request.user.is_authenticated  # not before the address is confirmed
    user = get_user_model().objects.get(email="ada@example.com")
    assert confirmation_link("ada@example.com").startswith("http://testserver/accounts/confirm-email/")
    response = confirm(client, "ada@example.com")
    assert response.redirect_chain[-1][0] == reverse("home")
    assert response.wsgi_request.user == user
    assert "Memories" in response.content.decode() and "waiting to be embedded" in response.content.decode()


@pytest.mark.django_db
def test_an_unconfirmed_account_cannot_sign_in_and_is_sent_the_link_again(client):
    sign_up(client)
    mail.outbox.clear()
    cache.clear()  # three minutes later: allauth sends one confirmation per address per 3 minutes
    response = Client().post(reverse("account_login"), {"login": "ada@example.com", "password": PASSWORD}, follow=True)
    assert not response.wsgi_request.user.is_authenticated
    assert response.redirect_chain[-1][0] == reverse("account_email_verification_sent")
    assert confirmation_link("ada@example.com")


@pytest.mark.django_db
def test_confirming_in_another_browser_confirms_without_signing_in_there(client):
    sign_up(client)
    elsewhere = Client()
    response = confirm(elsewhere, "ada@example.com")
    assert not response.wsgi_request.user.is_authenticated
    assert response.redirect_chain[-1][0] == reverse("account_login")
    response = elsewhere.post(reverse("account_login"), {"login": "ada@example.com", "password": PASSWORD}, follow=True)
    assert response.wsgi_request.user.is_authenticated


@pytest.mark.django_db
def test_an_account_the_operator_made_signs_in_without_confirming_its_address(client):
    get_user_model().objects.create_superuser(username="root", email="root@example.com", password=PASSWORD)
    response = client.post(reverse("account_login"), {"login": "root@example.com", "password": PASSWORD}, follow=True)
    assert response.wsgi_request.user.is_authenticated
    assert mail.outbox == []
    assert EmailAddress.objects.get(email="root@example.com").verified


@pytest.mark.django_db
def test_with_optional_verification_signing_up_twice_with_one_email_is_refused(client, settings):
    # allauth 65.21.1 lets uniqueness win here: a new account is signed in at once, so a taken
    # address cannot be hidden without letting the visitor in; hence `mandatory` is the default.
    settings.ACCOUNT_EMAIL_VERIFICATION = "optional"
    response = sign_up(client)
    assert response.wsgi_request.user.is_authenticated  # signed in at once
    client.logout()
    response = sign_up(client, email="ADA@example.com")
    assert get_user_model().objects.filter(email__iexact="ada@example.com").count() == 1
    assert "already registered" in response.content.decode()


def _visible(response, typed_email: str) -> str:
    """The page as a visitor sees it, without the per-request CSRF token and the address they typed."""
    page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", response.content.decode())
    return page.replace(typed_email.lower(), "ADDRESS")


@pytest.mark.django_db
def test_by_default_sign_up_does_not_reveal_a_registered_email(client):
    sign_up_and_confirm(client, "ada@example.com")
    client.logout()
    client.cookies.clear()
    mail.outbox.clear()
    # Later: allauth sends one mail per address per 3 minutes, and skips the "sent" message with it.
    cache.clear()
    taken = sign_up(client, email="ADA@example.com")
    client.cookies.clear()
    fresh = sign_up(client, email="grace@example.com")
    assert taken.status_code == fresh.status_code == 200
    assert [url for url, _ in taken.redirect_chain] == [url for url, _ in fresh.redirect_chain]
    assert _visible(taken, "ADA@example.com") == _visible(fresh, "grace@example.com")
    assert "already registered" not in taken.content.decode()
    # No second account; the owner is told by mail instead, the new visitor gets a confirmation.
    assert get_user_model().objects.filter(email__iexact="ada@example.com").count() == 1
    assert sorted(message.to[0] for message in mail.outbox) == ["ada@example.com", "grace@example.com"]
    to_owner = next(message for message in mail.outbox if message.to == ["ada@example.com"])
    assert "already" in to_owner.body.lower()
    assert not taken.wsgi_request.user.is_authenticated and not fresh.wsgi_request.user.is_authenticated


@pytest.mark.django_db
def test_sign_in_and_sign_out_by_email(client):
    sign_up_and_confirm(client)
    client.post(reverse("account_logout"))
    assert "_auth_user_id" not in client.session
    response = client.post(reverse("account_login"), {"login": "ada@example.com", "password": PASSWORD}, follow=True)
    assert response.wsgi_request.user.is_authenticated


@pytest.mark.django_db
def test_sign_in_is_throttled_after_repeated_failures(client):
    sign_up_and_confirm(client)
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
    sign_up_and_confirm(client)
    new = "another long passphrase 77"
    client.post(
        reverse("account_change_password"), {"oldpassword": PASSWORD, "password1": new, "password2": new}, follow=True
    )
    assert get_user_model().objects.get(email="ada@example.com").check_password(new)


@pytest.mark.django_db
def test_password_reset_by_email(client):
    sign_up_and_confirm(client)
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


def fail_from(client, address: str, email: str, password: str = "wrong"):
    return client.post(reverse("account_login"), {"login": email, "password": password}, REMOTE_ADDR=address)


@pytest.mark.django_db
def test_a_strangers_failed_sign_ins_do_not_lock_the_owner_out(client):
    from django.test import Client

    sign_up_and_confirm(client)
    client.post(reverse("account_logout"))
    attacker = Client()
    for _ in range(20):
        fail_from(attacker, "203.0.113.7", "ada@example.com")
    # The attacker's address is refused, even with the right password...
    response = fail_from(attacker, "203.0.113.7", "ada@example.com", PASSWORD)
    assert "Too many failed login attempts" in response.content.decode()
    assert "_auth_user_id" not in attacker.session
    # ...while the owner, from elsewhere, signs in.
    owner = Client()
    response = fail_from(owner, "198.51.100.9", "ada@example.com", PASSWORD)
    assert response.status_code == 302
    assert owner.session["_auth_user_id"] == str(get_user_model().objects.get(email="ada@example.com").pk)


@pytest.mark.django_db
def test_password_reset_works_while_an_address_is_throttled(client):
    sign_up_and_confirm(client)
    client.post(reverse("account_logout"))
    for _ in range(6):
        fail_from(client, "203.0.113.7", "ada@example.com")
    mail.outbox.clear()
    client.post(reverse("account_reset_password"), {"email": "ada@example.com"}, REMOTE_ADDR="203.0.113.7")
    assert len(mail.outbox) == 1


@pytest.mark.django_db
def test_sign_up_has_its_own_rate_limit(client, settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "signup": "2/h/ip"}
    for number in range(2):
        mismatched = {"email": f"user{number}@example.com", "password1": "x", "password2": "y"}
        client.post(reverse("account_signup"), mismatched)  # failed attempts count too
    response = client.post(
        reverse("account_signup"), {"email": "late@example.com", "password1": PASSWORD, "password2": PASSWORD}
    )
    assert response.status_code == 429
    assert not get_user_model().objects.filter(email="late@example.com").exists()


def test_sign_up_is_rate_limited_by_default(settings):
    assert settings.ACCOUNT_RATE_LIMITS["signup"] == "20/h/ip"
