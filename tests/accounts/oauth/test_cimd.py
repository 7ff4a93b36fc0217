"""The Client ID Metadata Document fetcher against real local HTTP(S) servers: what it accepts,
and every way a document (or its URL) is refused, each with its reason."""

import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from accounts.oauth import cimd
from accounts.oauth.cimd import address_is_public, cache_seconds, fetch_client_metadata
from accounts.oauth.client_metadata import OAuthClientError
from tests.accounts.oauth.conftest import ClientMetadataHost
from tests.accounts.oauth.document_server import DocumentServer, json_answer


@pytest.fixture
def loopback_allowed(settings):
    settings.GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP = True


@pytest.fixture
def server() -> Iterator[DocumentServer]:
    server = DocumentServer()
    yield server
    server.close()


@pytest.fixture
def short_fetches(monkeypatch):
    """Fetches give up after half a second, so that the tests about slow servers are quick."""
    monkeypatch.setattr(cimd, "FETCH_SECONDS", 0.5)


def refusal(url: str) -> OAuthClientError:
    with pytest.raises(OAuthClientError) as caught:
        fetch_client_metadata(url)
    return caught.value


def test_it_reads_a_valid_document_and_how_long_to_keep_it(loopback_allowed, server):
    server.answer = json_answer(
        server.document(redirect_uris=["https://assistant.example/callback", "http://127.0.0.1:8765/cb"]),
        cache_control="public, max-age=600",
    )
    fetched = fetch_client_metadata(server.url)
    assert fetched.metadata.client_name == "Assistant"
    assert fetched.metadata.redirect_uris == ("https://assistant.example/callback", "http://127.0.0.1:8765/cb")
    assert fetched.metadata.token_endpoint_auth_method == "none"
    assert fetched.cache_seconds == 600
    assert server.requests == [{"path": "/clients/assistant.json", "host": f"127.0.0.1:{server.port}"}]


def test_a_document_without_client_name_is_named_after_its_host(loopback_allowed, server):
    document = server.document()
    del document["client_name"]
    server.answer = json_answer(document)
    assert fetch_client_metadata(server.url).metadata.client_name == "127.0.0.1"


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, 3600),
        ("max-age=7200", 7200),
        ("public, max-age=10", 300),
        ("max-age=9999999", 86400),
        ("no-store", 300),
        ("no-cache, max-age=7200", 300),
        ("max-age=soon", 3600),
    ],
)
def test_the_cache_lifetime_follows_cache_control_within_five_minutes_and_a_day(header, seconds):
    assert cache_seconds(header) == seconds


def test_loopback_and_http_are_refused_without_the_setting(server):
    https_url = server.url.replace("http://", "https://")
    assert "non-public address" in refusal(https_url).description
    assert "must start with https://" in refusal(server.url).description
    assert server.requests == []


def test_a_name_that_resolves_to_loopback_is_refused(server):
    error = refusal(f"https://localhost:{server.port}/clients/assistant.json")
    assert error.error == "invalid_client"
    assert "localhost resolves to" in error.description
    assert server.requests == []


@pytest.mark.parametrize(
    "host",
    [
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # carrier-grade NAT
        "127.0.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "[::1]",
        "[::]",
        "[fd00::1]",
        "[fe80::1]",
        "[ff02::1]",
        "[::ffff:10.0.0.1]",  # IPv4-mapped
        "[::ffff:127.0.0.1]",
        "[64:ff9b::a00:1]",  # NAT64 of 10.0.0.1
        "[2002:a00:1::]",  # 6to4 of 10.0.0.1
    ],
)
def test_private_loopback_link_local_multicast_and_reserved_addresses_are_refused(host):
    error = refusal(f"https://{host}/clients/assistant.json")
    assert "non-public address" in error.description


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700:4700::1111", "::ffff:93.184.215.14"])
def test_public_addresses_pass(address):
    assert address_is_public(address)


def test_the_connection_goes_to_the_address_that_was_checked_and_names_the_host(loopback_allowed, server, monkeypatch):
    """A second lookup could answer otherwise (DNS rebinding): there is none."""
    real_getaddrinfo = socket.getaddrinfo
    lookups = []

    def rebinding_getaddrinfo(host, port, *args, **kwargs):
        if host != "metadata.test":
            return real_getaddrinfo(host, port, *args, **kwargs)
        lookups.append(host)
        address = "127.0.0.1" if len(lookups) == 1 else "10.255.255.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding_getaddrinfo)
    url = f"http://metadata.test:{server.port}/clients/assistant.json"
    server.answer = json_answer(server.document(url))
    assert fetch_client_metadata(url).metadata.client_name == "Assistant"
    assert lookups == ["metadata.test"]
    assert server.requests == [{"path": "/clients/assistant.json", "host": f"metadata.test:{server.port}"}]


def test_https_is_verified_against_the_configured_authorities_by_host_name(client_metadata_host: ClientMetadataHost):
    """The fixture trusts its own authority (GNOSEM_OAUTH_CIMD_CA_BUNDLE)."""
    url = client_metadata_host.url.replace("127.0.0.1", "localhost")  # the certificate names both
    client_metadata_host.document = {"client_id": url, "redirect_uris": ["https://assistant.example/callback"]}
    assert fetch_client_metadata(url).metadata.redirect_uris == ("https://assistant.example/callback",)
    assert client_metadata_host.fetches == 1


def test_a_certificate_from_an_unknown_authority_is_refused(settings, client_metadata_host):
    settings.GNOSEM_OAUTH_CIMD_CA_BUNDLE = None  # the system's authorities only
    error = refusal(client_metadata_host.url)
    assert "its certificate could not be verified" in error.description
    assert client_metadata_host.fetches == 0


def test_a_declared_10_mb_document_is_refused_without_being_read(loopback_allowed, server):
    def ten_megabytes(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(10 * 1024 * 1024))
        handler.end_headers()
        for _ in range(160):
            handler.wfile.write(b" " * 65536)

    server.answer = ten_megabytes
    started = time.monotonic()
    assert "larger than 64 KiB" in refusal(server.url).description
    assert time.monotonic() - started < 2


def test_an_endless_document_is_cut_at_64_kib(loopback_allowed, server):
    """Without a declared length, reading stops past the limit rather than waiting for the end."""

    def endless(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Connection", "close")
        handler.end_headers()
        while not server.released.is_set():
            handler.wfile.write(b" " * 65536)

    server.answer = endless
    started = time.monotonic()
    assert "larger than 64 KiB" in refusal(server.url).description
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    ("body", "reason"),
    [(b"{not json", "not valid JSON"), (b"\xff\xfe{}", "not UTF-8 text"), (b"[1, 2]", "not a JSON object")],
)
def test_a_document_that_is_not_a_json_object_is_refused(loopback_allowed, server, body, reason):
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    server.answer = answer
    error = refusal(server.url)
    assert (error.error, reason in error.description) == ("invalid_client", True)


def test_a_document_for_another_client_id_is_refused(loopback_allowed, server):
    server.answer = json_answer(server.document("https://elsewhere.example/client.json"))
    error = refusal(server.url)
    assert error.error == "invalid_client"
    assert "gives another client_id" in error.description


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "http://assistant.example/callback",
        "https://assistant.example/callback#fragment",
        "https://user@assistant.example/callback",
        "cursor://oauth/callback",
        "https:///no-host",
        "https://assistant.example/with space",
    ],
)
def test_a_redirect_uri_that_is_neither_https_nor_loopback_http_is_refused(loopback_allowed, server, redirect_uri):
    server.answer = json_answer(server.document(redirect_uris=["https://assistant.example/ok", redirect_uri]))
    error = refusal(server.url)
    assert error.error == "invalid_redirect_uri"
    assert "use an https URL, or http://localhost" in error.description


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ({"token_endpoint_auth_method": "client_secret_post"}, "token_endpoint_auth_method 'client_secret_post'"),
        ({"client_secret": "s3cret"}, "must not carry a client_secret"),
        ({"redirect_uris": []}, "redirect_uris is empty"),
        ({"redirect_uris": "https://assistant.example/callback"}, "must be a list"),
        ({"grant_types": ["client_credentials"]}, "grant_types 'client_credentials' not supported"),
        ({"response_types": ["token"]}, "response_types 'token' not supported"),
        ({"client_name": 42}, "client_name must be a string"),
    ],
)
def test_metadata_a_public_client_cannot_have_is_refused(loopback_allowed, server, metadata, reason):
    server.answer = json_answer(server.document(**metadata))
    error = refusal(server.url)
    assert error.error in ("invalid_client_metadata", "invalid_redirect_uri")
    assert reason in error.description


def test_a_server_that_stalls_is_given_up_on(loopback_allowed, server, short_fetches):
    server.answer = lambda handler: server.released.wait(10)
    started = time.monotonic()
    assert "did not arrive within 0.5 seconds" in refusal(server.url).description
    assert time.monotonic() - started < 1.5


def test_a_server_that_sends_a_byte_now_and_then_is_given_up_on_at_the_deadline(
    loopback_allowed, server, short_fetches
):
    """Every read is quick, but the whole fetch has one deadline."""

    def drip(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Connection", "close")
        handler.end_headers()
        while not server.released.wait(0.05):
            handler.wfile.write(b" ")
            handler.wfile.flush()

    server.answer = drip
    started = time.monotonic()
    assert "did not arrive within 0.5 seconds" in refusal(server.url).description
    assert time.monotonic() - started < 1.5


def test_a_host_name_that_takes_too_long_to_resolve_is_given_up_on(loopback_allowed, short_fetches, monkeypatch):
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: time.sleep(2))
    started = time.monotonic()
    assert "took too long" in refusal("https://slow-dns.example/client.json").description
    assert time.monotonic() - started < 1.5


def test_a_host_name_that_does_not_resolve_is_refused(monkeypatch):
    def no_such_host(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    assert "does not resolve" in refusal("https://nowhere.example/client.json").description


def test_redirects_are_not_followed(loopback_allowed, server):
    def redirect(handler: BaseHTTPRequestHandler) -> None:
        if handler.path == "/moved.json":
            json_answer(server.document())(handler)
            return
        handler.send_response(302)
        handler.send_header("Location", f"http://127.0.0.1:{server.port}/moved.json")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    server.answer = redirect
    assert "redirects (HTTP 302)" in refusal(server.url).description
    assert [request["path"] for request in server.requests] == ["/clients/assistant.json"]


def test_an_error_status_is_refused(loopback_allowed, server):
    server.answer = lambda handler: handler.send_error(404)
    assert "answered HTTP 404" in refusal(server.url).description


def test_nothing_listening_is_refused(loopback_allowed):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    assert "accepts connections" in refusal(f"http://127.0.0.1:{port}/client.json").description


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://assistant.example/client.json", "must start with https://"),
        ("https://assistant.example/client.json#me", "neither a user name nor a fragment"),
        ("https://me@assistant.example/client.json", "neither a user name nor a fragment"),
        ("https://assistant.example/", "needs a path"),
        ("https://assistant.example/a/../client.json", "without . or .. segments"),
        ("https://assistant.example:99999/client.json", "not a valid URL"),
        ("https://assistant.example/" + "a" * 2048, "at most 2048 characters"),
    ],
)
def test_a_url_that_cannot_be_a_client_id_is_refused_before_any_lookup(url, reason, monkeypatch):
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: pytest.fail("looked up"))
    assert reason in refusal(url).description
