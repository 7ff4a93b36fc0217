"""Hostile PDFs uploaded at once to production's shape: one gunicorn worker with its four threads.
Each upload is answered within the reading limit, and /healthz keeps answering meanwhile: a PDF is
read in a process of its own, and a web process reads two at once, refusing the others at once
instead of letting them take every thread."""

import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import requests
from django.conf import settings
from django.urls import reverse

from memories.notes import files as note_files
from tests.faults.conftest import Served
from tests.memories.notes.test_note_files import TOO_LONG, pdf_showing_a_form

# Made in the served instance: a user, and a session signed in as them.
SIGN_IN = """
from importlib import import_module
from django.conf import settings
from django.urls import reverse
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
user = get_user_model().objects.create_user(username="{name}", email="{name}@example.com")
session = import_module(settings.SESSION_ENGINE).SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(session.session_key)
"""


def signed_in_cookies(served: Served) -> dict[str, str]:
    """The cookies of a browser signed in to the served instance as a new user, with a CSRF token."""
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SIGN_IN.format(name=f"pdf-{uuid.uuid4().hex[:8]}")],
        cwd=settings.BASE_DIR,
        env=served.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    cookies = {settings.SESSION_COOKIE_NAME: result.stdout.split()[-1]}
    cookies["csrftoken"] = requests.get(f"{served.url}{reverse('notes')}", cookies=cookies, timeout=30).cookies[
        "csrftoken"
    ]
    return cookies


def test_hostile_pdfs_uploaded_at_once_leave_gunicorn_answering(served):
    cookies = signed_in_cookies(served)
    data = pdf_showing_a_form()

    def upload() -> tuple[int, str, float]:
        started = time.monotonic()
        response = requests.post(
            f"{served.url}{reverse('note_upload')}",
            data={"csrfmiddlewaretoken": cookies["csrftoken"]},
            files={"file": ("forms.pdf", data)},
            cookies=cookies,
            timeout=300,
        )
        return response.status_code, response.text, time.monotonic() - started

    health: list[float] = []
    with ThreadPoolExecutor(max_workers=4) as pool:
        uploads = [pool.submit(upload) for _ in range(4)]
        while not all(upload.done() for upload in uploads):
            started = time.monotonic()
            try:
                requests.get(f"{served.url}/healthz", timeout=10).raise_for_status()
                health.append(time.monotonic() - started)
            except requests.RequestException:
                health.append(float("inf"))
            time.sleep(0.5)
    answers = [upload.result() for upload in uploads]

    print(
        f"[faults] hostile PDFs: answered in {[round(seconds, 1) for *_, seconds in answers]} s; /healthz in at "
        f"most {max(health):.2f} s over {len(health)} checks"
    )
    assert [status for status, _, _ in answers] == [400] * 4
    assert sum(TOO_LONG in text for _, text, _ in answers) == 2
    assert sum("the server is reading other PDFs" in text for _, text, _ in answers) == 2
    assert max(seconds for *_, seconds in answers) < note_files.MAX_PDF_EXTRACTION_SECONDS + 15
    assert max(health) < 3
