"""The cache on Redis (REDIS_URL): sign-in, sign-up and /healthz keep answering while Redis is down
or hangs, the outage is logged once rather than per request, and with Redis up the sign-in
throttle counts there.

"Down" is a port nobody listens on; "hanging" is a socket that takes connections and never answers;
"up" is a redis-server of this module's own on a free port (never the machine's own Redis).
"""

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from gnosem.cache import RETRY_AFTER_SECONDS, SOCKET_TIMEOUT_SECONDS, cache_settings
from tests.accounts.email_confirmation import PASSWORD, sign_up_and_confirm
from tests.faults.conftest import free_port

WRONG_PASSWORD_ERROR = "The email address and/or password you specified are not correct."
THROTTLED = "Too many failed login attempts"


def cache_on(settings, redis_url: str) -> None:
    """The cache as settings make it with REDIS_URL set (overriding CACHES resets Django's caches)."""
    settings.CACHES = cache_settings(redis_url=redis_url)


@pytest.fixture
def redis_down(settings) -> str:
    url = f"redis://127.0.0.1:{free_port()}/0"
    cache_on(settings, url)
    return url


@pytest.fixture
def redis_hanging(settings) -> Iterator[str]:
    """A listening socket that never accepts: connecting succeeds (the kernel's backlog), every
    command then waits for an answer that never comes, as with a Redis that is stuck or cut off."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
        cache_on(settings, url)
        yield url


@pytest.fixture
def operator_made(db):
    """An account the operator made (its address counts as confirmed at its first sign-in)."""
    return get_user_model().objects.create_user(username="root", email="root@example.com", password=PASSWORD)


def sign_in(client, email: str, password: str):
    return client.post(reverse("account_login"), {"login": email, "password": password})


def test_settings_with_redis_url_set_use_the_resilient_cache(tmp_path):
    probe = (
        "import django; django.setup(); from django.core.cache import caches; "
        "backend = caches['default']; print(type(backend).__name__, backend._cache._pool_options['socket_timeout'])"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "gnosem.settings",
        "GNOSEM_DATA_DIR": str(tmp_path),
        "REDIS_URL": "redis://10.0.0.5:6379/2",
    }
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    backend, socket_timeout = result.stdout.split()
    assert backend == "ResilientRedisCache"
    assert float(socket_timeout) <= 1


def test_without_redis_the_cache_is_the_database_table():
    assert cache_settings(redis_url=None)["default"]["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"


def test_while_redis_is_down_reads_miss_and_writes_are_dropped(redis_down):
    assert cache.get("k", "default") == "default"
    assert cache.get_many(["k", "l"]) == {}
    assert cache.has_key("k") is False
    assert cache.set("k", 1) is None
    assert cache.set_many({"k": 1, "l": 2}) == ["k", "l"]  # the keys that were not stored
    assert cache.delete("k") is False
    assert cache.delete_many(["k", "l"]) is None
    assert cache.touch("k") is False
    # Failing open: allauth's throttle takes a lock with add() and would refuse every sign-in (after
    # a second's wait) if the lock were never granted.
    assert cache.add("k:lock", True) is True
    # A counter that cannot be read is missing, as Django's contract says for incr/decr.
    with pytest.raises(ValueError, match="not found"):
        cache.incr("k")
    with pytest.raises(ValueError, match="not found"):
        cache.decr("k")
    assert cache.get_or_set("k", 7) == 7


def test_a_user_signs_in_while_redis_is_down(client, redis_down, operator_made):
    response = sign_in(client, "root@example.com", PASSWORD)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert client.session["_auth_user_id"] == str(operator_made.pk)


def test_a_wrong_password_while_redis_is_down_gets_the_form_error(client, redis_down, operator_made):
    response = sign_in(client, "root@example.com", "wrong")
    assert response.status_code == 200
    assert WRONG_PASSWORD_ERROR in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_visitor_signs_up_while_redis_is_down(client, redis_down, db):
    response = sign_up_and_confirm(client, "ada@example.com")
    assert response.status_code == 200
    assert response.wsgi_request.user.is_authenticated


@pytest.mark.parametrize("details", [False, True])
def test_healthz_answers_while_redis_is_down(client, redis_down, consumer_expected, db, settings, details):
    settings.GNOSEM_HEALTHZ_DETAILS = details
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded"  # no heartbeat can be read
    if details:
        assert any(problem.startswith("worker:") for problem in body["problems"]), body
    else:
        assert body == {"status": "degraded"}


def test_a_hanging_redis_does_not_hang_sign_in(client, redis_hanging, operator_made):
    started = time.monotonic()
    response = sign_in(client, "root@example.com", PASSWORD)
    elapsed = time.monotonic() - started
    assert response.status_code == 302
    # One command waits out the socket timeout and the rest skip Redis for RETRY_AFTER_SECONDS;
    # without that, each of a sign-in's twenty cache calls would wait it out (20 s).
    assert elapsed < 5, f"sign-in took {elapsed:.1f} s"
    started = time.monotonic()
    assert WRONG_PASSWORD_ERROR in sign_in(Client(), "root@example.com", "wrong").content.decode()
    assert time.monotonic() - started < SOCKET_TIMEOUT_SECONDS  # Redis was not tried


def test_an_outage_is_logged_once_not_per_request(client, redis_down, operator_made, caplog):
    caplog.set_level(logging.WARNING, logger="gnosem.cache")
    for _ in range(3):
        sign_in(client, "root@example.com", "wrong")
    warnings = [record for record in caplog.records if record.name == "gnosem.cache"]
    assert len(warnings) == 1, [record.getMessage() for record in warnings]
    message = warnings[0].getMessage()
    assert redis_down.rsplit("/", 1)[0] in message and "ConnectionError" in message
    assert warnings[0].exc_info is None  # a line, not a traceback


def test_the_logged_address_leaves_out_the_password(settings, db, caplog):
    cache_on(settings, f"redis://:hunter2@127.0.0.1:{free_port()}/0")
    caplog.set_level(logging.WARNING, logger="gnosem.cache")
    cache.get("k")
    assert caplog.records and "hunter2" not in caplog.text


@pytest.fixture
def redis_up(settings) -> Iterator:
    from tests.faults.test_production_on_redis import RedisServer

    server = RedisServer()
    server.start()
    cache_on(settings, server.url)
    try:
        yield server
    finally:
        server.close()


@pytest.mark.redis
def test_the_throttle_counts_in_redis_and_sign_in_survives_its_stop(redis_up, operator_made):
    def fail_five_times_then_sign_in():
        client = Client()
        for _ in range(5):
            assert WRONG_PASSWORD_ERROR in sign_in(client, "root@example.com", "wrong").content.decode()
        return client, sign_in(client, "root@example.com", PASSWORD)

    # Up: five failures for this account from this address, then even the right password is refused.
    client, response = fail_five_times_then_sign_in()
    assert THROTTLED in response.content.decode() and "_auth_user_id" not in client.session
    with redis_up.client() as direct:
        assert direct.keys("*allauth:rl:allauth.account:login_failed*")

    # Down: sign-in answers; the counts are gone with Redis, so the right password signs in.
    redis_up.stop()
    client = Client()
    assert WRONG_PASSWORD_ERROR in sign_in(client, "root@example.com", "wrong").content.decode()
    assert sign_in(client, "root@example.com", PASSWORD).status_code == 302

    # Back: after the retry interval the throttle counts again.
    redis_up.start()
    time.sleep(RETRY_AFTER_SECONDS)
    client, response = fail_five_times_then_sign_in()
    assert THROTTLED in response.content.decode() and "_auth_user_id" not in client.session
