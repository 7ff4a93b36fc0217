"""Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client whose
client_id is an https URL describes itself in the JSON document at that URL, which we fetch.

The URL is the client's to choose, so the fetch must not become a way into the server's own
network (SSRF) nor a way to hold a worker: the host name is resolved here and every address must
be public (GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP lifts this, and allows http, for tests and local use);
the connection goes to the address that was checked, never to a second lookup that could answer
otherwise (DNS rebinding), while TLS and the Host header still name the host; redirects are not
followed; the body stops at 64 KiB; and the whole fetch, DNS included, ends after 5 seconds.

The standard library's http.client rather than an HTTP client package: it lets us hand over a
socket we connected ourselves, which is how the checked address is pinned; and it is no new
dependency (httpx2 only comes with the openai package).
"""

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from accounts.oauth.client_metadata import ClientMetadata, OAuthClientError, client_metadata_clean
from gnosem.json_input import JsonInputError, load_json

MAX_DOCUMENT_BYTES = 64 * 1024
FETCH_SECONDS = 5.0
# Cache-Control max-age is honoured within these bounds; without one, a document is kept an hour.
MIN_CACHE_SECONDS, DEFAULT_CACHE_SECONDS, MAX_CACHE_SECONDS = 5 * 60, 60 * 60, 24 * 60 * 60
MAX_URL_LENGTH = 2048  # OAuthClient.client_id
_READ_BYTES = 16 * 1024
_REDIRECTS = (301, 302, 303, 307, 308)
# NAT64 (RFC 6052) addresses carry an IPv4 address in their last 32 bits.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# getaddrinfo has no timeout of its own: lookups run here and are waited for no longer than the fetch.
_resolver = ThreadPoolExecutor(max_workers=4, thread_name_prefix="cimd-dns")


@dataclass(frozen=True)
class ClientMetadataDocument:
    """A client's metadata as its document gives it, and how long it may be kept."""

    metadata: ClientMetadata
    cache_seconds: int


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str
    port: int
    path: str  # with the query


def is_client_metadata_url(client_id: str) -> bool:
    """Whether a client_id names a metadata document (DCR and operator-made ids never look like URLs)."""
    return client_id[:8].lower() == "https://" or client_id[:7].lower() == "http://"


def fetch_client_metadata(url: str) -> ClientMetadataDocument:
    """Fetch and check the metadata document at `url`, the client's id; raises OAuthClientError
    saying what is wrong."""
    target = _target(url)
    deadline = time.monotonic() + FETCH_SECONDS
    addresses = _addresses(target, deadline)
    body, cache_control = _get(url, target, addresses, deadline)
    document = _json_object(url, body)
    if document.get("client_id") != url:
        raise OAuthClientError(
            "invalid_client",
            f"The client metadata document at {url} gives another client_id; "
            "it must be the document's own URL, exactly.",
        )
    if "client_secret" in document or "client_secret_expires_at" in document:
        raise OAuthClientError(
            "invalid_client_metadata",
            "A client metadata document must not carry a client_secret: such clients are public.",
        )
    metadata = client_metadata_clean(document, auth_methods=("none",), default_name=target.host)
    return ClientMetadataDocument(metadata=metadata, cache_seconds=cache_seconds(cache_control))


def cache_seconds(cache_control: str | None) -> int:
    """How long to keep a document, from its Cache-Control header, within the bounds."""
    seconds = DEFAULT_CACHE_SECONDS
    for directive in (cache_control or "").lower().split(","):
        name, _, value = directive.strip().partition("=")
        if name in ("no-store", "no-cache"):
            return MIN_CACHE_SECONDS
        if name == "max-age" and value.strip().strip('"').isdigit():
            seconds = int(value.strip().strip('"'))
    return max(MIN_CACHE_SECONDS, min(seconds, MAX_CACHE_SECONDS))


def _refused(url: str, why: str) -> OAuthClientError:
    return OAuthClientError("invalid_client", f"The client metadata document at {url} cannot be used: {why}.")


def _target(url: str) -> _Target:
    """The URL's parts, if it is one a metadata document may live at (the draft's section 3)."""
    loopback_http = settings.GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP
    if len(url) > MAX_URL_LENGTH:
        raise OAuthClientError("invalid_client", f"A client_id URL may be at most {MAX_URL_LENGTH} characters long.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise _refused(url[:200], "it is not a valid URL") from None
    if parts.scheme != "https" and not (loopback_http and parts.scheme == "http"):
        raise _refused(url, "a client_id URL must start with https://")
    if not parts.hostname or parts.username is not None or parts.fragment or "#" in url:
        raise _refused(url, "a client_id URL needs a host, and neither a user name nor a fragment")
    if not parts.path.strip("/") or any(segment in (".", "..") for segment in parts.path.split("/")):
        raise _refused(url, "a client_id URL needs a path, without . or .. segments")
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return _Target(parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path)


def _addresses(target: _Target, deadline: float) -> list[str]:
    """The host's addresses; every one must be public unless loopback is allowed, so that a
    name answering with a private address besides a public one cannot reach inside."""
    try:
        found = _resolver.submit(socket.getaddrinfo, target.host, target.port, type=socket.SOCK_STREAM)
        infos = found.result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeoutError:
        raise OAuthClientError("invalid_client", f"Looking up {target.host} took too long.") from None
    except (OSError, UnicodeError):
        raise OAuthClientError("invalid_client", f"The host name {target.host} does not resolve.") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))  # an IP address: a str for TCP
    if not settings.GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP:
        for address in addresses:
            if not address_is_public(address):
                raise OAuthClientError(
                    "invalid_client",
                    f"{target.host} resolves to {address}, a private, loopback or otherwise non-public "
                    "address: a client metadata document must be on the public internet.",
                )
    return addresses


def address_is_public(address: str) -> bool:
    """A globally routable unicast address. IPv6 forms that carry an IPv4 address (IPv4-mapped,
    6to4, Teredo, NAT64) are judged by that address, which could otherwise be an internal one."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.teredo is not None:
            return all(address_is_public(str(part)) for part in ip.teredo)
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return address_is_public(str(embedded))
    return ip.is_global and not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or getattr(ip, "is_site_local", False)  # IPv6's deprecated fec0::/10
    )


def _get(url: str, target: _Target, addresses: list[str], deadline: float) -> tuple[bytes, str | None]:
    """GET the document from the first address that answers: (body, Cache-Control)."""
    with contextlib.ExitStack() as cleanup:
        try:
            sock = _connect(url, target, addresses, deadline, cleanup)
            connection = http.client.HTTPConnection(target.host, target.port)
            connection.default_port = 443 if target.scheme == "https" else 80  # Host: without a default port
            connection.sock = sock
            cleanup.callback(connection.close)
            sock.settimeout(_remaining(deadline))  # no single read waits longer; the watchdog ends the whole
            connection.request("GET", target.path, headers={"Accept": "application/json", "User-Agent": "Gnosem"})
            response = connection.getresponse()
            if response.status in _REDIRECTS:
                raise _refused(url, f"it redirects (HTTP {response.status}), and redirects are not followed")
            if response.status != 200:
                raise _refused(url, f"it answered HTTP {response.status}")
            declared = response.getheader("Content-Length", "")
            if declared.isdigit() and int(declared) > MAX_DOCUMENT_BYTES:
                raise _too_large(url)
            body = bytearray()
            while len(body) <= MAX_DOCUMENT_BYTES:
                chunk = response.read(min(_READ_BYTES, MAX_DOCUMENT_BYTES + 1 - len(body)))
                if not chunk:
                    break
                body += chunk
        except (OSError, http.client.HTTPException) as exc:
            if time.monotonic() >= deadline:
                raise _timed_out(url) from None
            raise _refused(url, f"the connection failed ({type(exc).__name__})") from None
        if len(body) > MAX_DOCUMENT_BYTES:
            raise _too_large(url)
        if time.monotonic() >= deadline:  # cut off by the watchdog: what came is not the whole document
            raise _timed_out(url)
        return bytes(body), response.getheader("Cache-Control")


def _connect(
    url: str, target: _Target, addresses: list[str], deadline: float, cleanup: contextlib.ExitStack
) -> socket.socket:
    """A socket to the first checked address that accepts, TLS-wrapped for https, cut off at the
    deadline: per-read timeouts alone would let a server that sends a byte now and then hold us."""
    failure: Exception | None = None
    for address in addresses:
        try:
            raw = socket.create_connection((address, target.port), timeout=_remaining(deadline))
        except OSError as exc:
            failure = exc
            continue
        cleanup.callback(raw.close)
        # Shutting a duplicate down ends the connection under the TLS layer, from another thread.
        spare = raw.dup()
        cleanup.callback(spare.close)
        watchdog = threading.Timer(_remaining(deadline), _cut, (spare,))
        watchdog.daemon = True
        watchdog.start()
        cleanup.callback(watchdog.cancel)
        if target.scheme == "http":
            return raw
        context = ssl.create_default_context(cafile=settings.GNOSEM_OAUTH_CIMD_CA_BUNDLE)
        try:
            sock = context.wrap_socket(raw, server_hostname=target.host)
        except ssl.SSLCertVerificationError as exc:
            raise _refused(url, f"its certificate could not be verified ({exc.verify_message})") from None
        except OSError:
            if time.monotonic() >= deadline:
                raise _timed_out(url) from None
            raise _refused(url, "the TLS handshake failed") from None
        cleanup.callback(sock.close)
        return sock
    if time.monotonic() >= deadline:
        raise _timed_out(url)
    raise _refused(url, f"no address of {target.host} accepts connections ({type(failure).__name__})")


def _cut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _too_large(url: str) -> OAuthClientError:
    return _refused(url, f"it is larger than {MAX_DOCUMENT_BYTES // 1024} KiB")


def _timed_out(url: str) -> OAuthClientError:
    return _refused(url, f"it did not arrive within {FETCH_SECONDS:g} seconds")


def _json_object(url: str, body: bytes) -> dict:
    try:
        document = load_json(body)
    except JsonInputError as exc:
        raise _refused(url, f"it {exc.problem}") from None
    if not isinstance(document, dict):
        raise _refused(url, "it is not a JSON object")
    return document
