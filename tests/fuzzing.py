"""What the fuzzing suites share: their hypothesis settings, the strings that have broken servers,
and printing a suite's counts in the test run's output, where the lead can quote them."""

import json

import hypothesis
import pytest
from hypothesis import HealthCheck

# UTF-8-encodable strings that have broken servers: NUL and other controls, header injection,
# bidi overrides, zero-width characters, a BOM, long and huge-looking values, SQL and format
# syntax, path traversal.
HOSTILE_STRINGS = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\x1b[31m\r\n\t",
    "bell\x07",
    "\r\nSet-Cookie: x=1",
    "\u202eevil",
    "zero\u200bwidth",
    "\ufeff",
    "'; DROP TABLE memories_memory; --",
    "%s%s%n{0}{}",
    "9" * 400,
    "1e309",
    "NaN",
    "../../etc/passwd",
    "x" * 3_000,
]
# Strings JSON can carry (json.dumps escapes them as \ud800) that are not text.
LONE_SURROGATES = ["\ud800", "x\udfffy"]
# JSON values that strain a reader, written out as they are: nesting thousands deep, a whole
# number of more digits than Python reads into an int, an escaped lone surrogate, an escaped NUL.
HOSTILE_JSON_VALUES = [b"[" * 8_000 + b"]" * 8_000, b"1" * 5_000, b'"\\udc00"', b'"a\\u0000b"']


def with_member(document: dict, value: bytes) -> bytes:
    """`document` as JSON with one member more, whose `value` is written out as it is."""
    return json.dumps({**document, "_hostile": None}).encode().replace(b'"_hostile": null', b'"_hostile": ' + value)


def fuzz_settings(max_examples: int) -> hypothesis.settings:
    """A suite's settings: no deadline (a request may load the model), no example database (the
    profile in tests/conftest.py decides what repeats), and no health check, since the examples
    are requests to a real server and may be slow or large by design."""
    return hypothesis.settings(
        max_examples=max_examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )


def report_line(config: pytest.Config, line: str) -> None:
    """Write `line` to the terminal, past output capturing (fixture teardown is captured too)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if reporter is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)
