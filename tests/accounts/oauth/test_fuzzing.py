"""OAuth fuzzing: hypothesis-generated requests to every OAuth endpoint a stranger can reach
(registration, authorization with its consent answer, token, revocation, the discovery
documents), and client metadata documents for the consent page to fetch. Whatever is sent, the
answer is never a 5xx, and the JSON endpoints answer a refusal with an RFC error code. Real values
(a registered client, its redirect URI, a live code, verifier and refresh token) are mixed with
hostile ones, so that requests get past the first checks. Registration bodies and metadata
documents get the hostile values the MCP and REST suites send (tests/fuzzing.py): lone
surrogates, JSON nested thousands deep, numbers of thousands of digits.

Bounded by EXAMPLES per test to keep `make test` quick; the counts are printed in the run's
output. Each request runs in a savepoint that is rolled back, so a code used by one example is
fresh for the next.
"""

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.db import transaction
from django.test import Client
from hypothesis import given, note
from hypothesis import strategies as st

from accounts.models import OAuthClient
from tests.accounts.oauth.document_server import DocumentServer, body_answer
from tests.accounts.oauth.grants import (
    REDIRECT_URI,
    RESOURCE,
    Authorization,
    code_for,
    granted_tokens,
    registered_client,
)
from tests.fuzzing import HOSTILE_JSON_VALUES, LONE_SURROGATES, fuzz_settings, report_line, with_member
from tests.fuzzing import HOSTILE_STRINGS as SHARED_HOSTILE_STRINGS

EXAMPLES = 150
FUZZ_SETTINGS = fuzz_settings(EXAMPLES)
TALLY: Counter[str] = Counter()

# Besides the shared ones: URLs a client might try as a redirect URI or a client_id, and PKCE
# and scope values the server must refuse.
HOSTILE_STRINGS = [
    *SHARED_HOSTILE_STRINGS,
    "https://",
    "https://evil.example/cb",
    "http://127.0.0.1:1/cb",
    "javascript:alert(1)",
    "https://[::1",
    "https://user@assistant.example/oauth/callback",
    "https://assistant.example/oauth/callback#frag",
    "https://169.254.169.254/latest/meta-data",
    "plain",
    "S256",
    "memories:read memories:write offline_access admin",
]
# Form values: text without lone surrogates (a form body is UTF-8 by the time it is sent).
form_text = st.one_of(
    st.sampled_from(HOSTILE_STRINGS),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=30),
)
# JSON text also carries what a form cannot: lone surrogates, which json.dumps escapes.
json_text = st.one_of(form_text, st.sampled_from(LONE_SURROGATES))
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=False),
    json_text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(json_text, inner, max_size=3),
    max_leaves=8,
)

TOKEN_FIELDS = (
    "grant_type",
    "code",
    "redirect_uri",
    "client_id",
    "code_verifier",
    "refresh_token",
    "resource",
    "scope",
)
AUTHORIZE_FIELDS = (
    "response_type",
    "client_id",
    "redirect_uri",
    "code_challenge",
    "code_challenge_method",
    "state",
    "scope",
    "resource",
)
METADATA_FIELDS = (
    "redirect_uris",
    "client_name",
    "grant_types",
    "response_types",
    "token_endpoint_auth_method",
    "client_id",
    "scope",
    "logo_uri",
)


@pytest.fixture(scope="module", autouse=True)
def report_counts(request) -> Iterator[None]:
    """Print what the fuzzing tried, for the record."""
    yield
    report_line(
        request.config,
        f"OAuth fuzzing: {TALLY['cases']} requests ({TALLY['2xx']} 2xx, {TALLY['3xx']} redirects, "
        f"{TALLY['4xx']} refused), {TALLY['5xx']} answered 5xx",
    )


@pytest.fixture
def real(owner, settings) -> dict[str, Any]:
    """Live values for the fuzzed requests to build on: a client, a code for it, its verifier and
    a granted refresh token. Registration is not rate-limited here, so every example reaches it."""
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "oauth_register": ""}
    client = registered_client("Fuzzed assistant")
    browser = Client()
    browser.force_login(owner)
    authorization = Authorization(client)
    return {
        "client": client,
        "browser": browser,
        "authorization": authorization,
        "code": code_for(browser, authorization),
        "refresh_token": granted_tokens(owner, client)["refresh_token"],
    }


def real_values(real: dict[str, Any]) -> dict[str, str]:
    authorization: Authorization = real["authorization"]
    client: OAuthClient = real["client"]
    return {
        "grant_type": "authorization_code",
        "code": real["code"],
        "redirect_uri": REDIRECT_URI,
        "client_id": client.client_id,
        "code_verifier": authorization.verifier,
        "refresh_token": real["refresh_token"],
        "resource": RESOURCE,
        "scope": "memories:read memories:write",
        **authorization.params(),
    }


def params(fields: tuple[str, ...], real: dict[str, Any]) -> st.SearchStrategy[list[tuple[str, str]]]:
    """A request that is valid but for one or two hostile values, or with some fields left out,
    or any mix of fields and values at all."""
    known = real_values(real)
    grant = st.sampled_from(["authorization_code", "refresh_token"])
    base = grant.map(
        lambda grant_type: {name: grant_type if name == "grant_type" else known.get(name, "") for name in fields}
    )
    hostile_pairs = st.lists(st.tuples(st.sampled_from(fields), form_text), min_size=1, max_size=2)
    spoiled = st.tuples(base, hostile_pairs).map(lambda both: {**both[0], **dict(both[1])})
    missing = st.tuples(base, st.sets(st.sampled_from(fields))).map(
        lambda both: {name: value for name, value in both[0].items() if name not in both[1]}
    )
    pair = st.sampled_from(fields).flatmap(
        lambda name: st.tuples(st.just(name), st.one_of(st.just(known.get(name, "")), form_text))
    )
    anything = st.lists(st.one_of(pair, pair, st.tuples(form_text, form_text)), max_size=len(fields) + 2)
    as_pairs = st.one_of(spoiled, spoiled, missing).map(lambda values: list(values.items()))
    return st.one_of(as_pairs, as_pairs, anything)


def raw_form(pairs: list[tuple[str, str]]) -> st.SearchStrategy[bytes]:
    """The pairs form-encoded, or the same with raw bytes (non-UTF-8 escapes) appended."""
    body = urlencode(pairs).encode()
    return st.one_of(st.just(body), st.binary(max_size=20).map(lambda junk: body + b"&x=" + quote(junk).encode()))


def check(response, *, json_errors: bool) -> None:
    """No 5xx; a JSON endpoint's refusal says its RFC error code."""
    TALLY["cases"] += 1
    TALLY[f"{response.status_code // 100}xx"] += 1
    assert response.status_code < 500, response.content[:2_000]
    if json_errors and response.status_code >= 400 and response.status_code != 405:
        assert isinstance(json.loads(response.content).get("error"), str), response.content[:2_000]


def send(method: str, browser: Client, path: str, **kwargs):
    note(f"{method} {path} {kwargs!r}"[:2_000])
    with transaction.atomic():
        response = getattr(browser, method)(path, **kwargs)
        transaction.set_rollback(True)
    return response


@pytest.mark.django_db
@FUZZ_SETTINGS
@given(data=st.data())
def test_the_token_endpoint_never_answers_5xx(real, data):
    body = data.draw(params(TOKEN_FIELDS, real).flatmap(raw_form))
    response = send("post", Client(), "/oauth/token", data=body, content_type="application/x-www-form-urlencoded")
    check(response, json_errors=True)


@pytest.mark.django_db
@FUZZ_SETTINGS
@given(data=st.data())
def test_the_revocation_endpoint_never_answers_5xx(real, data):
    body = data.draw(params(("token", "token_type_hint", "client_id"), real).flatmap(raw_form))
    response = send("post", Client(), "/oauth/revoke", data=body, content_type="application/x-www-form-urlencoded")
    check(response, json_errors=False)  # RFC 7009: 200 for unknown tokens, the toolkit's own errors


def metadata_bodies(fixed: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """Client metadata as JSON: `fixed`'s fields (real values or hostile ones) and any of the
    others, or any JSON value at all; spoiled now and then by a value that strains a JSON reader
    (HOSTILE_JSON_VALUES), or replaced by bytes that are not JSON."""
    document = st.fixed_dictionaries(
        {name: st.one_of(st.just(value), json_values) for name, value in fixed.items()},
        optional={field: json_values for field in METADATA_FIELDS if field not in fixed},
    )
    as_json = st.one_of(document, document, json_values).map(lambda value: json.dumps(value).encode())
    spoiled = st.builds(with_member, document, st.sampled_from(HOSTILE_JSON_VALUES))
    return st.one_of(as_json, as_json, spoiled, st.binary(max_size=30))


@pytest.mark.django_db
@FUZZ_SETTINGS
@given(data=st.data())
def test_registration_never_answers_5xx(real, data):
    body = data.draw(metadata_bodies({"redirect_uris": [REDIRECT_URI]}))
    response = send("post", Client(), "/oauth/register", data=body, content_type="application/json")
    check(response, json_errors=True)


@pytest.fixture
def document_server(settings) -> Iterator[DocumentServer]:
    """Where the fuzzed metadata documents are served from; fetches are not rate-limited here."""
    settings.GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP = True
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "oauth_cimd_fetch": ""}
    server = DocumentServer()
    yield server
    server.close()


@pytest.mark.django_db
@FUZZ_SETTINGS
@given(data=st.data())
def test_the_consent_page_never_answers_5xx_for_a_metadata_document(real, document_server, data):
    """The same bodies as registration's, served as the client metadata document at a client_id."""
    url = document_server.url
    fixed = {"client_id": url, "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
    document_server.answer = body_answer(data.draw(metadata_bodies(fixed)))
    authorization: Authorization = real["authorization"]
    query = urlencode({**authorization.params(), "client_id": url})
    check(send("get", real["browser"], f"/oauth/authorize?{query}"), json_errors=False)  # an error page


@pytest.mark.django_db
@FUZZ_SETTINGS
@given(data=st.data())
def test_authorization_and_its_answer_never_answer_5xx(real, data):
    query = urlencode(data.draw(params(AUTHORIZE_FIELDS, real)))
    method = data.draw(st.sampled_from(["get", "post"]))
    answer = data.draw(
        st.fixed_dictionaries({}, optional={"decision": st.sampled_from(["allow", "deny", ""]), "read_only": form_text})
    )
    response = send(
        method, real["browser"], f"/oauth/authorize?{query}", **({"data": answer} if method == "post" else {})
    )
    check(response, json_errors=False)  # refusals are an error page or a redirect to the client


@pytest.mark.django_db
@FUZZ_SETTINGS
@given(
    path=st.sampled_from(
        [
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
        ]
    ),
    query=st.lists(st.tuples(form_text, form_text), max_size=3),
)
def test_the_discovery_documents_never_answer_5xx(path, query):
    check(send("get", Client(), f"{path}?{urlencode(query)}"), json_errors=False)
