"""Shapes of the API's requests and answers, for the OpenAPI document. The services validate the
input and the presenters make the output; a memory's shapes and the bounds of its fields are the
JSON Schemas of memories.presenters and memories.validation, which the MCP tools publish too, only
written here as OpenAPI 3.0, so the document cannot drift from what either interface does."""

from collections.abc import Callable
from typing import Any, ClassVar

from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers

from accounts.models import MAX_SPACE_NAME_CHARS, Role
from accounts.spaces import INVITATION_DEFAULT_DAYS, INVITATION_MAX_DAYS
from memories.models import MAX_NOTE_TITLE_CHARS
from memories.presenters import (
    COUNT_SCHEMA,
    GRAPH_EDGE_SCHEMA,
    GRAPH_ENTITY_SCHEMA,
    GRAPH_SCHEMA,
    HISTORY_SCHEMA,
    INVITATION_SCHEMA,
    INVITATIONS_SCHEMA,
    ISSUED_INVITATION_SCHEMA,
    MEMBER_SCHEMA,
    MEMBERS_SCHEMA,
    MEMORY_PAGE_SCHEMA,
    MEMORY_SCHEMA,
    NOTE_PAGE_SCHEMA,
    NOTE_READ_SCHEMA,
    NOTE_SCHEMA,
    REVISION_SCHEMA,
    SEARCH_HIT_SCHEMA,
    SEARCH_RESULTS_SCHEMA,
    SEMANTIC_HIT_SCHEMA,
    SEMANTIC_RESULTS_SCHEMA,
    SESSION_SCHEMA,
    SPACE_KEY_SCHEMA,
    SPACE_SCHEMA,
    SPACES_SCHEMA,
    WRITTEN_MEMORY_SCHEMA,
)
from memories.transfer.formats import FORMAT_NAMES
from memories.validation import CONTENT_SCHEMA, SUPERSEDES_SCHEMA, TAGS_SCHEMA, WRITTEN_BY_SCHEMA


def openapi_schema(schema: Any, reference: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Any:
    """A JSON Schema as OpenAPI 3.0 writes it: a type list naming "null" becomes `nullable`, and a
    part for which `reference` gives a `$ref` becomes that reference."""
    if isinstance(schema, list):
        return [openapi_schema(item, reference) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if (ref := reference(schema)) is not None:
        return ref
    converted = {key: openapi_schema(value, reference) for key, value in schema.items()}
    types = converted.get("type")
    if isinstance(types, list) and "null" in types:
        [converted["type"]] = [name for name in types if name != "null"]
        converted["nullable"] = True
    return converted


class JsonSchemaShape(serializers.Serializer):
    """A body that `json_schema` describes; it only documents (the views validate nothing with it)."""

    json_schema: ClassVar[dict[str, Any]]
    # Each shape by its schema: a shape nested in another is documented as its own component.
    by_schema: ClassVar[dict[int, type["JsonSchemaShape"]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        JsonSchemaShape.by_schema[id(cls.json_schema)] = cls


class JsonSchemaShapeExtension(OpenApiSerializerExtension):
    """Gives each JsonSchemaShape its `json_schema` as its OpenAPI component."""

    target_class = JsonSchemaShape
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        def reference(part: dict[str, Any]) -> dict[str, Any] | None:
            shape = JsonSchemaShape.by_schema.get(id(part))
            if shape is None or part is self.target.json_schema:
                return None
            return auto_schema.resolve_serializer(shape, direction).ref

        return openapi_schema(self.target.json_schema, reference)


class SpaceOut(JsonSchemaShape):
    json_schema = SPACE_SCHEMA


class SpacesOut(JsonSchemaShape):
    json_schema = SPACES_SCHEMA


class MemberOut(JsonSchemaShape):
    json_schema = MEMBER_SCHEMA


class MembersOut(JsonSchemaShape):
    json_schema = MEMBERS_SCHEMA


class InvitationOut(JsonSchemaShape):
    json_schema = INVITATION_SCHEMA


class InvitationsOut(JsonSchemaShape):
    json_schema = INVITATIONS_SCHEMA


class IssuedInvitationOut(JsonSchemaShape):
    json_schema = ISSUED_INVITATION_SCHEMA


class SpaceKeyOut(JsonSchemaShape):
    json_schema = SPACE_KEY_SCHEMA


class MemoryOut(JsonSchemaShape):
    json_schema = MEMORY_SCHEMA


class SearchResultOut(JsonSchemaShape):
    json_schema = SEARCH_HIT_SCHEMA


class SearchOut(JsonSchemaShape):
    json_schema = SEARCH_RESULTS_SCHEMA


class MemoryPageOut(JsonSchemaShape):
    json_schema = MEMORY_PAGE_SCHEMA


class WrittenMemoryOut(JsonSchemaShape):
    json_schema = WRITTEN_MEMORY_SCHEMA


class RevisionOut(JsonSchemaShape):
    json_schema = REVISION_SCHEMA


class HistoryOut(JsonSchemaShape):
    json_schema = HISTORY_SCHEMA


class CountOut(JsonSchemaShape):
    json_schema = COUNT_SCHEMA


class SessionOut(JsonSchemaShape):
    json_schema = SESSION_SCHEMA


class NoteOut(JsonSchemaShape):
    json_schema = NOTE_SCHEMA


class NoteReadOut(JsonSchemaShape):
    json_schema = NOTE_READ_SCHEMA


class NotePageOut(JsonSchemaShape):
    json_schema = NOTE_PAGE_SCHEMA


class SemanticHitOut(JsonSchemaShape):
    json_schema = SEMANTIC_HIT_SCHEMA


class SemanticOut(JsonSchemaShape):
    json_schema = SEMANTIC_RESULTS_SCHEMA


class GraphEntityOut(JsonSchemaShape):
    json_schema = GRAPH_ENTITY_SCHEMA


class GraphEdgeOut(JsonSchemaShape):
    json_schema = GRAPH_EDGE_SCHEMA


class GraphOut(JsonSchemaShape):
    json_schema = GRAPH_SCHEMA


_SUPERSEDES = {
    **SUPERSEDES_SCHEMA,
    "description": "Ids of memories this one corrects: they leave search, counts and the session context.",
}
SPACE_PROPERTY: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_SPACE_NAME_CHARS,
    "description": "The space to write to (its name or id, as `GET /api/v1/spaces` lists them); default: the "
    "token's default write space.",
}
_MEMORY_FIELDS: dict[str, Any] = {
    "content": CONTENT_SCHEMA,
    "tags": {**TAGS_SCHEMA, "description": "Stored lower-case."},
    "written_by": {
        **WRITTEN_BY_SCHEMA,
        "description": "The client's name; when omitted, the name of the token in use.",
    },
    "supersedes": _SUPERSEDES,
}
CREATE_PROPERTIES: dict[str, Any] = {**_MEMORY_FIELDS, "space": SPACE_PROPERTY}
UPDATE_PROPERTIES: dict[str, Any] = {
    **_MEMORY_FIELDS,
    "tags": {**TAGS_SCHEMA, "description": "Stored lower-case; they replace all of the memory's tags."},
    "written_by": {**WRITTEN_BY_SCHEMA, "description": "The client's name."},
    "pinned": {"type": "boolean", "description": "Pinned memories open every session context."},
}


class MemoryCreateIn(JsonSchemaShape):
    json_schema = {
        "type": "object",
        "properties": CREATE_PROPERTIES,
        "required": ["content"],
        "additionalProperties": False,
    }


class MemoryUpdateIn(JsonSchemaShape):
    # At least one field: an empty change is refused ("nothing to change").
    json_schema = {"type": "object", "properties": UPDATE_PROPERTIES, "minProperties": 1, "additionalProperties": False}


NOTE_UPDATE_PROPERTIES: dict[str, Any] = {
    "title": {"type": "string", "minLength": 1, "maxLength": MAX_NOTE_TITLE_CHARS},
    "content": {"type": "string", "minLength": 1, "description": "Markdown or plain text (GNOSEM_NOTE_MAX_BYTES)."},
    "tags": {**TAGS_SCHEMA, "description": "Stored lower-case; on a change they replace all of the note's tags."},
}
NOTE_CREATE_PROPERTIES: dict[str, Any] = {**NOTE_UPDATE_PROPERTIES, "space": SPACE_PROPERTY}


class NoteCreateIn(JsonSchemaShape):
    json_schema = {
        "type": "object",
        "properties": NOTE_CREATE_PROPERTIES,
        "required": ["title", "content"],
        "additionalProperties": False,
    }


class NoteUpdateIn(JsonSchemaShape):
    json_schema = {
        "type": "object",
        "properties": NOTE_UPDATE_PROPERTIES,
        "minProperties": 1,
        "additionalProperties": False,
    }


def _body(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A JSON object body of these properties, `required` among them."""
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


SPACE_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_SPACE_NAME_CHARS,
    "description": "One line, told apart (case aside) from the names of your other spaces and from “Personal”.",
}
USERNAME = {"type": "string", "minLength": 1, "description": "A member's username, as the members list gives it."}
SPACE_CREATE_PROPERTIES: dict[str, Any] = {"name": SPACE_NAME}
SPACE_DELETE_PROPERTIES: dict[str, Any] = {
    "confirm_name": {"type": "string", "description": "The space's name exactly, confirming the deletion."}
}
ROLE_CHANGE_PROPERTIES: dict[str, Any] = {"role": {"type": "string", "enum": list(Role.values)}}
HAND_OVER_PROPERTIES: dict[str, Any] = {"to": {**USERNAME, "description": "The member who is to own the space."}}
INVITATION_CREATE_PROPERTIES: dict[str, Any] = {
    "role": {
        "type": "string",
        "enum": list(Role.values),
        "description": "What it joins as: admin, editor or viewer (ownership is handed over, never given by link).",
    },
    "days": {
        "type": "integer",
        "minimum": 1,
        "maximum": INVITATION_MAX_DAYS,
        "default": INVITATION_DEFAULT_DAYS,
        "description": "How long the link works.",
    },
}
INVITATION_ACCEPT_PROPERTIES: dict[str, Any] = {
    "secret": {"type": "string", "description": "The invitation's secret (`spi_...`, the link's last part)."}
}
SHARE_PROPERTIES: dict[str, Any] = {
    "space": {**SPACE_PROPERTY, "description": "The space to share it into (its name or id)."},
    "move": {
        "type": "boolean",
        "default": False,
        "description": "Move the memory itself (keeping its id) instead of sharing a copy (a new memory).",
    },
}


class SpaceCreateIn(JsonSchemaShape):
    json_schema = _body(SPACE_CREATE_PROPERTIES, ("name",))


class SpaceRenameIn(JsonSchemaShape):
    json_schema = _body(SPACE_CREATE_PROPERTIES, ("name",))


class SpaceDeleteIn(JsonSchemaShape):
    json_schema = _body(SPACE_DELETE_PROPERTIES)


class RoleChangeIn(JsonSchemaShape):
    json_schema = _body(ROLE_CHANGE_PROPERTIES, ("role",))


class HandOverIn(JsonSchemaShape):
    json_schema = _body(HAND_OVER_PROPERTIES, ("to",))


class InvitationCreateIn(JsonSchemaShape):
    json_schema = _body(INVITATION_CREATE_PROPERTIES, ("role",))


class InvitationAcceptIn(JsonSchemaShape):
    json_schema = _body(INVITATION_ACCEPT_PROPERTIES, ("secret",))


class MemoryShareIn(JsonSchemaShape):
    json_schema = _body(SHARE_PROPERTIES, ("space",))


class ImportFileOut(serializers.Serializer):
    format = serializers.ChoiceField(choices=FORMAT_NAMES, help_text="The file's format, as chosen or recognised.")
    records = serializers.IntegerField(help_text="Records the file held (entries, lines, files).")
    skipped = serializers.ListField(
        child=serializers.CharField(), help_text="Records left out, each with where it is and why."
    )


class ImportReportOut(ImportFileOut):
    imported = serializers.IntegerField()
    duplicates = serializers.IntegerField(
        help_text=(
            "Entries skipped: from a Gnosem export, the same text and creation time as a memory you have; "
            "from another tool's file, the same text."
        )
    )
    new_ids = serializers.IntegerField(help_text="Imported memories whose id you already use and that got a new one.")
    compressed_dropped = serializers.IntegerField(
        help_text="Compressed forms dropped for not being one line of KEY=value facts shorter than the text."
    )
    notes_imported = serializers.IntegerField()
    notes_duplicates = serializers.IntegerField(
        help_text="Notes skipped: same title, text and creation time as a note you have."
    )
    notes_new_ids = serializers.IntegerField(
        help_text="Imported notes whose id you already use and that got a new one."
    )


class ImportPreviewOut(ImportFileOut):
    memories = serializers.IntegerField(help_text="Memories the import would create.")
    duplicates = serializers.IntegerField(help_text="Memories it would skip as duplicates.")
    notes = serializers.IntegerField(help_text="Notes it would create.")
    notes_duplicates = serializers.IntegerField(help_text="Notes it would skip as duplicates.")


class ImportJobOut(serializers.Serializer):
    id = serializers.UUIDField()
    file_name = serializers.CharField()
    format = serializers.ChoiceField(choices=FORMAT_NAMES)
    status = serializers.ChoiceField(
        choices=["previewed", "queued", "running", "done", "failed"],
        help_text="previewed: waits to be started (forgotten after a day); queued, running; done; failed.",
    )
    total = serializers.IntegerField(help_text="Entries to import (memories, then notes).")
    done = serializers.IntegerField(help_text="Entries imported or skipped so far.")
    preview = serializers.DictField(
        child=serializers.IntegerField(), help_text="What it would do (ImportPreviewOut's counts, and `records`)."
    )
    report = serializers.DictField(
        child=serializers.IntegerField(), help_text="What it did so far (ImportReportOut's counts)."
    )
    skipped = serializers.ListField(child=serializers.CharField(), help_text="Records of the file left out, and why.")
    error = serializers.CharField(allow_null=True, help_text="Why a failed import stopped, and how far it got.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ErrorDetail(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    field = serializers.CharField(required=False)


class ErrorOut(serializers.Serializer):
    error = ErrorDetail()
