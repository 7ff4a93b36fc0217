"""MCP fuzzing: hypothesis-generated JSON-RPC envelopes, tool arguments and raw bodies, sent to
/mcp in both protocol eras (2025: the MCP-Protocol-Version header; 2026-07-28: params._meta with
the Mcp-Method / Mcp-Name headers). Whatever a client sends, the answer is never a 5xx and never
JSON-RPC -32603 ("Internal error"): a bad message is a protocol error, a bad argument an `isError`
result.

Bounded to keep `make test` quick (TOOL_CALL_EXAMPLES per era for tool calls, EXAMPLES for each of
the other tests); the counts are printed in the run's output. Each message runs in a savepoint that
is rolled back, so examples do not depend on one another.
"""

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import hypothesis
import pytest
from django.db import transaction
from hypothesis import given, note
from hypothesis import strategies as st

from memories import services
from memories.mcp.protocol import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    INTERNAL_ERROR,
    PROTOCOL_VERSION_META_KEY,
    SUPPORTED_VERSIONS,
)
from memories.mcp.tools import TOOLS
from memories.notes import services as notes
from tests.fuzzing import HOSTILE_JSON_VALUES, LONE_SURROGATES, fuzz_settings, report_line
from tests.fuzzing import HOSTILE_STRINGS as SHARED_HOSTILE_STRINGS
from tests.memories.mcp.conftest import LEGACY, MODERN, McpCaller

EXAMPLES = 200
TOOL_CALL_EXAMPLES = 500
FUZZ_SETTINGS = fuzz_settings(EXAMPLES)
TOOL_CALL_SETTINGS = hypothesis.settings(FUZZ_SETTINGS, max_examples=TOOL_CALL_EXAMPLES)
TALLY: Counter[str] = Counter()

# Besides the shared ones: lone surrogates (json.dumps escapes them as \ud800) and times that
# PostgreSQL or Python refuse.
HOSTILE_STRINGS = [
    *SHARED_HOSTILE_STRINGS,
    *LONE_SURROGATES,
    "2024-02-30",
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00+14:00",
    "2025-06-01T25:00:00+99:00",
    "2359-08-25T17:07:39-17:49",
]
# Short strings mixing letters with NUL, controls, a lone surrogate and non-ASCII.
control_mixes = st.builds(
    "".join, st.lists(st.sampled_from(["a", " ", "\x00", "\x07", "\n", "\ud800", "\u00e9"]), min_size=1, max_size=6)
)
text = st.one_of(
    st.sampled_from(HOSTILE_STRINGS),
    control_mixes,
    control_mixes,
    st.text(max_size=30),
    st.text(st.characters(exclude_categories=()), max_size=10),  # surrogates and controls included
)
numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 1, 50, 51, 100, 101, 1e308, -1e308, 5e-324, 2**63, 2**64, 0.5, 1.0]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, text)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=8
)


# The ids of the fuzzed owner's one memory and one note, which valid calls of the tools taking an id name.
FUZZ_MEMORY_ID = "00000000-0000-4000-8000-00000000f022"
FUZZ_NOTE_ID = "00000000-0000-4000-8000-00000000f023"
words = st.text(st.characters(categories=["L", "N", "Zs"]), min_size=1, max_size=20).filter(str.strip)
tags = st.from_regex(r"[a-z0-9][a-z0-9._:/-]{0,10}", fullmatch=True)


def valid(prop: dict[str, Any]) -> st.SearchStrategy:
    """A value the tool accepts, so that a call with one odd value among valid ones gets past the
    argument checks into the services and the database."""
    kind = prop["type"]
    if prop.get("format") == "uuid":
        return st.sampled_from([FUZZ_MEMORY_ID, FUZZ_NOTE_ID])
    if kind == "string":
        return st.sampled_from(prop["examples"]) if "examples" in prop else words
    if kind == "integer":
        return st.integers(prop.get("minimum", 1), prop.get("maximum", 100))
    if kind == "number":
        return st.floats(prop.get("minimum", 0), prop.get("maximum", 100))
    if kind == "array":
        return st.lists(tags, max_size=3)
    return st.booleans()


def hostile(prop: dict[str, Any]) -> st.SearchStrategy:
    """Anything at all, weighted towards the argument's own type."""
    same_type = {
        "string": text,
        "integer": numbers,
        "number": numbers,
        "boolean": json_values,
        "array": st.lists(st.one_of(tags, text), max_size=25),
    }[prop["type"]]
    return st.one_of(same_type, same_type, json_values)


def arguments_for(name: str) -> st.SearchStrategy:
    """A tool's arguments: valid ones (required, and some optional); the same with one of them
    replaced by a hostile value; every one of them anything; or no argument object at all."""
    schema = TOOLS[name].input_schema
    properties: dict[str, Any] = schema["properties"]
    required = set(schema.get("required", ()))
    optional = {key: valid(prop) for key, prop in properties.items() if key not in required}
    valid_arguments = st.fixed_dictionaries({key: valid(properties[key]) for key in required}, optional=optional)
    # A tool without arguments (spaces_list) gets unknown ones instead.
    one_hostile = (
        st.tuples(valid_arguments, st.sampled_from(sorted(properties))).flatmap(
            lambda pair: hostile(properties[pair[1]]).map(lambda value: {**pair[0], pair[1]: value})
        )
        if properties
        else st.dictionaries(text, json_values, min_size=1, max_size=3)
    )
    all_hostile = st.fixed_dictionaries({}, optional={key: hostile(prop) for key, prop in properties.items()})
    return st.one_of(
        valid_arguments,
        one_hostile,
        one_hostile,
        one_hostile,
        all_hostile,
        st.dictionaries(text, json_values, max_size=3),
    )


tool_calls = st.sampled_from(sorted(TOOLS)).flatmap(lambda name: st.tuples(st.just(name), arguments_for(name)))
method_names = st.one_of(
    st.sampled_from(["initialize", "ping", "tools/list", "tools/call", "server/discover", "notifications/initialized"]),
    text,
)
request_ids = st.one_of(st.integers(), text, st.booleans(), st.none(), st.floats(), json_values)


@pytest.fixture(autouse=True)
def fuzzing_conditions(settings) -> None:
    # What the fuzzing exercises is input handling, not the per-token rate limit it would reach.
    settings.GNOSEM_TOKEN_RATE_LIMIT = None


@pytest.fixture
def fuzzed_memory(owner) -> None:
    """The owner's one memory and one note (never embedded: the test's transaction never commits)."""
    memory = services.memory_write(owner=owner, content="The release train leaves on Thursdays.", tags=["ops"])
    note = notes.note_write(owner=owner, title="Release train", content="# Release train\n\nIt leaves on Thursdays.")
    # Saved whole: their texts are sealed for their ids, so they are sealed again for the new ones.
    memory.public_id, note.public_id = uuid.UUID(FUZZ_MEMORY_ID), uuid.UUID(FUZZ_NOTE_ID)
    memory.save()
    note.save()


@pytest.fixture(scope="module", autouse=True)
def report_counts(request) -> Iterator[None]:
    """Print what the fuzzing tried, for the record."""
    yield
    report_line(
        request.config,
        f"MCP fuzzing: {TALLY['cases']} requests ({TALLY['legacy']} 2025-era, {TALLY['modern']} 2026-era; "
        f"{TALLY['tool calls']} tool calls, {TALLY['isError']} isError results, {TALLY['protocol errors']} "
        f"protocol errors), {TALLY['5xx']} answered 5xx, {TALLY['-32603']} answered -32603",
    )


def meta(version: str = MODERN, client_name: Any = "fuzzer") -> dict[str, Any]:
    return {
        PROTOCOL_VERSION_META_KEY: version,
        CLIENT_INFO_META_KEY: {"name": client_name, "version": "1"},
        CLIENT_CAPABILITIES_META_KEY: {},
    }


def send(caller: McpCaller, body: Any, headers: dict[str, str]):
    """POST one message in a savepoint rolled back afterwards: every example starts from the same
    state, and one that breaks the transaction cannot make the next ones fail."""
    note(f"sent {headers!r} {body!r}"[:2_000])  # shown with a failing example
    with transaction.atomic():
        response = caller.post(body, headers)
        transaction.set_rollback(True)
    return response


def check(response, era: str, tool_call: bool = False) -> None:
    """The one rule for every answer: no 5xx, no -32603; tally what came back."""
    TALLY["cases"] += 1
    TALLY[era] += 1
    TALLY["tool calls"] += tool_call
    TALLY["5xx"] += response.status_code >= 500
    body = json.loads(response.content) if response.content else None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        TALLY["protocol errors"] += 1
        TALLY["-32603"] += error.get("code") == INTERNAL_ERROR
    elif isinstance(body, dict) and isinstance(body.get("result"), dict):
        TALLY["isError"] += body["result"].get("isError") is True
    assert response.status_code < 500, response.content
    assert not (isinstance(error, dict) and error.get("code") == INTERNAL_ERROR), response.content


@TOOL_CALL_SETTINGS
@given(call=tool_calls, version=st.sampled_from(["2025-03-26", "2025-06-18", LEGACY]))
def test_fuzzed_tool_arguments_never_fail_the_server_2025(client, owner_token, fuzzed_memory, call, version):
    name, arguments = call
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}

    response = send(McpCaller(client, owner_token, version), body, {"MCP-Protocol-Version": version})

    check(response, "legacy", tool_call=True)


@TOOL_CALL_SETTINGS
@given(call=tool_calls, client_name=st.one_of(text, json_values))
def test_fuzzed_tool_arguments_never_fail_the_server_2026(client, owner_token, fuzzed_memory, call, client_name):
    name, arguments = call
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta(client_name=client_name)},
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}

    check(send(McpCaller(client, owner_token, MODERN), body, headers), "modern", tool_call=True)


@FUZZ_SETTINGS
@given(
    envelope=st.fixed_dictionaries(
        {},
        optional={
            "jsonrpc": st.one_of(st.just("2.0"), st.just("2.0"), json_values),
            "id": request_ids,
            "method": st.one_of(method_names, method_names, json_values),
            "params": st.one_of(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "name": st.one_of(st.sampled_from(sorted(TOOLS)), text),
                        "arguments": json_values,
                        "protocolVersion": st.one_of(st.sampled_from(SUPPORTED_VERSIONS), text),
                        "_meta": st.one_of(
                            st.builds(meta, st.one_of(st.sampled_from(SUPPORTED_VERSIONS), json_values), json_values),
                            json_values,
                        ),
                    },
                ),
                json_values,
            ),
        },
    ),
    protocol_header=st.one_of(st.none(), st.sampled_from(SUPPORTED_VERSIONS), text),
    method_header=st.one_of(st.none(), method_names),
    name_header=st.one_of(st.none(), st.sampled_from(sorted(TOOLS)), st.text(max_size=10)),
)
def test_fuzzed_envelopes_never_fail_the_server(
    client, owner_token, envelope, protocol_header, method_header, name_header
):
    candidates = {"MCP-Protocol-Version": protocol_header, "Mcp-Method": method_header, "Mcp-Name": name_header}
    # Header values must be latin-1 to be sent at all; what cannot be sent is left out.
    headers = {key: value for key, value in candidates.items() if value is not None and _sendable(value)}
    params = envelope.get("params")
    era = "modern" if protocol_header == MODERN or (isinstance(params, dict) and "_meta" in params) else "legacy"

    check(send(McpCaller(client, owner_token), json.dumps(envelope), headers), era)


@FUZZ_SETTINGS
@given(
    body=st.one_of(
        st.binary(max_size=200),
        st.builds(
            lambda prefix, junk, suffix: prefix + junk + suffix,
            st.sampled_from([b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_write"']),
            st.binary(max_size=60),
            st.sampled_from([b"}", b', "arguments": {"content": "x"}}}', b""]),
        ),
        st.builds(
            # A memory_write whose content is written out unescaped, lone surrogates included, in
            # UTF-8 or in an encoding JSON-RPC does not allow.
            lambda content, encoding: json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "memory_write", "arguments": {"content": content}},
                },
                ensure_ascii=False,
            ).encode(encoding, "surrogatepass"),
            text,
            st.sampled_from(["utf-8", "utf-8", "utf-16", "utf-16-le", "utf-32"]),
        ),
        st.integers(min_value=1, max_value=3_000).map(lambda depth: b'{"a": ' + b"[" * depth + b"]" * depth + b"}"),
        st.sampled_from(HOSTILE_JSON_VALUES).map(
            lambda value: (
                b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_write", '
                b'"arguments": {"content": ' + value + b"}}}"
            )
        ),
    ),
    version=st.sampled_from([LEGACY, MODERN]),
)
def test_fuzzed_raw_bodies_never_fail_the_server(client, owner_token, body, version):
    response = send(McpCaller(client, owner_token), body, {"MCP-Protocol-Version": version})

    check(response, "modern" if version == MODERN else "legacy")


def _sendable(value: str) -> bool:
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return "\n" not in value and "\r" not in value
