"""Shared fixtures: an owner and a stranger, each with tokens, tasks run in-process, and
compression off unless a test points it at a chat server."""

import os

import hypothesis
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from huey.contrib.djhuey import HUEY

from accounts.tokens import token_create

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
