"""Gnosem's processes for the benchmarks, started as `make run` starts them (gunicorn with Gnosem's
configuration and a huey consumer, on loopback), and the official MCP SDK client that talks to them.

Import it after `bench.environment.setup_django`: the children inherit this process's environment
(its data folder, its queue)."""

import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.environment import BASE_DIR


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def process(args: list[str], log: Path) -> Iterator[subprocess.Popen]:
    with log.open("w") as out:
        child = subprocess.Popen(args, cwd=BASE_DIR, stdout=out, stderr=subprocess.STDOUT, env=os.environ.copy())
        try:
            yield child
        finally:
            child.terminate()
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()


def gunicorn_command(port: int) -> list[str]:
    """The web server as production runs it (gunicorn with Gnosem's configuration), on loopback."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "gnosem.wsgi:application",
        "-c",
        str(BASE_DIR / "gnosem/gunicorn_conf.py"),
        "--bind",
        f"127.0.0.1:{port}",
        "--access-logfile",
        "/dev/null",
    ]


def consumer_command() -> list[str]:
    """The task consumer as `make run` starts it."""
    return [sys.executable, str(BASE_DIR / "manage.py"), "run_huey"]


def wait_for_http(port: int, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the web server did not come up; see {log}")


def wait_for_worker(log: Path, timeout: float = 600) -> None:
    """Until the consumer has loaded the embedding model (its start-up hook logs it)."""
    deadline = time.monotonic() + timeout
    while "embedding model" not in log.read_text():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the worker did not start; see {log}")
        time.sleep(0.02)


@asynccontextmanager
async def sdk_client(url: str, token: str) -> AsyncIterator[Client]:
    """The official `mcp` SDK client on /mcp, in legacy mode (the handshake most clients speak)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            yield client
