"""Rate limits counted in PostgreSQL, so that every web process on every host sees one count.

Each limited subject (an API token; a user's imports) is one row of an UNLOGGED table holding the
generic cell rate algorithm's theoretical arrival time (TAT): with a rate of N per P seconds, each
request moves the TAT on by P/N, and a request is refused while the TAT lies more than P - P/N
ahead. That allows a burst of N, then one request every P/N, with no window edges to game. One
atomic upsert decides and counts; a refused request is not counted, so a client that keeps
retrying is let in as soon as its allowance returns.

Why not Django's cache: without Redis it is the database cache, whose `incr` is a read then a
write, so concurrent requests lose counts; the upsert counts every one, and faster
(docs/benchmarks.md, "Rate-limit counter").
"""

import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from accounts.models import ApiToken
from gnosem.env import Rate
from gnosem.types import Owner

# Insert the subject's first request, or move its TAT on if the request is within the allowance.
# When it is not, the WHERE leaves the row alone and nothing is returned: `prior` then says how
# far ahead the TAT is, which gives the wait.
_SQL = """
    WITH prior AS (SELECT tat FROM memories_rate_counter WHERE key = %(key)s),
    counted AS (
        INSERT INTO memories_rate_counter AS c (key, tat) VALUES (%(key)s, %(now)s + %(interval)s)
        ON CONFLICT (key) DO UPDATE SET tat = GREATEST(c.tat, %(now)s) + %(interval)s
        WHERE GREATEST(c.tat, %(now)s) - %(now)s <= %(tolerance)s
        RETURNING tat
    )
    SELECT EXISTS (SELECT 1 FROM counted), (SELECT tat FROM prior)
"""


@dataclass(frozen=True)
class RateDecision:
    """Whether a request may go ahead and, when not, in how many whole seconds to retry."""

    allowed: bool
    retry_after: int = 0
    rate: Rate | None = None

    def message(self, subject: str, things: str = "requests") -> str:
        """What a refused caller reads: the limit, and how long to wait."""
        assert self.rate is not None, "only a refusal has a message, and it names its rate"
        return (
            f"Rate limit reached: {subject} may make {self.rate.count:,} {things} per {self.rate.period}. "
            f"Try again in {self.retry_after} second{'' if self.retry_after == 1 else 's'}."
        )


ALLOWED = RateDecision(allowed=True)


def rate_limit_hit(key: str, rate: Rate | None) -> RateDecision:
    """Count one request of `key` against `rate` (None: no limit) and say whether it may go ahead."""
    if rate is None:
        return ALLOWED
    interval = rate.seconds / rate.count
    tolerance = rate.seconds - interval
    now = time.time()
    with connection.cursor() as cursor:
        cursor.execute(_SQL, {"key": key, "now": now, "interval": interval, "tolerance": tolerance})
        allowed, prior_tat = cursor.fetchone()
    if allowed:
        return ALLOWED
    # No prior row seen: a concurrent first request inserted it after this statement's snapshot.
    ahead = (prior_tat if prior_tat is not None else now + rate.seconds) - now - tolerance
    return RateDecision(allowed=False, retry_after=max(1, math.ceil(ahead)), rate=rate)


def token_rate_limit_hit(token: ApiToken) -> RateDecision:
    """One request made with an API token (MCP and REST share the count)."""
    return rate_limit_hit(f"token:{token.pk}", settings.GNOSEM_TOKEN_RATE_LIMIT)


def import_rate_limit_hit(user: Owner) -> RateDecision:
    """One import by a user, from the page or the REST API."""
    return rate_limit_hit(f"import:user:{user.pk}", settings.GNOSEM_IMPORT_RATE_LIMIT)


def note_upload_rate_limit_hit(user: Owner) -> RateDecision:
    """One file uploaded as a note by a user (a PDF's text may take seconds to extract)."""
    return rate_limit_hit(f"note-upload:user:{user.pk}", settings.GNOSEM_NOTE_UPLOAD_RATE_LIMIT)
