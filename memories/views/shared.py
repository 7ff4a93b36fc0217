"""What the pages share: tags as typed into a form, how many results a search shows, the answer
over a rate limit."""

from django.http import HttpResponse

from memories.limits.rates import RateDecision
from memories.validation import MAX_TOP_K

SEARCH_RESULTS = MAX_TOP_K  # as many as a search may return


def rate_limited(page: HttpResponse, decision: RateDecision) -> HttpResponse:
    """`page`, which says why, as the answer to a request over a rate limit: 429, with the seconds to
    wait in Retry-After."""
    page.status_code = 429
    page["Retry-After"] = str(decision.retry_after)
    return page


def typed_tags(text: str) -> list[str]:
    """Tags as typed into a form: separated by spaces or commas."""
    return text.replace(",", " ").split()
