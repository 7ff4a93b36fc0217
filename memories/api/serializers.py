"""Shapes of the API's requests and answers, for the OpenAPI schema. The services validate the
input and `memory_to_dict` makes the output; these only describe them, so the two cannot drift
from MCP's behaviour."""

from rest_framework import serializers

from memories.models import MAX_CONTENT_CHARS, MAX_TAGS, MAX_WRITTEN_BY_CHARS, IndexingStatus


class MemoryOut(serializers.Serializer):
    id = serializers.UUIDField()
    content = serializers.CharField(
        help_text="The compressed form when there is one (unless raw=true), else the text as written."
    )
    optimized = serializers.BooleanField(help_text="Whether `content` is the compressed form.")
    content_raw = serializers.CharField(required=False, help_text="The text as written; only when `optimized`.")
    tags = serializers.ListField(child=serializers.CharField())
    written_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    indexing_status = serializers.ChoiceField(choices=IndexingStatus.values)
    tokens = serializers.IntegerField(help_text="Estimated tokens to read `content`.")


class SearchResultOut(MemoryOut):
    score = serializers.FloatField(help_text="Relevance, 1.0 at best.")
    explanation = serializers.DictField(
        required=False,
        help_text=(
            "Only with explain=true. `signals`: rank and raw score in each signal that found the memory; "
            "`fused`: their combined score (`context`: the part gained from neighbouring memories); the factors "
            "applied after it (`recency`, `time_window`, `diversity`, each present when applied); the final `score`."
        ),
    )


class SearchOut(serializers.Serializer):
    results = SearchResultOut(many=True)


class MemoryPageOut(serializers.Serializer):
    memories = MemoryOut(many=True)
    next_cursor = serializers.CharField(
        allow_null=True, help_text="Pass as `cursor` for the next page; null at the end."
    )


class MemoryCreateIn(serializers.Serializer):
    content = serializers.CharField(max_length=MAX_CONTENT_CHARS)
    tags = serializers.ListField(child=serializers.CharField(), max_length=MAX_TAGS, required=False)
    written_by = serializers.CharField(
        max_length=MAX_WRITTEN_BY_CHARS, required=False, help_text="The client's name; defaults to the token's name."
    )


class MemoryUpdateIn(serializers.Serializer):
    content = serializers.CharField(max_length=MAX_CONTENT_CHARS, required=False)
    tags = serializers.ListField(child=serializers.CharField(), max_length=MAX_TAGS, required=False)
    written_by = serializers.CharField(max_length=MAX_WRITTEN_BY_CHARS, required=False)


class ImportReportOut(serializers.Serializer):
    imported = serializers.IntegerField()
    duplicates = serializers.IntegerField(
        help_text="Entries skipped: same content and creation time as a memory you have."
    )
    new_ids = serializers.IntegerField(help_text="Imported memories whose id you already use and that got a new one.")
    compressed_dropped = serializers.IntegerField(
        help_text="Compressed forms dropped for not being one line of KEY=value facts shorter than the text."
    )


class ErrorDetail(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    field = serializers.CharField(required=False)


class ErrorOut(serializers.Serializer):
    error = ErrorDetail()
