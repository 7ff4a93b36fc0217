"""Reading the JSON clients send: UTF-8 text, no lone surrogates, no deep nesting.

Python's json module accepts more than can be stored or answered: `json.loads(bytes)` guesses
UTF-16 or UTF-32 and lets unpaired surrogates through (so do `\\ud800` escapes), and nesting deep
enough to exhaust the interpreter's stack raises RecursionError there or in whatever walks the
value later. PostgreSQL refuses such text, so they would surface as server errors. The MCP
endpoint and the REST API read bodies through here, so both doors refuse the same input with the
same words.
"""

import json
import re
from typing import Any

# Deep enough for any message Gnosem reads (an MCP envelope is about 5 levels, an export 3), far
# from the interpreter's recursion limit.
MAX_JSON_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonInputError(ValueError):
    """The body cannot be read; the message says what was wrong and what to send instead."""


def load_json(body: bytes | str) -> Any:
    """The JSON value of a request body, or JsonInputError saying what is wrong with it."""
    if isinstance(body, bytes):
        try:
            # A UTF-8 byte order mark is tolerated (RFC 8259 lets a reader ignore it).
            body = body.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JsonInputError(
                f"the body is not UTF-8 text (invalid byte at offset {exc.start}); send JSON encoded as UTF-8."
            ) from None
    try:
        value = json.loads(body, parse_constant=_refuse_constant)
    except RecursionError:
        raise _too_deep() from None
    except ValueError as exc:
        raise JsonInputError(f"the body is not valid JSON ({exc}).") from None
    _check_value(value)
    return value


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _too_deep() -> JsonInputError:
    return JsonInputError(f"the body is nested more than {MAX_JSON_DEPTH} levels deep; send flatter JSON.")


def _check_value(value: Any) -> None:
    """Walk the value without recursion: nesting depth, and strings that are not text."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise JsonInputError(
                    "the body escapes a lone UTF-16 surrogate (like \\ud800), which is not text; send whole characters."
                )
        elif isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                raise _too_deep()
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
