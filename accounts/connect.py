"""Copy-paste configuration for each MCP client, with this server's URL and a token filled in.

Formats, as each client documents them: Claude Code's `claude mcp add --transport http`; Cursor's
`mcpServers.<name>.url` + `headers`; VS Code's `servers.<name>` with `"type": "http"`; Windsurf's
`mcpServers.<name>.serverUrl` + `headers`; Claude Desktop speaks only stdio, so it runs the
`mcp-remote` bridge with the header passed through an environment variable (mcp-remote's advice:
no spaces inside `args`, which some platforms split).
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
