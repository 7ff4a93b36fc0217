"""Reading the JSON clients send: UTF-8 text, no lone surrogates, no deep nesting, no huge numbers.

Python's json module accepts more than can be stored or answered: `json.loads(bytes)` guesses
UTF-16 or UTF-32 and lets unpaired surrogates through (so do `\\ud800` escapes), nesting deep
enough to exhaust the interpreter's stack raises RecursionError there or in whatever walks the
value later, and an integer of thousands of digits raises ValueError. PostgreSQL refuses such text,
so they would surface as server errors. Every JSON door reads through here (MCP, the REST API, an
import's file, OAuth client registration and client metadata documents), so all refuse the same
input with the same words.

NUL (`\\u0000`) is text and passes: the fields stored in text columns refuse it, each naming itself.
"""

import json
import re
import sys
from typing import Any

# Deep enough for any message Gnosem reads (an MCP envelope is about 5 levels, an export 3), far
# from the interpreter's recursion limit.
MAX_JSON_DEPTH = 64
# The interpreter's default limit for turning digits into an integer (4,300); no number Gnosem
# reads comes near it.
MAX_INTEGER_DIGITS = sys.int_info.default_max_str_digits
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonInputError(ValueError):
    """The JSON cannot be read: `problem` says what is wrong with it ("is not valid JSON (...)"),
    `advice`, when there is one, what to send instead. The message speaks of a request's body; a
    door that reads something else (a file, a fetched document) words its own from `problem`."""

    def __init__(self, problem: str, advice: str = "") -> None:
        super().__init__(f"the body {problem}{f'; {advice}' if advice else ''}.")
        self.problem = problem
        self.advice = advice


def load_json(body: bytes | str) -> Any:
    """The JSON value of `body`, or JsonInputError saying what is wrong with it."""
    if isinstance(body, bytes):
        try:
            # A UTF-8 byte order mark is tolerated (RFC 8259 lets a reader ignore it).
            body = body.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JsonInputError(
                f"is not UTF-8 text (invalid byte at offset {exc.start})", "send JSON encoded as UTF-8"
            ) from None
    try:
        value = json.loads(body, parse_constant=_refuse_constant, parse_int=_integer)
    except JsonInputError:
        raise
    except RecursionError:
        raise _too_deep() from None
    except ValueError as exc:
        raise JsonInputError(f"is not valid JSON ({exc})") from None
    _check_value(value)
    return value


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _integer(digits: str) -> int:
    if len(digits) - digits.startswith("-") > MAX_INTEGER_DIGITS:
        raise JsonInputError(
            f"holds a whole number of more than {MAX_INTEGER_DIGITS:,} digits", "send numbers of ordinary size"
        )
    return int(digits)


def _too_deep() -> JsonInputError:
    return JsonInputError(f"is nested too deeply (more than {MAX_JSON_DEPTH} levels)", "send flatter JSON")


def _check_value(value: Any) -> None:
    """Walk the value without recursion: nesting depth, and strings that are not text."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise JsonInputError(
                    "escapes a lone UTF-16 surrogate (like \\ud800), which is not text", "send whole characters"
                )
        elif isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                raise _too_deep()
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
