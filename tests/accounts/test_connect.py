"""The client configuration snippets are valid for each client's format."""

import json
import shlex

from accounts.connect import TOKEN_PLACEHOLDER, client_snippets

URL = "https://memory.example.com/mcp"


def snippets(token=None, url=URL) -> dict[str, str]:
    return {snippet.key: snippet.text for snippet in client_snippets(mcp_url=url, token=token)}


def test_claude_code_is_one_shell_command():
    assert shlex.split(snippets("gno_abc")["claude-code"]) == [
        "claude",
        "mcp",
        "add",
        "--transport",
        "http",
        "gnosem",
        URL,
        "--header",
        "Authorization: Bearer gno_abc",
    ]


def test_the_json_clients_get_the_url_and_the_header_in_their_own_keys():
    texts = snippets("gno_abc")
    header = {"Authorization": "Bearer gno_abc"}
    assert json.loads(texts["cursor"]) == {"mcpServers": {"gnosem": {"url": URL, "headers": header}}}
    assert json.loads(texts["vscode"]) == {"servers": {"gnosem": {"type": "http", "url": URL, "headers": header}}}
    assert json.loads(texts["windsurf"]) == {"mcpServers": {"gnosem": {"serverUrl": URL, "headers": header}}}


def test_claude_desktop_goes_through_mcp_remote_with_the_header_from_the_environment():
    server = json.loads(snippets("gno_abc")["claude-desktop"])["mcpServers"]["gnosem"]
    assert server["command"] == "npx"
    assert server["args"] == ["-y", "mcp-remote", URL, "--header", "Authorization:${GNOSEM_AUTHORIZATION}"]
    assert server["env"] == {"GNOSEM_AUTHORIZATION": "Bearer gno_abc"}


def test_plain_http_to_another_host_is_allowed_explicitly_for_mcp_remote():
    args = lambda url: json.loads(snippets(url=url)["claude-desktop"])["mcpServers"]["gnosem"]["args"]  # noqa: E731
    assert "--allow-http" in args("http://192.168.1.5:8000/mcp")
    assert "--allow-http" not in args("http://127.0.0.1:8000/mcp")


def test_without_a_token_the_snippets_carry_a_placeholder():
    assert all(TOKEN_PLACEHOLDER in text for text in snippets().values())
