"""The API's one body parser: JSON read by the same rules as MCP's (gnosem.json_input)."""

from collections.abc import Mapping
from typing import IO, Any

from rest_framework import exceptions, parsers

from gnosem.json_input import JsonInputError, load_json


class JsonBodyParser(parsers.JSONParser):
    """UTF-8 JSON only, no lone surrogates, no deep nesting. DRF's own JSONParser lets
    RecursionError and unpaired surrogates through, to become server errors.

    DRF hands a JSONParser the body Django read under DATA_UPLOAD_MAX_MEMORY_SIZE; a bigger body
    raises RequestDataTooBig first, which memories.api.errors answers with 413. The import view
    reads its (larger) body itself, under GNOSEM_IMPORT_MAX_BYTES.
    """

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        try:
            return load_json(stream.read())
        except JsonInputError as exc:
            raise exceptions.ParseError(f"JSON parse error: {exc}") from None
