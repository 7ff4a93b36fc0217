"""Shared fixtures: an owner and a stranger, each with tokens, tasks run in-process, compression
off unless a test points it at a chat server, a fast password hasher, and management commands run
as an operator would."""

import os
from collections.abc import Callable, Iterator
from io import StringIO

import hypothesis
import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from huey.contrib.djhuey import HUEY

from accounts.tokens import token_create
from memories import health

# The fuzzing suites (schema, MCP, isolation) try the same examples on every run by default, so a
# red `make test` always reproduces; HYPOTHESIS_PROFILE=explore draws new ones each run.
hypothesis.settings.register_profile("repeatable", derandomize=True, database=None)
hypothesis.settings.register_profile("explore", derandomize=False, database=None)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


@pytest.fixture(autouse=True, scope="session")
def tasks_run_immediately():
    """Queued tasks run in the enqueuing process (on commit), so tests see their effect at once.
    The test that exercises a real consumer over Redis builds its own queue."""
    HUEY.immediate = True
    yield
    HUEY.immediate = False


@pytest.fixture(autouse=True)
def compression_off(settings):
    """Tests do not depend on a model configured in the environment; those about compression
    configure their own (tests/memories/conftest.py)."""
    settings.GNOSEM_LLM_BASE_URL = None
    settings.GNOSEM_LLM_MODEL = None


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """Tests sign up and sign in many times (throttles count failed sign-ins): a fast hasher keeps
    them quick; what is tested is the flow around the check, not the hash."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def consumer_expected() -> Iterator[None]:
    """Tasks go to a consumer (as in production), so /healthz looks for its heartbeat in the cache,
    where none is yet."""
    HUEY.immediate = False
    cache.delete(health._heartbeat_key())
    yield
    HUEY.immediate = True
    cache.delete(health._heartbeat_key())


@pytest.fixture(scope="session")
def command() -> Callable[..., tuple[str, str]]:
    """Run a management command as an operator would; returns what it wrote to stdout and stderr."""

    def command(*args: str) -> tuple[str, str]:
        stdout, stderr = StringIO(), StringIO()
        call_command(*args, stdout=stdout, stderr=stderr)
        return stdout.getvalue(), stderr.getvalue()

    return command


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database, plus the cache table the log-in throttle counts in (as `serve` makes)."""
    with django_db_blocker.unblock():
        call_command("createcachetable", verbosity=0)


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user(username="owner", email="owner@example.com")


@pytest.fixture
def stranger(db):
    return get_user_model().objects.create_user(username="stranger", email="stranger@example.com")


@pytest.fixture
def lead(db):
    """Another user, who leads the team spaces a test makes the owner a member of."""
    return get_user_model().objects.create_user(username="lead", email="lead@example.com")


@pytest.fixture
def owner_token(owner) -> str:
    return token_create(owner=owner, name="owner laptop", scope="write").secret


@pytest.fixture
def owner_read_token(owner) -> str:
    return token_create(owner=owner, name="owner reader", scope="read").secret


@pytest.fixture
def stranger_token(stranger) -> str:
    return token_create(owner=stranger, name="stranger laptop", scope="write").secret


@pytest.fixture
def owner_client(owner) -> Client:
    """A browser signed in as the owner."""
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def stranger_client(stranger) -> Client:
    client = Client()
    client.force_login(stranger)
    return client
