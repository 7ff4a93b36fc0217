"""How each MCP client connects: by URL alone (OAuth), or with a token pasted into its configuration.

claude.ai and Claude Desktop custom connectors, ChatGPT's developer-mode connectors and the MCP
Inspector take the URL only and sign in through OAuth (accounts.oauth); the first three connect
from their vendor's servers, so they reach only a public https URL on port 443.

Token configuration, as each client documents it: Claude Code's `claude mcp add --transport
http`; Cursor's `mcpServers.<name>.url` + `headers`; VS Code's `servers.<name>` with `"type":
"http"`; Windsurf's `mcpServers.<name>.serverUrl` + `headers`; Claude Desktop's configuration file
speaks only stdio, so it runs the `mcp-remote` bridge with the header passed through an environment
variable (mcp-remote's advice: no spaces inside `args`, which some platforms split).
"""

import json
import shlex
from dataclasses import dataclass
from urllib.parse import urlsplit

SERVER_NAME = "gnosem"
TOKEN_PLACEHOLDER = "gno_YOUR_TOKEN"


@dataclass(frozen=True)
class ClientSnippet:
    key: str
    client: str
    where: str
    text: str


@dataclass(frozen=True)
class ConnectorGuide:
    key: str
    client: str
    steps: tuple[str, ...]


def connector_guides(*, mcp_url: str) -> list[ConnectorGuide]:
    """The steps for each client that connects by URL and signs in by itself: no token to paste."""
    return [
        ConnectorGuide(
            "claude-connector",
            "claude.ai and Claude Desktop",
            (
                "Open Settings → Connectors → Add custom connector (on Team and Enterprise plans an owner "
                "adds it for the organisation first; each member then connects).",
                f"Name it Gnosem and paste the URL {mcp_url}; leave the advanced OAuth client fields empty.",
                "Add, then Connect: sign in to Gnosem and Allow. The connector works in claude.ai, Claude "
                "Desktop and the mobile apps alike.",
            ),
        ),
        ConnectorGuide(
            "chatgpt-connector",
            "ChatGPT (developer mode)",
            (
                "Turn on developer mode: Settings → Apps & Connectors → Advanced settings → Developer mode "
                "(on Business and Enterprise plans an admin allows it first).",
                f"Settings → Apps & Connectors → Create: name it Gnosem, MCP server URL {mcp_url}, "
                "authentication OAuth.",
                "Create, then sign in to Gnosem and Allow. In a chat, choose Developer mode under + and turn "
                "Gnosem on.",
            ),
        ),
        ConnectorGuide(
            "mcp-inspector",
            "MCP Inspector",
            (
                "Run npx @modelcontextprotocol/inspector (needs Node.js); it opens in your browser.",
                f"Transport type Streamable HTTP, URL {mcp_url}, then Connect: it signs in the way the "
                "assistants do, and its OAuth settings show each step, to see where a connection fails.",
            ),
        ),
    ]


def reaches_connectors(mcp_url: str) -> bool:
    """Whether the URL is https on port 443, the only kind the hosted assistants connect to."""
    parts = urlsplit(mcp_url)
    return parts.scheme == "https" and parts.port in (None, 443)


def _json(config: dict) -> str:
    return json.dumps(config, indent=2)


def _mcp_remote_args(mcp_url: str) -> list[str]:
    args = ["-y", "mcp-remote", mcp_url, "--header", "Authorization:${GNOSEM_AUTHORIZATION}"]
    # mcp-remote refuses plain http except to localhost unless told otherwise.
    parts = urlsplit(mcp_url)
    if parts.scheme == "http" and parts.hostname not in {"localhost", "127.0.0.1", "::1"}:
        args.append("--allow-http")
    return args


def client_snippets(*, mcp_url: str, token: str | None) -> list[ClientSnippet]:
    """One snippet per supported client; `token=None` leaves a placeholder to replace."""
    secret = token or TOKEN_PLACEHOLDER
    bearer = f"Bearer {secret}"
    headers = {"Authorization": bearer}
    claude_code = shlex.join(
        ["claude", "mcp", "add", "--transport", "http", SERVER_NAME, mcp_url, "--header", f"Authorization: {bearer}"]
    )
    return [
        ClientSnippet(
            "claude-code", "Claude Code", "Run in a terminal (add --scope user for every project)", claude_code
        ),
        ClientSnippet(
            "cursor",
            "Cursor",
            "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
            _json({"mcpServers": {SERVER_NAME: {"url": mcp_url, "headers": headers}}}),
        ),
        ClientSnippet(
            "vscode",
            "VS Code",
            ".vscode/mcp.json in a workspace, or MCP: Open User Configuration",
            _json({"servers": {SERVER_NAME: {"type": "http", "url": mcp_url, "headers": headers}}}),
        ),
        ClientSnippet(
            "windsurf",
            "Windsurf",
            "~/.codeium/windsurf/mcp_config.json",
            _json({"mcpServers": {SERVER_NAME: {"serverUrl": mcp_url, "headers": headers}}}),
        ),
        ClientSnippet(
            "claude-desktop",
            "Claude Desktop",
            "claude_desktop_config.json (Settings → Developer → Edit Config); needs Node.js for npx",
            _json(
                {
                    "mcpServers": {
                        SERVER_NAME: {
                            "command": "npx",
                            "args": _mcp_remote_args(mcp_url),
                            "env": {"GNOSEM_AUTHORIZATION": bearer},
                        }
                    }
                }
            ),
        ),
    ]
