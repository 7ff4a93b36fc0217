"""Schema fuzzing: schemathesis generates requests for every operation of the served OpenAPI
document, valid and invalid ones, and sends them with a real write token through the WSGI
application. No answer may be a 5xx, and every answer must match the schema (status code,
content type, body).

Bounded to keep `make test` quick (EXAMPLES_PER_OPERATION per generation mode); the counts are
printed in the test run's output.
"""

import json
from collections import Counter
from collections.abc import Iterator

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from memories import services
from tests.fuzzing import fuzz_settings, report_line

EXAMPLES_PER_OPERATION = 50
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
TALLY: Counter[str] = Counter()
OPERATIONS: set[str] = set()


@pytest.fixture
def in_test_transaction() -> Iterator[None]:
    """Requests through the WSGI handler share the test's database transaction, as with Django's
    test client: the handler would otherwise close the connection at each request's start and end."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def served_schema() -> dict:
    """The OpenAPI document exactly as /api/v1/schema serves it, made without a request (test
    collection runs before the test database exists); test_the_fuzzed_schema_is_the_served_one
    checks it against the real answer."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document, renderer_context={}))


SCHEMA_DOCUMENT = served_schema()
schema = schemathesis.openapi.from_dict(SCHEMA_DOCUMENT)
WSGI_APPLICATION = get_wsgi_application()


@pytest.fixture(autouse=True)
def fuzzing_conditions(settings) -> None:
    # What the fuzzing exercises is input handling, not the rate limits it would reach.
    settings.GNOSEM_TOKEN_RATE_LIMIT = None
    settings.GNOSEM_IMPORT_RATE_LIMIT = None


@pytest.fixture
def memory(owner):
    """Something to list, read, search, change and delete (ids the fuzzer cannot guess are 404s)."""
    return services.memory_write(owner=owner, content="The staging database is pg-staging-2.", tags=["db"])


@pytest.fixture(scope="module", autouse=True)
def report_counts(request) -> Iterator[None]:
    """Print what the fuzzing tried, for the record: requests sent, operations, 5xx answers."""
    yield
    line = (
        f"schema fuzzing: {TALLY['requests']} requests over {len(OPERATIONS)} operations, "
        f"{TALLY['5xx']} answered 5xx, {TALLY['4xx']} 4xx"
    )
    report_line(request.config, line)


@schema.parametrize()
@fuzz_settings(EXAMPLES_PER_OPERATION)
def test_every_operation_answers_within_its_schema_and_never_5xx(case, owner_token, memory, in_test_transaction):
    # In a savepoint rolled back afterwards: every example starts from the same state, and one
    # that breaks the transaction cannot make the next ones fail.
    # A generated Host header names another site: Django refuses it (ALLOWED_HOSTS) with its own 400
    # before any API code runs. That is the deployment's contract, not the API schema's.
    case.headers = {name: value for name, value in (case.headers or {}).items() if name.lower() != "host"}
    with transaction.atomic():
        response = case.call(app=WSGI_APPLICATION, headers={"Authorization": f"Bearer {owner_token}"})
        transaction.set_rollback(True)
    TALLY["requests"] += 1
    TALLY[f"{response.status_code // 100}xx"] += 1
    OPERATIONS.add(case.operation.label)
    case.validate_response(response, checks=CHECKS)


def test_the_fuzzed_schema_is_the_served_one(client, db):
    served = client.get("/api/v1/schema", headers={"Accept": "application/vnd.oai.openapi+json"})

    assert served.status_code == 200
    assert json.loads(served.content) == SCHEMA_DOCUMENT
