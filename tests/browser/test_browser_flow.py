"""A person in a real browser (Debian's Chromium through Playwright) against a live server: sign
up and confirm the address from the mail, create a token, let an assistant write through the MCP
SDK client with it, see the memory on the dashboard, search it, open it, export everything and
import it back, and read the API docs.

GNOSEM_SCREENSHOTS=1 saves one screenshot per page under bench/screenshots/.
"""

import json
import os
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mcp import Client

from tests.accounts.email_confirmation import confirmation_link
from tests.memories.mcp.conftest import run_client

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "bench" / "screenshots"
PASSWORD = "a long browser passphrase 31"
MEMORY = "Production deploys go through ArgoCD; the rollback runbook code is ERR_ARGO_5521."
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


def write_with_the_sdk_client(live_server, token: str) -> dict:
    """The assistant's side, in its own thread (Playwright owns this thread's event loop)."""

    async def write(client: Client) -> dict:
        await client.call_tool("memory_write", {"content": HOSTILE})
        result = await client.call_tool("memory_write", {"content": MEMORY, "tags": ["ops", "deploy"]})
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

    written = write_with_the_sdk_client(live_server, token)
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
        page.get_by_role("link", name="Download export").click()
    path = tmp_path / "export.json"
    download_info.value.save_as(path)
    exported = json.loads(path.read_text())
    assert [(m["content"], m["tags"]) for m in exported["memories"]] == [(HOSTILE, []), (MEMORY, ["ops", "deploy"])]
    assert exported["memories"][1]["id"] == written["id"]
    page.set_input_files("#file", str(path))
    page.get_by_role("button", name="Import").click()
    assert "export.json: 0 memories imported, 2 duplicates skipped." in page.inner_text(".messages")
    shot("11-imported")

    page.get_by_role("link", name="API").click()
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)  # the docs page's own scripts ran
    shot("12-api-docs")
    page.goto(f"{live_server.url}/tokens/")
    shot("13-tokens")

    assert foreign == []  # nothing was fetched from anywhere but this server
