"""Gnosem's allauth adapter (ACCOUNT_ADAPTER): the sign-up policy and the failed sign-in throttle.

- GNOSEM_SIGNUP=open lets anyone sign up; `invite` needs a link made by staff (accounts.invites),
  `closed` lets nobody. Sign-up is allauth's own view; only the adapter decides.
- Failed sign-ins are counted per account *and client address*: a stranger's failures lock out
  that stranger's address, never the owner signing in from elsewhere. The per-address limit on
  all accounts stays as allauth has it.
- Accounts the operator made (createsuperuser, createtoken --create-user, the admin) have no
  allauth e-mail record, which only sign-up makes: their address counts as confirmed at their first
  sign-in, so mandatory e-mail verification asks strangers, not the operator.
"""

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.models import EmailAddress
from allauth.core import context
from allauth.core.exceptions import ImmediateHttpResponse
from django import forms
from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.invites import invite_claim, invite_find
from gnosem.types import Owner

INVITE_SESSION_KEY = "gnosem_invite"
CLOSED_REASON = "This server does not take new sign-ups. Ask its operator for an account."


def signup_closed_response(request: HttpRequest, reason: str) -> HttpResponse:
    """The page shown instead of the sign-up form, saying why."""
    return render(
        request, "account/signup_closed.html", {"policy": settings.GNOSEM_SIGNUP, "reason": reason}, status=403
    )


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        """Open, closed, or open to whoever holds a valid invitation (kept in the session from the
        link's `?invite=` so that the form's POST finds it too)."""
        if settings.GNOSEM_SIGNUP == "open":
            return True
        if settings.GNOSEM_SIGNUP == "closed":
            raise ImmediateHttpResponse(signup_closed_response(request, CLOSED_REASON))
        if request.GET.get("invite"):
            request.session[INVITE_SESSION_KEY] = request.GET["invite"]
        if invite_find(request.session.get(INVITE_SESSION_KEY)) is None:
            reason = (
                "This invitation link is not valid: it was already used, has expired or was mistyped. "
                "Ask the person who sent it for a new one."
                if request.session.get(INVITE_SESSION_KEY)
                else "Sign-up here is by invitation: open the link you were sent, or ask the operator for one."
            )
            raise ImmediateHttpResponse(signup_closed_response(request, reason))
        return True

    def clean_email(self, email: str) -> str:
        """An invitation made for one address signs up that address only."""
        email = super().clean_email(email)
        request = context.request
        if settings.GNOSEM_SIGNUP == "invite" and request is not None and _is_signup(request):
            invite = invite_find(request.session.get(INVITE_SESSION_KEY))
            if invite is not None and invite.email and invite.email.lower() != email.lower():
                raise forms.ValidationError(
                    "This invitation is for another e-mail address: sign up with the address it was sent to."
                )
        return email

    def save_user(self, request: HttpRequest, user: Owner, form: forms.Form, commit: bool = True) -> Owner:
        """With invitations, the new user and the used invitation are saved together; an invitation
        used meanwhile by someone else leaves no user behind."""
        if settings.GNOSEM_SIGNUP != "invite":
            return super().save_user(request, user, form, commit=commit)
        with transaction.atomic():
            user = super().save_user(request, user, form, commit=True)
            if not invite_claim(secret=request.session.get(INVITE_SESSION_KEY), user=user):
                transaction.set_rollback(True)
                raise ImmediateHttpResponse(
                    signup_closed_response(request, "This invitation was used or expired meanwhile; ask for a new one.")
                )
        request.session.pop(INVITE_SESSION_KEY, None)
        return user

    def pre_login(self, request: HttpRequest, user: Owner, **kwargs: Any) -> HttpResponse | None:
        """Before allauth's verification stage: an operator-made account's address is confirmed."""
        response = super().pre_login(request, user, **kwargs)
        if response is None:
            confirm_operator_made_address(user)
        return response

    def _get_login_attempts_cache_key(self, request: HttpRequest, **credentials: Any) -> str:
        """allauth counts failed sign-ins per account ("key"); we count them per account and client
        address, so that nobody can lock an owner out by failing on their account. A successful
        password reset clears the count of the address it is done from."""
        return f"{super()._get_login_attempts_cache_key(request, **credentials)}:{self.get_client_ip(request)}"


def _is_signup(request: HttpRequest) -> bool:
    match = getattr(request, "resolver_match", None)
    return match is not None and match.url_name == "account_signup"


def confirm_operator_made_address(user: Owner) -> None:
    """Record the address of an account without any allauth e-mail record as confirmed (only
    sign-up makes one, so the operator made this account and typed the address). Left to allauth's
    verification when another account has already confirmed the same address."""
    if not user.email or EmailAddress.objects.filter(user=user).exists():
        return
    if EmailAddress.objects.filter(email__iexact=user.email, verified=True).exists():
        return
    EmailAddress.objects.create(user=user, email=user.email.lower(), primary=True, verified=True)
