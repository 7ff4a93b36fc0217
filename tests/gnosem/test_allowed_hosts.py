"""The default ALLOWED_HOSTS serve loopback only: the test client's `testserver` is added by
Django's test set-up, never by the settings."""

import json
import os
import subprocess
import sys

from django.conf import settings


def test_the_default_allowed_hosts_do_not_include_testserver(tmp_path):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GNOSEM_", "ALLOWED_HOSTS"))}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, json; django.setup(); from django.conf import settings; "
            "print(json.dumps(settings.ALLOWED_HOSTS))",
        ],
        cwd=settings.BASE_DIR,
        env={**env, "GNOSEM_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "gnosem.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == ["127.0.0.1", "localhost", "[::1]"]
