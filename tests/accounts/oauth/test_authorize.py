"""/oauth/authorize: sign-in first, the consent page, Allow / Deny / Read only, and every request
refused with its RFC error: back to the client when its redirect URI is known, else on the page."""

import html
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from oauth2_provider.models import get_grant_model

from tests.accounts.email_confirmation import PASSWORD, confirm
from tests.accounts.oauth.grants import ISSUER, Authorization, consent, redirect_params, registered_client

Grant = get_grant_model()


def test_a_visitor_signs_in_first_and_comes_back_to_the_same_request(client, assistant):
    authorization = Authorization(assistant)

    response = client.get(authorization.url)

    assert response.status_code == 302
    login = urlsplit(response["Location"])
    assert login.path == "/accounts/login/"
    assert parse_qs(login.query)["next"] == [authorization.url]
    page = client.get(response["Location"]).content.decode()
    assert "/accounts/signup/?next=" in page  # a new user signs up from there and comes back too


def test_a_new_visitor_signs_up_confirms_and_lands_on_the_consent_page(client, assistant):
    authorization = Authorization(assistant)
    login = client.get(authorization.url)["Location"]
    signup = client.get(login).content.decode()
    signup_url = html.unescape(re.search(r'href="(/accounts/signup/\?next=[^"]+)"', signup).group(1))

    client.post(signup_url, {"email": "new@example.com", "password1": PASSWORD, "password2": PASSWORD})
    confirmed = confirm(client, "new@example.com")

    assert confirmed.redirect_chain[-1][0] == authorization.url
    assert "Connect Claude to your memories?" in confirmed.content.decode()
    assert not Grant.objects.exists()


def test_the_consent_page_shows_the_client_where_it_sends_you_back_and_what_it_asks(owner_client, assistant):
    page = owner_client.get(Authorization(assistant).url)

    assert page.status_code == 200
    html = page.content.decode()
    assert "Connect Claude to your memories?" in html
    assert "<code>assistant.example</code>" in html
    assert "Read, write and delete your memories" in html
    assert "owner@example.com" in html
    assert 'name="read_only"' in html and ">Read only<" in html
    assert 'name="decision" value="allow">Allow<' in html and 'value="deny" class="secondary">Deny<' in html
    assert page["X-Frame-Options"] == "DENY"
    assert not Grant.objects.exists()


def test_a_client_asking_to_read_only_is_shown_just_that(owner_client, assistant):
    html = owner_client.get(Authorization(assistant, scope="memories:read").url).content.decode()

    assert "Read your memories" in html and 'name="read_only"' not in html


def test_allow_sends_the_code_back_with_the_state_and_the_issuer(owner_client, assistant):
    authorization = Authorization(assistant)

    params = redirect_params(consent(owner_client, authorization))

    assert set(params) == {"code", "state", "iss"}
    assert params["state"] == authorization.state
    assert params["iss"] == ISSUER
    grant = Grant.objects.get(code=params["code"])
    assert grant.scope == "memories:read memories:write offline_access"
    assert grant.resource == ["http://testserver/mcp"]
    assert grant.code_challenge_method == "S256"


def test_read_only_narrows_write_to_read(owner_client, assistant):
    params = redirect_params(consent(owner_client, Authorization(assistant), read_only=True))

    assert Grant.objects.get(code=params["code"]).scope == "memories:read offline_access"


def test_a_client_naming_no_scope_and_no_resource_gets_memories_for_this_server(owner_client, assistant):
    params = redirect_params(consent(owner_client, Authorization(assistant, scope=None, resource=None)))

    grant = Grant.objects.get(code=params["code"])
    assert (grant.scope, grant.resource) == ("memories:read memories:write", ["http://testserver/mcp"])


def test_the_resource_may_end_in_a_slash(owner_client, assistant):
    params = redirect_params(consent(owner_client, Authorization(assistant, resource="http://testserver/mcp/")))

    assert Grant.objects.get(code=params["code"]).resource == ["http://testserver/mcp"]


def test_deny_sends_access_denied_back_and_grants_nothing(owner_client, assistant):
    authorization = Authorization(assistant)

    params = redirect_params(consent(owner_client, authorization, decision="deny"))

    assert params["error"] == "access_denied"
    assert (params["state"], params["iss"]) == (authorization.state, ISSUER)
    assert "code" not in params
    assert not Grant.objects.exists()


def refused_back(owner_client: Client, authorization: Authorization) -> dict[str, str]:
    """The error a request gets at the client's redirect URI, checked to carry state and issuer."""
    params = redirect_params(owner_client.get(authorization.url))
    assert (params["state"], params["iss"]) == (authorization.state, ISSUER)
    assert "code" not in params
    return params


@pytest.mark.parametrize(
    ("extra", "error", "says"),
    [
        ({"code_challenge_method": "plain"}, "invalid_request", "S256"),
        ({"code_challenge_method": None}, "invalid_request", "S256"),
        ({"code_challenge": None}, "invalid_request", "challenge"),
        ({"resource": "https://elsewhere.example/mcp"}, "invalid_target", "https://elsewhere.example/mcp"),
        ({"resource": "http://testserver/api/v1"}, "invalid_target", "only"),
        ({"scope": "memories:read admin"}, "invalid_scope", ""),
        ({"response_type": "token"}, "unauthorized_client", ""),
        ({"response_type": "bogus"}, "unsupported_response_type", ""),
    ],
)
def test_a_bad_request_from_a_known_client_is_refused_at_its_redirect_uri(owner_client, assistant, extra, error, says):
    authorization = Authorization(assistant, extra=extra)
    if "resource" in extra:
        authorization.resource = extra.pop("resource")

    params = refused_back(owner_client, authorization)

    assert params["error"] == error
    assert says in params.get("error_description", "")
    assert not Grant.objects.exists()


def test_plain_pkce_is_refused_when_the_answer_is_posted_too(owner_client, assistant):
    authorization = Authorization(assistant, extra={"code_challenge_method": "plain"})

    params = redirect_params(owner_client.post(authorization.url, {"decision": "allow"}))

    assert params["error"] == "invalid_request"
    assert not Grant.objects.exists()


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "https://attacker.example/oauth/callback",
        "https://assistant.example/oauth/callback/../../steal",
        "https://assistant.example/oauth/callback?extra=1",
        "https://assistant.example/oauth/callback#fragment",
        "http://assistant.example/oauth/callback",
    ],
)
def test_a_redirect_uri_not_registered_is_an_error_page_never_a_redirect(owner_client, assistant, redirect_uri):
    response = owner_client.get(Authorization(assistant, redirect_uri=redirect_uri).url)

    assert response.status_code == 400
    assert "This application cannot connect" in response.content.decode()
    assert not Grant.objects.exists()


def test_a_client_with_two_redirect_uris_must_name_one(owner_client, db):
    two = registered_client(redirect_uris=("https://assistant.example/oauth/callback", "https://b.example/cb"))
    authorization = Authorization(two, extra={"redirect_uri": None})

    response = owner_client.get(authorization.url)

    assert response.status_code == 400


@pytest.mark.parametrize("client_id", ["", "no-such-client", "x" * 5000, "nul\x00byte"])
def test_an_unknown_client_is_an_error_page(owner_client, db, client_id):
    response = owner_client.get("/oauth/authorize", {"client_id": client_id, "response_type": "code"})

    assert response.status_code == 400
    assert "This application cannot connect" in response.content.decode()


def test_the_answer_must_come_from_the_consent_page_itself(owner, assistant):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)

    response = browser.post(Authorization(assistant).url, {"decision": "allow"})

    assert response.status_code == 403
    assert not Grant.objects.exists()


def test_a_signed_out_answer_grants_nothing(client, assistant):
    response = client.post(Authorization(assistant).url, {"decision": "allow"})

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert not Grant.objects.exists()
