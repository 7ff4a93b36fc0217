"""The cache: Redis when REDIS_URL is set, else a database table; on Redis, one that survives Redis.

The cache holds allauth's sign-in and sign-up throttle counts and the worker's heartbeat for
/healthz. Django's RedisCache raises when Redis cannot be reached, which made every sign-in answer
500 (and, with Redis hanging, wait) until Redis came back. ResilientRedisCache fails open instead.
"""

import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

# Redis answers in well under a millisecond; one that does not answer within these is treated as down.
SOCKET_CONNECT_TIMEOUT_SECONDS = 0.5
SOCKET_TIMEOUT_SECONDS = 1.0
# After a failure the cache does not try Redis for this long: a sign-in makes some twenty cache
# calls, and a Redis that hangs would otherwise cost each of them the timeout.
RETRY_AFTER_SECONDS = 2.0
WARN_EVERY_SECONDS = 60.0

UNREACHABLE = (RedisConnectionError, RedisTimeoutError)


def cache_settings(*, redis_url: str | None) -> dict[str, dict[str, str]]:
    """settings.CACHES: every web process on every host must see the same throttle counts, so Redis
    when there is one, else a database table (`manage.py createcachetable`)."""
    if redis_url:
        return {"default": {"BACKEND": "gnosem.cache.ResilientRedisCache", "LOCATION": redis_url}}
    return {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "gnosem_cache"}}


@dataclass
class _Outage:
    """What this process knows of one Redis being down. Django makes a cache object per thread, so
    this lives at module level, shared by the threads of a process."""

    skip_until: float = 0.0  # monotonic; before it, Redis is not tried
    warned_at: float | None = None  # monotonic; the last warning, None while Redis answers
    failing: bool = False


_outages: dict[str, _Outage] = {}


def _without_password(location: str) -> str:
    """The Redis URL(s) for the log, without any password in them."""
    shown = []
    for url in re.split("[;,]", location):  # as RedisCache splits LOCATION
        parts = urlsplit(url)
        netloc = parts.hostname or ""
        if parts.port:
            netloc = f"{netloc}:{parts.port}"
        shown.append(f"{parts.scheme}://{netloc}{parts.path}")
    return ",".join(shown)


class ResilientRedisCache(RedisCache):
    """Django's RedisCache where Redis not answering (refused, unreachable, timed out) is a miss or
    a no-op: reads return the default, writes are dropped, incr/decr find no key. One warning a
    minute per process says so, not a traceback per request.

    Failing open matters for allauth's throttles: they take a lock with `add`, which therefore
    answers True (a refused lock would make every sign-in wait a second and then be refused), then
    read a list of attempt times (none) and write it back (dropped). So while Redis is down failed
    sign-ins are not counted and nobody is throttled; counts made before the outage are lost with a
    Redis that does not persist; the per-address and per-account limits apply again as soon as
    Redis answers. The same holds for the sign-up and password-reset limits. Sign-in stays possible
    rather than failing for everyone; passwords are still checked, so an attacker gains only
    unthrottled guessing for as long as the outage lasts.
    """

    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        options = {
            "socket_connect_timeout": SOCKET_CONNECT_TIMEOUT_SECONDS,
            "socket_timeout": SOCKET_TIMEOUT_SECONDS,
            **params.get("OPTIONS", {}),
        }
        super().__init__(server, {**params, "OPTIONS": options})
        self._location = server if isinstance(server, str) else ",".join(server)
        self._outage = _outages.setdefault(self._location, _Outage())

    def _call(self, method: Callable[..., Any], fallback: Any, *args: Any, **kwargs: Any) -> Any:
        """`method` of RedisCache, or `fallback` when Redis does not answer (or recently did not)."""
        outage = self._outage
        if outage.failing and time.monotonic() < outage.skip_until:
            return fallback
        try:
            result = method(*args, **kwargs)
        except UNREACHABLE as error:
            self._record_failure(error)
            return fallback
        if outage.failing:
            outage.failing, outage.warned_at = False, None
            logger.info("The Redis cache at %s answers again.", _without_password(self._location))
        return result

    def _record_failure(self, error: Exception) -> None:
        outage = self._outage
        now = time.monotonic()
        outage.failing, outage.skip_until = True, now + RETRY_AFTER_SECONDS
        if outage.warned_at is None or now - outage.warned_at >= WARN_EVERY_SECONDS:
            outage.warned_at = now
            logger.warning(
                "The Redis cache at %s does not answer (%s: %s). Until it does, the cache is empty: "
                "failed sign-ins are not counted (no throttle) and /healthz sees no worker heartbeat. "
                "Next report in %.0f s if it lasts.",
                _without_password(self._location),
                type(error).__name__,
                error,
                WARN_EVERY_SECONDS,
            )

    def add(self, key: Any, value: Any, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        return self._call(super().add, True, key, value, timeout, version)  # True: see the class docstring

    def get(self, key: Any, default: Any | None = None, version: int | None = None) -> Any:
        return self._call(super().get, default, key, default, version)

    def set(self, key: Any, value: Any, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        return self._call(super().set, None, key, value, timeout, version)

    def touch(self, key: Any, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        return self._call(super().touch, False, key, timeout, version)

    def delete(self, key: Any, version: int | None = None) -> bool:
        return self._call(super().delete, False, key, version)

    def get_many(self, keys: Iterable[Any], version: int | None = None) -> dict[Any, Any]:
        return self._call(super().get_many, {}, keys, version)

    def has_key(self, key: Any, version: int | None = None) -> bool:
        return self._call(super().has_key, False, key, version)

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> int:
        """As for a key that is not there (Django's contract; decr and incr_version go through here)."""
        missing = object()
        result = self._call(super().incr, missing, key, delta, version)
        if result is missing:
            raise ValueError(f"Key '{key}' not found (the Redis cache does not answer).")
        return result

    def set_many(
        self, data: dict[Any, Any], timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None
    ) -> list[Any]:
        return self._call(super().set_many, list(data), data, timeout, version)  # the keys not stored

    def delete_many(self, keys: Iterable[Any], version: int | None = None) -> None:
        return self._call(super().delete_many, None, keys, version)

    def clear(self) -> bool:  # type: ignore[override]  # RedisCache.clear returns a bool; the stubs say BaseCache's None
        return self._call(super().clear, False)
