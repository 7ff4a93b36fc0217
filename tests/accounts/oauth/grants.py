"""The client's side of an OAuth grant, driven through the Django test client: a client registered
as Dynamic Client Registration leaves it, PKCE, the consent page and the token endpoint."""

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from django.test import Client

from accounts.models import OAuthClient

REDIRECT_URI = "https://assistant.example/oauth/callback"
RESOURCE = "http://testserver/mcp"
ISSUER = "http://testserver"


def registered_client(name: str = "Assistant", redirect_uris: tuple[str, ...] = (REDIRECT_URI,)) -> OAuthClient:
    """A public client, as /oauth/register makes one."""
    return OAuthClient.objects.create(
        name=name,
        redirect_uris=" ".join(redirect_uris),
        client_type=OAuthClient.CLIENT_PUBLIC,
        authorization_grant_type=OAuthClient.GRANT_AUTHORIZATION_CODE,
        registration_source=OAuthClient.RegistrationSource.DCR,
        client_secret="",
        hash_client_secret=False,
    )


def challenge_for(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


@dataclass
class Authorization:
    """One authorization request's parameters, with its PKCE verifier."""

    client: OAuthClient
    verifier: str = field(default_factory=lambda: secrets.token_urlsafe(48))
    scope: str | None = "memories:read memories:write offline_access"
    state: str = field(default_factory=lambda: secrets.token_urlsafe(8))
    redirect_uri: str = REDIRECT_URI
    resource: str | None = RESOURCE
    extra: dict[str, str] = field(default_factory=dict)

    def params(self) -> dict[str, str]:
        params = {
            "response_type": "code",
            "client_id": self.client.client_id,
            "redirect_uri": self.redirect_uri,
            "code_challenge": challenge_for(self.verifier),
            "code_challenge_method": "S256",
            "state": self.state,
        }
        if self.scope is not None:
            params["scope"] = self.scope
        if self.resource is not None:
            params["resource"] = self.resource
        params.update(self.extra)
        return {key: value for key, value in params.items() if value is not None}

    @property
    def url(self) -> str:
        return "/oauth/authorize?" + urlencode(self.params())


def redirect_params(response, redirect_uri: str = REDIRECT_URI) -> dict[str, str]:
    """The query parameters of a redirect back to the client."""
    assert response.status_code == 302, response.content
    location = response["Location"]
    assert location.startswith(redirect_uri + "?"), location
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def consent(browser: Client, authorization: Authorization, decision: str = "allow", read_only: bool = False):
    """The user's answer on the consent page (the page is shown first, as a browser would)."""
    page = browser.get(authorization.url)
    assert page.status_code == 200, page.content
    data = {"decision": decision, **({"read_only": "1"} if read_only else {})}
    return browser.post(authorization.url, data)


def code_for(browser: Client, authorization: Authorization, read_only: bool = False) -> str:
    params = redirect_params(consent(browser, authorization, read_only=read_only), authorization.redirect_uri)
    assert params["state"] == authorization.state and params["iss"] == ISSUER
    return params["code"]


def token_request(data: dict[str, Any]):
    return Client().post("/oauth/token", data)


def exchange(authorization: Authorization, code: str, /, **overrides: str | None):
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": authorization.redirect_uri,
        "client_id": authorization.client.client_id,
        "code_verifier": authorization.verifier,
        "resource": RESOURCE,
        **overrides,
    }
    return token_request({key: value for key, value in data.items() if value is not None})


def refresh(client: OAuthClient, refresh_token: str, /, **overrides: str):
    return token_request(
        {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client.client_id, **overrides}
    )


def granted_tokens(user, client: OAuthClient | None = None, read_only: bool = False) -> dict[str, Any]:
    """A completed grant for `user`: the token endpoint's answer (access_token, refresh_token...)."""
    browser = Client()
    browser.force_login(user)
    client = client or registered_client()
    authorization = Authorization(client, redirect_uri=client.redirect_uris.split()[0])
    response = exchange(authorization, code_for(browser, authorization, read_only=read_only))
    assert response.status_code == 200, response.content
    return response.json()
