"""manage.py serve: migrate, then run the web server (gunicorn) and a task consumer, and keep them up.

This is what `make run` runs. It supervises its two children: one that exits (crash, OOM killer,
SIGKILL) is started again after a pause that starts at 1 s and doubles up to 60 s while it keeps
failing, and starts again at 1 s once it has run for a minute. With the embedded database it also
starts PostgreSQL again when it finds it stopped (every connection does too, see gnosem.embedded_db).
Only SIGTERM or SIGINT (Ctrl-C) stops it all.

Production runs the same pieces under its own supervisor (systemd, Kubernetes) and at any scale:
`gunicorn gnosem.wsgi -c gnosem/gunicorn_conf.py` and `manage.py run_huey`.
"""

import io
import logging
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import connections

logger = logging.getLogger("gnosem.serve")

FIRST_RESTART_DELAY_SECONDS = 1.0
MAX_RESTART_DELAY_SECONDS = 60.0
# A child that ran this long before exiting is restarted after the first delay again.
HEALTHY_AFTER_SECONDS = 60.0
DATABASE_CHECK_SECONDS = 5.0
POLL_SECONDS = 0.2
STOP_TIMEOUT_SECONDS = 30


@dataclass
class Child:
    """One supervised process: how to start it, and when to start it again."""

    name: str
    argv: list[str]
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    delay: float = 0.0  # the pause before the next restart
    restart_at: float | None = None

    def start(self) -> subprocess.Popen:
        self.process = process = subprocess.Popen(self.argv)
        self.started_at = time.monotonic()
        self.restart_at = None
        return process

    def check(self, now: float) -> None:
        """Notice an exit and schedule the restart; start it again when its pause is over."""
        if self.restart_at is not None:
            if now >= self.restart_at:
                restarted = self.start()
                logger.warning("%s process started again (pid %d)", self.name, restarted.pid)
            return
        process = self.process
        if process is None:  # not started yet
            return
        status = process.poll()
        if status is None:
            return
        ran = now - self.started_at
        if ran >= HEALTHY_AFTER_SECONDS or self.delay == 0:
            self.delay = FIRST_RESTART_DELAY_SECONDS
        else:
            self.delay = min(self.delay * 2, MAX_RESTART_DELAY_SECONDS)
        self.restart_at = now + self.delay
        logger.error(
            "%s process (pid %d) %s after %.0f s; starting it again in %.0f s",
            self.name,
            process.pid,
            _describe_exit(status),
            ran,
            self.delay,
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def wait(self) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _describe_exit(status: int) -> str:
    if status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


class Command(BaseCommand):
    help = (
        "Migrate the database, then serve Gnosem with gunicorn and one huey consumer until interrupted, "
        "starting again whichever of them exits."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args: Any, host: str, port: int, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        # The checks that read the database (the master key matches the one its data is sealed with).
        call_command("check", databases=["default"], stdout=io.StringIO())
        call_command("createcachetable")  # the log-in throttle's counters, when there is no Redis
        connections.close_all()  # the children open their own
        manage = str(Path(settings.BASE_DIR) / "manage.py")
        children = [
            Child("worker", [sys.executable, manage, "run_huey"]),
            Child(
                "web",
                [
                    sys.executable,
                    "-m",
                    "gunicorn",
                    "gnosem.wsgi:application",
                    "-c",
                    str(Path(settings.BASE_DIR) / "gnosem" / "gunicorn_conf.py"),
                    "--bind",
                    f"{host}:{port}",
                ],
            ),
        ]
        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        for child in children:
            child.start()
        self.stderr.write(f"Gnosem on http://{host}:{port} (MCP endpoint http://{host}:{port}/mcp). Ctrl-C stops it.")
        database_checked = time.monotonic()
        try:
            while not stopping:
                now = time.monotonic()
                for child in children:
                    child.check(now)
                if now - database_checked >= DATABASE_CHECK_SECONDS:
                    database_checked = now
                    _restart_embedded_database_if_stopped()
                time.sleep(POLL_SECONDS)
        finally:
            for child in children:
                child.stop()
            for child in children:
                child.wait()


def _restart_embedded_database_if_stopped() -> None:
    """Start the embedded PostgreSQL again if it stopped, even while no request or task needs it."""
    if settings.DATABASES["default"]["ENGINE"] != "gnosem.embedded_db":
        return
    from gnosem.embedded_db import ensure_embedded_server_running

    try:
        ensure_embedded_server_running(settings.GNOSEM_DATA_DIR / "postgres")
    except Exception:  # logged; the next check (or the next connection) tries again
        logger.exception("the embedded PostgreSQL could not be started again")
