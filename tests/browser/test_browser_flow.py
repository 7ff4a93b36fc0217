"""A person in a real browser (Debian's Chromium through Playwright) against a live server: sign
up and confirm the address from the mail, create a token, let an assistant write through the MCP
SDK client with it, see the memory on the dashboard, search it, open it, edit it and read its
earlier version, export everything and import it back, review a near-duplicate, write and read a
note, browse the entities and one's drawn neighbourhood, answer an assistant's consent page, read
the activity log and the API docs: every page a signed-in person reaches.

GNOSEM_SCREENSHOTS=1 saves one screenshot per page under bench/screenshots/.
"""

import json
import os
import threading
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest
from mcp import Client

from tests.accounts.email_confirmation import confirmation_link
from tests.accounts.oauth.grants import REDIRECT_URI, Authorization
from tests.memories.mcp.conftest import run_client

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "bench" / "screenshots"
PASSWORD = "a long browser passphrase 31"
MEMORY = "Production deploys go through ArgoCD; the rollback runbook code is ERR_ARGO_5521."
EDITED = MEMORY + " Rollbacks need two approvals."
# Two memories saying one thing in other words: the second is linked as a near-duplicate.
ORIGINAL = "The staging database listens on port 5433 because 5432 is taken by the legacy cluster."
RESTATED = "Staging's database runs on port 5433, since the legacy cluster already uses 5432."
NOTE = "# Rollback\n\nRoll back with `argocd app rollback`; **two approvals** are needed."
HOSTILE = 'Pasted from a web page: <script>window.gnosemXss = 1</script><img src=x onerror="window.gnosemXss = 2">'

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium: apt-get install -y chromium")


@pytest.fixture
def browser_page(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the ORM calls the test makes
    # afterwards are still plain synchronous calls.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
        yield context.new_page()
        browser.close()


class Shots:
    """Saves a full-page screenshot of each page when GNOSEM_SCREENSHOTS is set."""

    def __init__(self, page):
        self.page = page
        self.enabled = os.environ.get("GNOSEM_SCREENSHOTS", "") not in ("", "0")
        if self.enabled:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def __call__(self, name: str) -> None:
        if self.enabled:
            self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def register_an_assistant(live_server, name: str) -> SimpleNamespace:
    """The assistant registers itself at /oauth/register, as claude.ai does (over HTTP: an ORM call
    from this thread would open a connection in Playwright's event loop context that no teardown
    closes)."""
    body = {"client_name": name, "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
    request = urllib.request.Request(
        live_server.url + "/oauth/register",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return SimpleNamespace(client_id=json.load(answer)["client_id"])


def write_with_the_sdk_client(live_server, token: str, writes: list[dict]) -> dict:
    """The assistant's side, in its own thread (Playwright owns this thread's event loop): the
    memory_write calls in order; the last one's result."""

    async def write(client: Client) -> dict:
        for arguments in writes:
            result = await client.call_tool("memory_write", arguments)
        return result.structured_content

    outcome: dict = {}

    def run() -> None:
        try:
            outcome["written"] = run_client(live_server, token, "auto", write)
        except BaseException as exc:  # surfaced in the test below
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=180)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["written"]


def test_sign_up_connect_an_assistant_find_its_memory_and_export(live_server, browser_page, tmp_path):
    page, shot = browser_page, Shots(browser_page)
    own_host = urlsplit(live_server.url).netloc
    foreign = []
    page.on("request", lambda request: urlsplit(request.url).netloc != own_host and foreign.append(request.url))
    page.on("dialog", lambda dialog: dialog.accept())

    page.goto(live_server.url)
    shot("01-landing")
    page.get_by_role("link", name="Sign up").first.click()
    page.fill("input[name=email]", "grace@example.com")
    page.fill("input[name=password1]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    shot("02-sign-up")
    page.get_by_role("button", name="Sign Up").click()
    page.wait_for_selector("text=Verify Your Email Address")
    shot("03-confirm-your-address")
    # The live server runs in this process: the mail it sent is in the test outbox.
    page.goto(confirmation_link("grace@example.com"))
    page.get_by_role("button", name="Confirm").click()
    page.wait_for_selector("text=No memories yet")
    shot("04-dashboard-empty")

    page.get_by_role("link", name="Tokens").click()
    page.fill("#token-name", "browser test claude code")
    page.select_option("#token-scope", "write")
    page.get_by_role("button", name="Create token").click()
    token = page.inner_text("#new-token").strip()
    assert token.startswith("gno_")
    assert token in page.inner_text("#snippet-claude-code")
    shot("05-token-created")
    page.get_by_role("link", name="Connect").click()
    assert live_server.url + "/mcp" in page.inner_text("#snippet-cursor")
    shot("06-connect")

    written = write_with_the_sdk_client(
        live_server, token, [{"content": HOSTILE}, {"content": MEMORY, "tags": ["ops", "deploy"]}]
    )
    assert written["id"]

    page.get_by_role("link", name="Memories").click()
    assert MEMORY in page.inner_text(".memory-list") and HOSTILE in page.inner_text(".memory-list")
    assert page.evaluate("() => window.gnosemXss") is None  # shown as text, never run
    shot("07-dashboard")
    page.fill("#q", "ERR_ARGO_5521")
    page.get_by_role("button", name="Go").click()
    page.wait_for_selector("text=Search results")
    assert MEMORY in page.inner_text(".memory-list")
    shot("08-search")
    page.click(f".memory-list a.text:has-text('{MEMORY}')")
    assert page.inner_text("#raw-text") == MEMORY and written["id"] in page.content()
    shot("09-detail")

    page.get_by_role("link", name="Export / import").click()
    shot("10-export-import")
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download Personal").click()
    path = tmp_path / "export.json"
    download_info.value.save_as(path)
    exported = json.loads(path.read_text())
    assert [(m["content"], m["tags"]) for m in exported["memories"]] == [(HOSTILE, []), (MEMORY, ["ops", "deploy"])]
    assert exported["memories"][1]["id"] == written["id"]
    page.set_input_files("#file", str(path))
    page.get_by_role("button", name="Upload and preview").click()
    preview = " ".join(page.inner_text("main").split())
    assert "2 records read: 0 memories to create, 2 duplicates to skip." in preview
    page.get_by_role("button", name="Start the import").click()
    page.wait_for_selector("text=Imported:")
    assert "Imported: 0 memories, 2 duplicates skipped." in " ".join(page.inner_text("main").split())
    shot("11-imported")

    page.get_by_role("link", name="Memories").click()
    page.click(f".memory-list a.text:has-text('{MEMORY}')")
    page.get_by_role("link", name="Edit").click()
    page.fill("#content", EDITED)
    shot("12-edit")
    page.get_by_role("button", name="Save").click()
    assert page.inner_text("#raw-text") == EDITED and page.inner_text("#revisions pre") == MEMORY
    shot("13-history")

    write_with_the_sdk_client(live_server, token, [{"content": ORIGINAL}, {"content": RESTATED}])
    page.goto(f"{live_server.url}/memories/duplicates/")
    assert RESTATED in page.inner_text("main") and ORIGINAL in page.inner_text("main")
    shot("14-near-duplicates")

    page.get_by_role("link", name="Notes").click()
    page.fill("#title", "Rollback runbook")
    page.fill("#content", NOTE)
    shot("15-notes")
    page.get_by_role("button", name="Save note").click()
    page.wait_for_selector("text=Rollback runbook")
    assert "two approvals" in page.inner_text("#note-text")
    shot("16-note")

    page.get_by_role("link", name="Entities").click()
    shot("17-entities")
    page.get_by_role("link", name="ArgoCD").first.click()
    assert page.locator("#neighbourhood").count() == 1  # drawn with the entities mentioned beside it
    assert "ERR_ARGO_5521" in page.inner_text("main")
    shot("18-entity")

    authorization = Authorization(
        register_an_assistant(live_server, "Browser test assistant"), resource=f"{live_server.url}/mcp"
    )
    page.goto(live_server.url + authorization.url)
    assert "Browser test assistant" in page.inner_text("main")
    shot("19-consent")
    with page.expect_response(lambda response: response.request.method == "POST") as answer:
        page.get_by_role("button", name="Allow").click()
    assert answer.value.headers["location"].startswith(authorization.redirect_uri + "?code=")
    page.wait_for_url(lambda url: not url.startswith(live_server.url))  # off to the assistant (not there)

    page.goto(f"{live_server.url}/activity/")
    assert "browser test claude code" in page.inner_text("main")  # the token created above
    shot("20-activity")
    page.get_by_role("link", name="API").click()
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)  # the docs page's own scripts ran
    shot("21-api-docs")
    page.goto(f"{live_server.url}/tokens/")
    shot("22-tokens")

    # Nothing was fetched from anywhere but this server (and the assistant's redirect, answered above).
    assert [url for url in foreign if not url.startswith(authorization.redirect_uri)] == []
