"""DRF throttles over memories.limits.rates: requests per API token, imports per user. Over a limit
they raise RateLimited, which the error handler answers as 429 with Retry-After and a message
stating the limit and the wait."""

from typing import TYPE_CHECKING

from rest_framework.exceptions import APIException, Throttled
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from accounts.models import ApiToken
from memories.limits.rates import RateDecision, import_rate_limit_hit, token_rate_limit_hit

if TYPE_CHECKING:  # DRF imports this module while rest_framework.views loads
    from rest_framework.views import APIView


class RateLimited(Throttled):
    """Throttled with our own message (DRF's would append its own "Expected available in ...")."""

    default_code = "rate_limited"

    def __init__(self, decision: RateDecision, subject: str, things: str = "requests") -> None:
        APIException.__init__(self, decision.message(subject, things), self.default_code)
        self.wait = decision.retry_after


class TokenRateThrottle(BaseThrottle):
    """GNOSEM_TOKEN_RATE_LIMIT per API token, counted together with the token's MCP requests."""

    def allow_request(self, request: Request, view: "APIView") -> bool:
        if isinstance(request.auth, ApiToken):
            decision = token_rate_limit_hit(request.auth)
            if not decision.allowed:
                raise RateLimited(decision, "this API token")
        return True


class ImportRateThrottle(BaseThrottle):
    """GNOSEM_IMPORT_RATE_LIMIT per user, counted together with the import page."""

    def allow_request(self, request: Request, view: "APIView") -> bool:
        if isinstance(request.auth, ApiToken):
            decision = import_rate_limit_hit(request.auth.owner)  # request.user is the token's owner
            if not decision.allowed:
                raise RateLimited(decision, "your account", "imports")
        return True
