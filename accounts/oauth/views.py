"""The OAuth endpoints: authorization with its consent page, token and revocation.

django-oauth-toolkit (oauthlib underneath) validates the requests and issues the codes and
tokens; this module adds what MCP clients need on top: clients resolved through
accounts.oauth.clients (Client ID Metadata Documents too), PKCE with S256 only, tokens bound to
this server's MCP resource (RFC 8707) and the issuer in every authorization response (RFC 9207).
"""

import json
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST
from oauth2_provider.exceptions import FatalClientError, OAuthToolkitError
from oauth2_provider.http import OAuth2ResponseRedirect
from oauth2_provider.oauth2_backends import get_oauthlib_core
from oauth2_provider.views import RevokeTokenView, TokenView
from oauthlib.oauth2 import OAuth2Error
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error, InvalidRequestError

from accounts.binding import SpaceBindingForm
from accounts.models import OAuthClient
from accounts.oauth import scopes
from accounts.oauth.client_metadata import OAuthClientError
from accounts.oauth.clients import client_for_id
from accounts.oauth.connections import connection_binding_claims, connection_name
from accounts.oauth.cors import allow_any_origin
from accounts.oauth.urls_for import issuer, mcp_resource
from accounts.reach import reach_of
from gnosem.errors import NotFound, ValidationError

TEMPLATE = "accounts/oauth_authorize.html"
MAX_CLIENT_ID_CHARS: int = OAuthClient._meta.get_field("client_id").max_length


def _same_resource(given: str, ours: str) -> bool:
    # A trailing slash is the only spelling difference allowed: the resource is a URL we publish.
    return given.rstrip("/") == ours


def _resource_error(request: HttpRequest, given: list[str]) -> str | None:
    """Why the `resource` parameters (RFC 8707) name something else than our MCP endpoint, if they do."""
    ours = mcp_resource(request)
    others = [value for value in given if not _same_resource(value, ours)]
    if not others:
        return None
    return f"This server issues tokens for {ours} only, not for {others[0]}."


def _with_iss(uri: str, request: HttpRequest) -> str:
    """The redirect with the issuer added to its query (RFC 9207), replacing any `iss` there."""
    parts = urlsplit(uri)
    query = [(key, value) for key, value in parse_qsl(parts.query, keep_blank_values=True) if key != "iss"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("iss", issuer(request))])))


def _redirect(uri: str, client: OAuthClient, request: HttpRequest) -> HttpResponse:
    return OAuth2ResponseRedirect(_with_iss(uri, request), client.get_allowed_schemes())


def _error_redirect(error: OAuth2Error, client: OAuthClient, request: HttpRequest) -> HttpResponse:
    """An error sent back to the client's (already verified) redirect URI, with its state."""
    if error.redirect_uri is None:  # oauthlib sets it on every error it leaves to the client: never guess one
        raise error
    return _redirect(error.in_uri(error.redirect_uri), client, request)


def _error_page(request: HttpRequest, error: str, description: str) -> HttpResponse:
    """An error shown to the user, not the client: the redirect URI is unknown or not to be trusted."""
    return render(request, TEMPLATE, {"error": error, "description": description}, status=400)


def _request_problem(request: HttpRequest, credentials: dict) -> OAuth2Error | None:
    """What oauthlib lets through and Gnosem refuses: PKCE other than S256, another resource."""
    state = credentials.get("state")
    if credentials.get("code_challenge_method") != "S256":
        return InvalidRequestError(
            description="PKCE with code_challenge_method=S256 is required; plain is not supported.", state=state
        )
    problem = _resource_error(request, request.GET.getlist("resource"))
    if problem:
        return CustomOAuth2Error(error="invalid_target", description=problem, state=state)
    return None


def _access_wording(requested: list[str]) -> str:
    if scopes.WRITE in requested:
        return "Read, write and delete your memories"
    return "Read your memories"


@require_http_methods(["GET", "POST"])
def authorize(request: HttpRequest) -> HttpResponse:
    """GET: the consent page for a valid request; POST (from that page): Allow, with the spaces the
    connection is to reach, or Deny, answered by a redirect to the client (a choice of spaces the
    user is not a member of is shown back with what was wrong, and grants nothing). The request's
    parameters stay in the URL throughout."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if any("\x00" in value for _key, values in request.GET.lists() for value in values):
        return _error_page(request, "invalid_request", "The request holds a NUL character.")
    client_id = request.GET.get("client_id", "")
    if not client_id or len(client_id) > MAX_CLIENT_ID_CHARS:
        return _error_page(request, "invalid_request", "The application sent no client_id, or not one of ours.")
    try:
        client = client_for_id(client_id, request=request)
    except OAuthClientError as error:
        return _error_page(request, error.error, error.description)
    core = get_oauthlib_core()
    try:
        requested, credentials = core.validate_authorization_request(request)
    except FatalClientError as error:  # unknown client or redirect URI: never redirect there
        return _error_page(request, error.oauthlib_error.error, error.oauthlib_error.description)
    except OAuthToolkitError as error:
        return _error_redirect(error.oauthlib_error, client, request)
    problem = _request_problem(request, credentials)
    if problem is not None:
        problem.redirect_uri = credentials["redirect_uri"]
        return _error_redirect(problem, client, request)
    credentials["resource"] = [mcp_resource(request)]
    reach = reach_of(request.user)
    consent = {
        "client_name": connection_name(client),
        "client_id": client.client_id,
        "cimd": client.registration_source == OAuthClient.RegistrationSource.CIMD,
        "redirect_host": urlsplit(credentials["redirect_uri"]).netloc,
        "access": _access_wording(requested),
        "can_write": scopes.WRITE in requested,
        "offline": scopes.OFFLINE_ACCESS in requested,
        "binding": SpaceBindingForm(choices=reach.spaces),
    }
    if request.method == "GET":
        return render(request, TEMPLATE, consent)
    allow = request.POST.get("decision") == "allow"
    granted = scopes.read_only(requested) if request.POST.get("read_only") else requested
    if allow:
        form = SpaceBindingForm.from_post(reach, request.POST)
        try:
            credentials["claims"] = connection_binding_claims(form.binding(reach))
        except (ValidationError, NotFound) as error:
            refused = {"binding": form, "binding_error": error, "read_only": bool(request.POST.get("read_only"))}
            return render(request, TEMPLATE, {**consent, **refused}, status=400)
    try:
        uri, _headers, _body, _status = core.create_authorization_response(request, granted, credentials, allow)
    except OAuthToolkitError as error:
        return _error_redirect(error.oauthlib_error, client, request)
    return _redirect(uri, client, request)


GRANT_TYPES = ("authorization_code", "refresh_token")
_token_view = TokenView.as_view()
# oauthlib answers these without saying why; what each means for the client, in its words.
_DESCRIPTIONS = {
    "invalid_grant": "The authorization code or refresh token is unknown, expired, already used, revoked or "
    "issued to another client, or the code_verifier does not match the code_challenge. Authorize again.",
    "invalid_client": "Unknown client, or its credentials are wrong: register again.",
    "unauthorized_client": "This client may use the authorization_code and refresh_token grants only.",
    "unsupported_grant_type": "Use grant_type authorization_code or refresh_token.",
    "invalid_scope": "Ask for memories:read, memories:write or offline_access, and on refresh no more than "
    "was granted.",
}
_revoke_view = RevokeTokenView.as_view()


@allow_any_origin
@csrf_exempt
@require_POST
def token(request: HttpRequest) -> HttpResponse:
    """The toolkit's token endpoint (code exchange, refresh with rotation) for our resource only."""
    if request.POST.get("grant_type") not in GRANT_TYPES:
        # Only these two reach the toolkit: its others are not ours to offer (and its device
        # flow fails on a request without a device_code).
        return _token_error("unsupported_grant_type", _DESCRIPTIONS["unsupported_grant_type"])
    problem = _resource_error(request, request.POST.getlist("resource"))
    if problem:
        return _token_error("invalid_target", problem)
    if request.POST.getlist("resource"):
        # The toolkit compares the resource with the grant's exactly: give it ours as stored.
        post = request.POST.copy()
        post.setlist("resource", [mcp_resource(request)])
        request.POST = post  # type: ignore[assignment]  # the stubs make POST read-only; the toolkit reads it here
    return _described(_token_view(request))


def _token_error(error: str, description: str) -> JsonResponse:
    return JsonResponse(
        {"error": error, "error_description": description}, status=400, headers={"Cache-Control": "no-store"}
    )


def _described(response: HttpResponse) -> HttpResponse:
    """The token endpoint's error with an error_description when oauthlib gave none."""
    if response.status_code < 400 or response.get("Content-Type", "").split(";")[0] != "application/json":
        return response
    body = json.loads(response.content)
    if body.get("error_description") or body.get("error") not in _DESCRIPTIONS:
        return response
    body["error_description"] = _DESCRIPTIONS[body["error"]]
    response.content = json.dumps(body)
    return response


@allow_any_origin
@csrf_exempt
@require_POST
def revoke(request: HttpRequest) -> HttpResponse:
    """RFC 7009, the toolkit's view: ending a family ends its connection (the validator)."""
    return _revoke_view(request)
