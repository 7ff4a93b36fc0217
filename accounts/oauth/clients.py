"""Which client a client_id names: a registered one (Dynamic Client Registration or made by the
operator), or one described by the metadata document its URL points at, fetched and kept in the
client's row until the document's cache lifetime runs out."""

import logging
from datetime import timedelta

from allauth.core import ratelimit
from django.http import HttpRequest
from django.utils import timezone

from accounts.models import OAuthClient
from accounts.oauth.cimd import MAX_CACHE_SECONDS, fetch_client_metadata, is_client_metadata_url
from accounts.oauth.client_metadata import OAuthClientError

logger = logging.getLogger(__name__)
_CIMD = OAuthClient.RegistrationSource.CIMD
# The action GNOSEM_OAUTH_CIMD_FETCH_RATE_LIMIT is kept under in ACCOUNT_RATE_LIMITS.
FETCH_RATE_LIMIT_ACTION = "oauth_cimd_fetch"


def client_for_id(client_id: str, *, request: HttpRequest) -> OAuthClient:
    """The client `client_id` names; raises OAuthClientError when there is none, or its metadata
    document cannot be used. Fetching a document is rate-limited per user and address of the
    `request` (GNOSEM_OAUTH_CIMD_FETCH_RATE_LIMIT): the URL is the requester's to choose, and the
    server must not become a way to send requests anywhere."""
    client = OAuthClient.objects.filter(client_id=client_id).first()
    if is_client_metadata_url(client_id) and (client is None or client.registration_source == _CIMD):
        return _described_client(client_id, client, request)
    if client is None:
        raise OAuthClientError(
            "invalid_client",
            "This server knows no client with that client_id: it may have been removed after a day unused. "
            "Connect again from the app to register anew.",
        )
    return client


def _described_client(url: str, cached: OAuthClient | None, request: HttpRequest) -> OAuthClient:
    """The client its document at `url` describes, fetched again once the copy kept has expired.
    When that fetch fails, a copy fetched within the longest cache lifetime still serves: a
    passing outage of the client's site should not stop its users from connecting."""
    now = timezone.now()
    if cached is not None and cached.cimd_expires_at is not None and cached.cimd_expires_at > now:
        return cached
    try:
        # consume_or_429, not consume: only it counts GET requests (the consent page is one).
        if ratelimit.consume_or_429(request, action=FETCH_RATE_LIMIT_ACTION, limit_get=True) is not None:
            raise OAuthClientError(
                "temporarily_unavailable",
                "Too many applications described by metadata documents were asked for from this account or "
                "address. Wait a while, then connect again.",
            )
        document = fetch_client_metadata(url)
    except OAuthClientError as exc:
        fetched_at = cached.metadata_fetched_at if cached is not None else None
        if cached is not None and fetched_at is not None and now - fetched_at < timedelta(seconds=MAX_CACHE_SECONDS):
            logger.warning("Using the kept metadata of %s: fetching it again failed (%s)", url, exc.description)
            return cached
        raise
    metadata = document.metadata
    client, _ = OAuthClient.objects.update_or_create(
        client_id=url,
        defaults={
            "name": metadata.client_name,
            "redirect_uris": " ".join(metadata.redirect_uris),
            "client_type": OAuthClient.CLIENT_PUBLIC,
            "authorization_grant_type": OAuthClient.GRANT_AUTHORIZATION_CODE,
            "registration_source": _CIMD,
            "client_secret": "",
            "hash_client_secret": False,
            "metadata_fetched_at": now,
            "cimd_expires_at": now + timedelta(seconds=document.cache_seconds),
        },
    )
    return client
