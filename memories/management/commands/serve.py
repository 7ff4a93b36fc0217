"""manage.py serve: migrate, then run the web server (gunicorn) and a task consumer side by side.

This is what `make run` runs. Production runs the same two pieces separately and at any scale:
`gunicorn gnosem.wsgi -c gnosem/gunicorn_conf.py` and `manage.py run_huey`.
"""

import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Migrate the database, then serve Gnosem with gunicorn and one huey consumer until interrupted."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args, host: str, port: int, **options):
        call_command("migrate", interactive=False, verbosity=0)
        call_command("createcachetable")  # the log-in throttle's counters, when there is no Redis
        manage = str(Path(settings.BASE_DIR) / "manage.py")
        children = {
            "worker": subprocess.Popen([sys.executable, manage, "run_huey"]),
            "web": subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "gunicorn",
                    "gnosem.wsgi:application",
                    "-c",
                    str(Path(settings.BASE_DIR) / "gnosem" / "gunicorn_conf.py"),
                    "--bind",
                    f"{host}:{port}",
                ]
            ),
        }
        self.stderr.write(f"Gnosem on http://{host}:{port} (MCP endpoint http://{host}:{port}/mcp). Ctrl-C stops it.")
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        exit_code = 0
        while not stopping:
            for name, child in children.items():
                if child.poll() is not None:
                    self.stderr.write(f"The {name} process exited with status {child.returncode}; stopping.")
                    exit_code = child.returncode or 1
                    stopping = True
            time.sleep(0.5)
        for child in children.values():
            if child.poll() is None:
                child.terminate()
        for child in children.values():
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
        if exit_code:
            sys.exit(exit_code)
