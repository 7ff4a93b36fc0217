"""The discovery documents (RFC 9728, RFC 8414) and the 401 challenge that points at them: what
an MCP client reads to find out how to connect, from GNOSEM_PUBLIC_URL or from the request."""

import pytest
from django.test import Client

PRM_PATHS = ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]


@pytest.mark.parametrize("path", PRM_PATHS)
def test_the_protected_resource_metadata_names_the_mcp_endpoint_and_this_server(client, path):
    response = client.get(path)

    assert response.status_code == 200
    assert response.json() == {
        "resource": "http://testserver/mcp",
        "authorization_servers": ["http://testserver"],
        "scopes_supported": ["memories:read", "memories:write"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Gnosem",
    }


def test_the_authorization_server_metadata_says_what_mcp_clients_look_for(client):
    document = client.get("/.well-known/oauth-authorization-server").json()

    assert document == {
        "issuer": "http://testserver",
        "authorization_endpoint": "http://testserver/oauth/authorize",
        "token_endpoint": "http://testserver/oauth/token",
        "registration_endpoint": "http://testserver/oauth/register",
        "revocation_endpoint": "http://testserver/oauth/revoke",
        "scopes_supported": ["memories:read", "memories:write", "offline_access"],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "client_id_metadata_document_supported": True,
        "authorization_response_iss_parameter_supported": True,
    }


def test_every_url_comes_from_the_public_url_when_it_is_set(client, settings):
    settings.GNOSEM_PUBLIC_URL = "https://memory.example.com"

    resource = client.get(PRM_PATHS[1]).json()
    server = client.get("/.well-known/oauth-authorization-server").json()
    challenge = client.post("/mcp", "{}", content_type="application/json")["WWW-Authenticate"]

    assert resource["resource"] == "https://memory.example.com/mcp"
    assert resource["authorization_servers"] == ["https://memory.example.com"]
    assert server["issuer"] == "https://memory.example.com"
    assert {url for key, url in server.items() if key.endswith("_endpoint")} == {
        f"https://memory.example.com/oauth/{name}" for name in ("authorize", "token", "register", "revoke")
    }
    assert 'resource_metadata="https://memory.example.com/.well-known/oauth-protected-resource/mcp"' in challenge


def test_without_the_public_url_the_documents_follow_the_host_and_scheme_asked_for(settings):
    settings.ALLOWED_HOSTS = ["memory.internal"]
    browser = Client(HTTP_HOST="memory.internal:8443")

    document = browser.get("/.well-known/oauth-authorization-server", secure=True).json()

    assert document["issuer"] == "https://memory.internal:8443"
    assert document["token_endpoint"] == "https://memory.internal:8443/oauth/token"


@pytest.mark.parametrize("path", [*PRM_PATHS, "/.well-known/oauth-authorization-server"])
def test_a_browser_based_client_may_read_the_documents_from_another_origin(client, path):
    preflight = client.options(path, headers={"Origin": "http://localhost:6274"})
    response = client.get(path, headers={"Origin": "http://localhost:6274"})

    assert preflight.status_code == 204
    assert preflight["Access-Control-Allow-Origin"] == response["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize("path", [*PRM_PATHS, "/.well-known/oauth-authorization-server"])
def test_the_documents_are_read_only(client, path):
    assert client.post(path).status_code == 405
