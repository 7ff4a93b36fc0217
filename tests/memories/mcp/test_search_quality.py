"""memory_search over MCP finds memories by meaning and by exact identifiers (docs/design.md §5), with
the default all-MiniLM-L6-v2 and with the stronger all-mpnet-base-v2 (both shipped on PyPI)."""

import pytest

from memories.indexing.model_packages import MPNET_NAME
from tests.memories.mcp.conftest import MODERN

MINILM = "default"

PRICING_LAYOUT = (
    "Pricing page redesign: we replaced the plan comparison table with a grid of cards, one card per plan, "
    "because people in usability tests were confused by the many plan columns."
)
CERT_ERROR = "Chrome shows ERR_CERT_DATE_INVALID on staging because the Let's Encrypt renewal cron stopped running."
REVERT_COMMIT = "Commit 3f9c2ab reverted the retry loop in the payment worker that double-charged some cards."
OTHER_MEMORIES = [
    "The mobile app's onboarding flow was cut from five steps to three after we saw drop-off at step four.",
    "Postgres backups run nightly at 02:00 UTC and are kept for 30 days in the S3 bucket db-backups-eu.",
    "Stripe webhooks are verified with the signing secret stored in Vault under payments/stripe.",
    "The marketing site switched its body font from Inter to Source Sans because long articles were hard to read.",
    "Production deploys need two approvals in GitHub and only happen Monday to Thursday.",
    "The dashboard sidebar is collapsed by default on small screens so the charts get more room.",
    "Customer support uses a Zendesk macro for refund requests over 100 EUR.",
]


@pytest.fixture(params=[MINILM, MPNET_NAME])
def search(request, settings, mcp_as, owner_token, django_capture_on_commit_callbacks):
    """Write the memories through MCP, let them be embedded on commit with the model, and search them."""
    settings.GNOSEM_EMBEDDING_MODEL = request.param
    mcp = mcp_as(owner_token, MODERN)
    ids = {}
    with django_capture_on_commit_callbacks(execute=True):
        for content in [*OTHER_MEMORIES[:3], PRICING_LAYOUT, *OTHER_MEMORIES[3:], CERT_ERROR, REVERT_COMMIT]:
            ids[content] = mcp.ok("memory_write", {"content": content})["id"]

    def first_result(query: str) -> str:
        results = mcp.ok("memory_search", {"query": query, "top_k": 5})["results"]
        assert all(hit["indexing_status"] == "indexed" for hit in results)
        return next(content for content, memory_id in ids.items() if memory_id == results[0]["id"])

    return first_result


@pytest.mark.parametrize("query", ["ERR_CERT_DATE_INVALID", "what causes ERR_CERT_DATE_INVALID?"])
def test_an_error_code_finds_its_memory_first(search, query):
    assert search(query) == CERT_ERROR


@pytest.mark.parametrize("query", ["3f9c2ab", "what did 3f9c2ab change?"])
def test_a_short_sha_finds_its_memory_first(search, query):
    assert search(query) == REVERT_COMMIT


def test_a_question_about_the_checkout_page_finds_the_pricing_layout_memory_first(search):
    assert search("how is the checkout page laid out?") == PRICING_LAYOUT


@pytest.mark.parametrize(
    "search",
    [
        pytest.param(
            MINILM,
            marks=pytest.mark.xfail(
                strict=True,
                reason=(
                    "The default model lacks the association: all-MiniLM-L6-v2 ties 'checkout screen' to the "
                    "onboarding-flow memory (cosine 0.31) and to 'small screens' (0.22, plus BM25 on 'screen') "
                    "more than to the pricing page (0.22), so no fusion puts the pricing memory first."
                ),
            ),
        ),
        MPNET_NAME,
    ],
    indirect=True,
)
def test_the_design_example_finds_the_pricing_layout_memory_for_the_checkout_screen(search):
    assert search("how was the checkout screen laid out?") == PRICING_LAYOUT
