"""memories.validation: each cleaner's bounds and messages, the accepted time range, tags, and the
default `written_by` rule. Interfaces apply these (test_time_inputs.py, test_written_by_default.py)
and publish their bounds (test_published_bounds.py)."""

import pytest

from gnosem.errors import ValidationError
from memories.models import MAX_CONTENT_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_WRITTEN_BY_CHARS
from memories.validation import (
    DEFAULT_LIST_LIMIT,
    DEFAULT_TOP_K,
    MAX_HALF_LIFE_DAYS,
    MAX_LIST_LIMIT,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    clean_content,
    clean_datetime,
    clean_fraction,
    clean_half_life_days,
    clean_limit,
    clean_query,
    clean_tags,
    clean_top_k,
    clean_written_by,
    written_by_or_default,
)
from tests.memories.conftest import IMPOSSIBLE_TIMES, OUT_OF_RANGE_TIMES


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (42, "must be a string."),
        ("  \n", "must not be empty."),
        ("a\x00b", "must not contain NUL characters."),
        ("x" * (MAX_CONTENT_CHARS + 1), f"the limit is {MAX_CONTENT_CHARS:,}. Split it into several memories."),
    ],
)
def test_content_is_refused_with_a_message_that_says_what_to_do(content, message):
    with pytest.raises(ValidationError) as caught:
        clean_content(content)
    assert caught.value.field == "content" and message in caught.value.message


def test_content_up_to_the_limit_is_kept_as_written():
    text = "  " + "x" * (MAX_CONTENT_CHARS - 2)
    assert clean_content(text) == text


def test_tags_are_lower_cased_trimmed_and_de_duplicated_in_their_order():
    assert clean_tags(["Infra", " ops ", "infra", "a.b_c:d/e-f"]) == ["infra", "ops", "a.b_c:d/e-f"]
    assert clean_tags(None) == []
    assert clean_tags([f"t{i}" for i in range(MAX_TAGS)] + ["t0"]) == [f"t{i}" for i in range(MAX_TAGS)]


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ("infra", "must be a list of strings"),
        ([1], "must be a list of strings"),
        ([f"t{i}" for i in range(MAX_TAGS + 1)], f"at most {MAX_TAGS} tags per memory; got {MAX_TAGS + 1}."),
        (["has space"], "'has space' is not a valid tag"),
        (["-leading"], "starting with a letter or digit"),
        ([""], f"use 1-{MAX_TAG_CHARS} letters"),
        (["x" * (MAX_TAG_CHARS + 1)], "is not a valid tag"),
    ],
)
def test_malformed_tags_are_refused_naming_the_rule(tags, message):
    with pytest.raises(ValidationError) as caught:
        clean_tags(tags)
    assert caught.value.field == "tags" and message in caught.value.message


def test_written_by_is_one_trimmed_line_of_bounded_length():
    assert clean_written_by("  claude-code  ") == "claude-code"
    assert clean_written_by(None) == ""
    assert clean_written_by("x" * MAX_WRITTEN_BY_CHARS) == "x" * MAX_WRITTEN_BY_CHARS
    for refused, message in [
        (7, "must be a string naming the client."),
        ("x" * (MAX_WRITTEN_BY_CHARS + 1), f"at most {MAX_WRITTEN_BY_CHARS} characters."),
        ("two\nlines", "must not contain control characters"),
    ]:
        with pytest.raises(ValidationError, match=message):
            clean_written_by(refused)


def test_validation_enforces_its_own_constants():
    assert clean_top_k(None) == DEFAULT_TOP_K and clean_top_k(MAX_TOP_K) == MAX_TOP_K
    assert clean_limit(None) == DEFAULT_LIST_LIMIT and clean_limit(MAX_LIST_LIMIT) == MAX_LIST_LIMIT
    assert clean_half_life_days(MAX_HALF_LIFE_DAYS, default=30) == MAX_HALF_LIFE_DAYS
    assert clean_query("q" * MAX_QUERY_CHARS)
    for refused in [
        lambda: clean_top_k(0),
        lambda: clean_top_k(MAX_TOP_K + 1),
        lambda: clean_limit(0),
        lambda: clean_limit(MAX_LIST_LIMIT + 1),
        lambda: clean_half_life_days(MAX_HALF_LIFE_DAYS + 1, default=30),
        lambda: clean_fraction("diversity", 1.01, default=0.7),
        lambda: clean_query("q" * (MAX_QUERY_CHARS + 1)),
    ]:
        with pytest.raises(ValidationError):
            refused()


@pytest.mark.parametrize(("value", "reason"), IMPOSSIBLE_TIMES.items())
def test_an_impossible_date_is_a_validation_error_that_says_why(value, reason):
    with pytest.raises(ValidationError, match="is not a possible date and time") as caught:
        clean_datetime("created_after", value)
    assert reason in caught.value.message and caught.value.field == "created_after"


@pytest.mark.parametrize("value", OUT_OF_RANGE_TIMES)
def test_a_time_outside_the_accepted_range_is_refused_naming_the_range(value):
    with pytest.raises(ValidationError) as caught:
        clean_datetime("created_at", value)
    assert "is out of range: times must lie from 1900-01-01T00:00:00Z to 3000-01-01T00:00:00Z" in caught.value.message


@pytest.mark.parametrize(
    "value", ["1900-01-01", "1900-01-01T01:00:00+01:00", "3000-01-01T00:00:00Z", "2999-12-31T23:59:59.999999-00:00"]
)
def test_the_bounds_themselves_are_accepted(value):
    assert clean_datetime("created_at", value) is not None


def test_the_rule_falls_back_to_the_token_when_the_client_name_is_only_control_characters():
    assert written_by_or_default(None, token_name="cli", client_name="\x1b\t") == "cli"
    assert written_by_or_default(None, token_name="\x00", client_name=None) == ""
