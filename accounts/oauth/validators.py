"""The toolkit's request validator, with what Gnosem adds: a grant's first tokens make its
connection, a client's tokens mark it used, a token family the toolkit ends (refresh token
reuse, RFC 7009 revocation) ends its connection, an authorization code presented again revokes
what it bought, and values PostgreSQL cannot compare are unknown rather than a 500."""

from typing import Any

from django.utils import timezone
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from accounts.models import OAuthClient
from accounts.oauth.connections import (
    connection_binding_of_claims,
    connection_create,
    connection_end_if_family_ended,
    connections_of_code_revoke,
    token_family_of,
)

# oauthlib's Request, whose attributes (client, user, code...) the toolkit fills in as the flow goes:
# its stubs type them all as optional, so the methods here take it as Any.
OAuthRequest = Any


class GnosemOAuth2Validator(OAuth2Validator):
    # PostgreSQL refuses a NUL character in a text parameter (psycopg raises DataError, which the
    # toolkit does not expect): no client_id or code we issued holds one.
    def _load_application(self, client_id: str | None, request: OAuthRequest) -> OAuthClient | None:
        if client_id and "\x00" in client_id:
            return None
        return super()._load_application(client_id, request)

    def validate_code(
        self, client_id: str, code: str, client: OAuthClient, request: OAuthRequest, *args: Any, **kwargs: Any
    ) -> bool:
        if "\x00" in code:
            return False
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True
        # Unknown or expired, or already exchanged: then its tokens are revoked (RFC 6749 4.1.2).
        connections_of_code_revoke(client=client, code=code)
        return False

    def invalidate_authorization_code(
        self, client_id: str, code: str, request: OAuthRequest, *args: Any, **kwargs: Any
    ) -> None:
        try:
            super().invalidate_authorization_code(client_id, code, request, *args, **kwargs)
        except errors.InvalidGrantError:
            # Another exchange of the same code got there first: what both bought is revoked.
            connections_of_code_revoke(client=request.client, code=code)
            raise

    def _create_refresh_token(
        self, request: OAuthRequest, refresh_token_code: str, access_token: Any, previous_refresh_token: Any
    ) -> Any:
        refresh_token = super()._create_refresh_token(request, refresh_token_code, access_token, previous_refresh_token)
        # Only the code exchange starts a family; a refresh continues its connection's.
        if request.grant_type == "authorization_code":
            connection_create(
                owner=request.user,
                client=request.client,
                scopes=access_token.scope,
                token_family=refresh_token.token_family,
                code=request.code,
                binding=connection_binding_of_claims(request.claims),
            )
        return refresh_token

    def save_bearer_token(self, token: dict[str, Any], request: OAuthRequest, *args: Any, **kwargs: Any) -> Any:
        saved = super().save_bearer_token(token, request, *args, **kwargs)
        OAuthClient.objects.filter(pk=request.client.pk).update(last_used_at=timezone.now())
        return saved

    def validate_refresh_token(
        self, refresh_token: str, client: OAuthClient, request: OAuthRequest, *args: Any, **kwargs: Any
    ) -> bool:
        valid = super().validate_refresh_token(refresh_token, client, request, *args, **kwargs)
        if not valid:
            # A revoked refresh token presented again: the toolkit has just revoked its family.
            connection_end_if_family_ended(token_family_of(refresh_token))
        return valid

    def revoke_token(
        self, token: str, token_type_hint: str | None, request: OAuthRequest, *args: Any, **kwargs: Any
    ) -> None:
        family = token_family_of(token)
        super().revoke_token(token, token_type_hint, request, *args, **kwargs)
        connection_end_if_family_ended(family)
