"""Checks tool arguments against the basic types of a tool's input schema.

Only what the tool schemas use: an object of named properties (no others allowed), some
required, each a string, integer, number, boolean or list of strings. Ranges and formats are left to
memories.validation, which every interface shares. Failures are ValidationErrors naming the
argument, so the caller (an LLM) can fix it.
"""

from typing import Any

from gnosem.errors import ValidationError

_TYPE_HINTS = {
    "string": "must be a string.",
    "integer": "must be a whole number.",
    "number": "must be a number.",
    "boolean": "must be true or false.",
    "array": 'must be a list of strings, like ["project-x", "decision"].',
}


def check_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments, with nulls dropped (an omitted optional argument is often sent as null)."""
    properties: dict[str, Any] = schema["properties"]
    for name in arguments:
        if name not in properties:
            accepted = ", ".join(properties)
            raise ValidationError(name, f"is not an argument of this tool; it accepts: {accepted}.")
    cleaned = {name: value for name, value in arguments.items() if value is not None}
    for name in schema.get("required", ()):
        if name not in cleaned:
            raise ValidationError(name, "is required.")
    return {name: _check_type(name, properties[name], value) for name, value in cleaned.items()}


def _check_type(name: str, prop: dict[str, Any], value: Any) -> Any:
    expected = prop["type"]
    if expected == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON Schema counts 5.0 as an integer
    if not _is_type(expected, value) or (expected == "array" and not all(isinstance(v, str) for v in value)):
        hint = _TYPE_HINTS[expected]
        if examples := prop.get("examples"):
            hint = f"{hint[:-1]}, like {examples[0]}."
        raise ValidationError(name, hint)
    return value


def _is_type(expected: str, value: Any) -> bool:
    if expected == "string":
        return isinstance(value, str)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected == "boolean":
        return isinstance(value, bool)
    return isinstance(value, list)
