"""Signing up as a visitor does under GNOSEM_EMAIL_VERIFICATION=mandatory (the default): post the
form, then open the confirmation link from the mail (pytest-django keeps sent mail in
`django.core.mail.outbox`) and press Confirm. Shared by the account, quota and browser tests."""

import re

from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.urls import reverse

PASSWORD = "correct horse battery staple 42"
CONFIRMATION_LINK = re.compile(r"https?://\S+/accounts/confirm-email/[^/\s]+/")


def confirmation_link(email: str) -> str:
    """The link in the newest mail sent to `email`; AssertionError (listing what was sent) if none."""
    for message in reversed(mail.outbox):
        if [address.lower() for address in message.to] == [email.lower()]:
            found = CONFIRMATION_LINK.search(message.body)
            assert found, f"the mail to {email} has no confirmation link:\n{message.body}"
            return found.group(0)
    raise AssertionError(f"no mail to {email}; sent: {[message.to for message in mail.outbox]}")


def sign_up(client: Client, email: str = "ada@example.com", password: str = PASSWORD):
    """Post the sign-up form and follow its redirects; the address is not confirmed yet."""
    return client.post(
        reverse("account_signup"), {"email": email, "password1": password, "password2": password}, follow=True
    )


def visitor_signs_up(client: Client, email: str = "carol@evil.example"):
    """A visitor signs up on the web (allauth derives the username from the e-mail); their user."""
    sign_up(client, email)
    return get_user_model().objects.get(email=email)


def confirm(client: Client, email: str):
    """Open the confirmation link sent to `email` and confirm it, following the redirects."""
    link = confirmation_link(email)
    page = client.get(link)
    assert page.status_code == 200 and "Confirm" in page.content.decode(), page.content.decode()[:2000]
    return client.post(link, follow=True)


def sign_up_and_confirm(client: Client, email: str = "ada@example.com", password: str = PASSWORD):
    """Sign up and confirm in the same session: the visitor ends up signed in on the dashboard."""
    sign_up(client, email, password)
    return confirm(client, email)
