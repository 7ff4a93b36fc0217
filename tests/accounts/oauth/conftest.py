"""Fixtures for the OAuth tests: the client's side of the network. A loopback HTTP server receives
the authorization response the way a desktop MCP client does (RFC 8252), and a local HTTPS server
with a certificate of its own serves a Client ID Metadata Document the way a hosted client does."""

import datetime
import ipaddress
import json
import queue
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import anyio
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from mcp.client.auth import AuthorizationCodeResult

from accounts.models import OAuthClient
from tests.accounts.oauth.grants import registered_client

LOOPBACK = "127.0.0.1"


class _QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the test prints what matters
        pass


def _serve(server: ThreadingHTTPServer) -> None:
    threading.Thread(target=server.serve_forever, daemon=True).start()


class LoopbackCallback:
    """A loopback server at `redirect_uri` that hands each authorization response it receives to
    `authorization_response()`."""

    def __init__(self) -> None:
        responses: queue.Queue[dict[str, str]] = queue.Queue()

        class Handler(_QuietHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path != "/callback":
                    self.send_error(404)
                    return
                responses.put(dict(parse_qsl(parts.query)))
                body = b"<!doctype html><title>Connected</title><p>You can close this window."
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.responses = responses
        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.redirect_uri = f"http://{LOOPBACK}:{self.server.server_port}/callback"
        _serve(self.server)

    async def authorization_response(self) -> AuthorizationCodeResult:
        """The next response the browser was redirected here with (the SDK's callback_handler)."""
        params = await anyio.to_thread.run_sync(lambda: self.responses.get(timeout=60))
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))


def _certificate_authority_and_leaf(directory: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate it signed for 127.0.0.1 and localhost: (CA, cert, key) files."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Gnosem test client-metadata CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, LOOPBACK)]))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(LOOPBACK)), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = directory / "ca.pem", directory / "leaf.pem", directory / "leaf-key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths


class ClientMetadataHost:
    """An HTTPS server on loopback serving one Client ID Metadata Document at `url`, under a
    certificate from the CA in `ca_file`; counts the fetches."""

    def __init__(self, directory: Path) -> None:
        self.ca_file, cert_file, key_file = _certificate_authority_and_leaf(directory)
        self.document: dict = {}
        self.fetches = 0
        host = self

        class Handler(_QuietHandler):
            def do_GET(self) -> None:
                if self.path != "/clients/assistant.json":
                    self.send_error(404)
                    return
                host.fetches += 1
                body = json.dumps(host.document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "max-age=3600")
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_file, key_file)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://{LOOPBACK}:{self.server.server_port}/clients/assistant.json"
        _serve(self.server)


@pytest.fixture
def loopback_callback() -> Iterator[LoopbackCallback]:
    callback = LoopbackCallback()
    yield callback
    callback.server.shutdown()
    callback.server.server_close()


@pytest.fixture
def client_metadata_host(tmp_path, settings) -> Iterator[ClientMetadataHost]:
    """The host, trusted by Gnosem's fetcher (its CA, and loopback addresses allowed)."""
    host = ClientMetadataHost(tmp_path)
    settings.GNOSEM_OAUTH_CIMD_CA_BUNDLE = str(host.ca_file)
    settings.GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP = True
    yield host
    host.server.shutdown()
    host.server.server_close()


@pytest.fixture
def assistant(db) -> OAuthClient:
    """A public client registered by Dynamic Client Registration, as an assistant registers."""
    return registered_client("Claude")
