"""The activity log: what was done with an account, when, from where and with which token.

Services call `activity_record` after the thing they record has happened; the sign-in signals
are connected in accounts.apps. Events older than GNOSEM_ACTIVITY_RETENTION_DAYS are pruned by
a periodic task (accounts.tasks).
"""

import ipaddress
from datetime import datetime, timedelta
from typing import Any

from allauth.account.adapter import get_adapter
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from accounts.models import ActivityAction, ActivityEvent, ApiToken
from gnosem.types import Owner


def _client_ip(request: HttpRequest | None) -> str | None:
    """The client's address as the sign-in throttle sees it (honouring GNOSEM_TRUSTED_PROXY_COUNT)."""
    if request is None:
        return None
    try:
        ip = get_adapter(request).get_client_ip(request)
        return str(ipaddress.ip_address(ip))
    except (PermissionDenied, ImproperlyConfigured, KeyError, ValueError):
        return None  # no usable address (a misconfigured proxy count): the event is kept without one


def activity_via(request: HttpRequest | None, token: ApiToken | None) -> str:
    """Which door an action came through: an API token, the web pages (or the admin), the shell."""
    if token is not None:
        return "api token"
    if request is None:
        return "command line"
    return "admin" if request.path.startswith("/admin/") else "web"


def activity_record(
    *,
    owner: Owner,
    action: str,
    token: ApiToken | None = None,
    detail: dict[str, Any] | None = None,
    request: HttpRequest | None = None,
) -> ActivityEvent:
    """Add one event to the owner's log. `token` is the API token the action was done with (none
    from the web pages or the shell); `detail` holds what else is worth showing (counts, names)."""
    if action not in ActivityAction.values:
        raise ValueError(f"Unknown activity action {action!r}.")
    ip = _client_ip(request)
    return ActivityEvent.objects.create(
        owner=owner,
        action=action,
        token=token,
        detail={"via": activity_via(request, token), **(detail or {})},
        ip=ip,
    )


def activity_for_owner(owner: Owner) -> QuerySet[ActivityEvent]:
    """The owner's events, newest first (a selector: the page and tests read through it)."""
    return ActivityEvent.objects.filter(owner=owner).select_related("token").order_by("-created_at", "-pk")


def activity_prune(*, now: datetime | None = None) -> int:
    """Delete events older than the retention period; returns how many."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.GNOSEM_ACTIVITY_RETENTION_DAYS)
    deleted, _ = ActivityEvent.objects.filter(created_at__lt=cutoff).delete()
    return deleted


def record_sign_in(sender: object, request: HttpRequest | None, user: Owner, **kwargs: Any) -> None:
    """Django's user_logged_in: every sign-in (allauth's pages and the admin) lands in the log."""
    activity_record(owner=user, action=ActivityAction.SIGNED_IN, request=request)


def record_failed_sign_in(
    sender: object, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    """Django's user_login_failed: a wrong password for an existing account is shown to its owner
    (the sign-in throttle bounds how many such events a stranger can cause)."""
    login = credentials.get("email") or credentials.get("username")
    if not isinstance(login, str) or not login:
        return
    User = get_user_model()
    owner = User.objects.filter(username=login).first() or User.objects.filter(email__iexact=login).first()
    if owner is not None:
        activity_record(owner=owner, action=ActivityAction.SIGN_IN_FAILED, request=request)
