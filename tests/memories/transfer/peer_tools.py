"""The other memory tools, installed for the tests under `.peers/` by `make peers` (part of
`make test`): where each is, and driving it. A test that needs a tool that did not install is
skipped, naming the tool and how to install it."""

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[3]
PEERS = ROOT / ".peers"
SERVER_MEMORY = PEERS / "server-memory/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
DRIVERS = Path(__file__).resolve().parent / "peers"


def needs(path: Path, tool: str) -> None:
    """Skip the test unless the tool's `path` is there."""
    if not path.exists():
        pytest.skip(f"{tool} is not installed ({path.relative_to(ROOT)} is missing): run `make peers`.")


def server_memory(memory_file: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Start the MCP reference memory server on `memory_file` (over stdio, with the official SDK),
    make the tool calls in order, and return each call's structured result."""
    needs(SERVER_MEMORY, "The MCP reference memory server (@modelcontextprotocol/server-memory)")
    environment = {"MEMORY_FILE_PATH": str(memory_file)}
    server = StdioServerParameters(command="node", args=[str(SERVER_MEMORY)], env=environment)

    async def main() -> list[Any]:
        results = []
        async with Client(server, read_timeout_seconds=60) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, result
                results.append(result.structured_content)
        return results

    return anyio.run(main)


def drive(tool: str, name: str, *arguments: str) -> Any:
    """Run a tool's driver script (tests/memories/transfer/peers/<tool>_driver.py) with the python of
    its own environment under .peers/<name>; its JSON summary."""
    python = PEERS / name / "bin/python"
    needs(python, f"{name} (its environment .peers/{name})")
    script = DRIVERS / f"{tool}_driver.py"
    done = subprocess.run(
        [str(python), str(script), *arguments], capture_output=True, text=True, timeout=600, check=False, cwd=ROOT
    )
    assert done.returncode == 0, f"{script.name} failed:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)
