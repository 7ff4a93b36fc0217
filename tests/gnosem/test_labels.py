"""The one rule for one-line labels shown to people: what it refuses (naming the character), what
it lets through (accents, scripts and emoji that need joiners), how a derived label drops what a
given one may not hold, and that every label field (written_by, token names) follows it. Note
titles and OAuth client names have their own tests, at every door."""

import pytest

from accounts.tokens import token_create
from gnosem.errors import ValidationError
from gnosem.labels import label_from, label_problem
from memories.validation import clean_written_by, written_by_or_default

REFUSED = {
    "NUL": ("a\x00b", "control characters or line breaks (it holds U+0000)"),
    "ESC": ("red\x1b[31m", "control characters or line breaks (it holds U+001B)"),
    "BEL": ("bell\x07", "control characters or line breaks (it holds U+0007)"),
    "DEL": ("x\x7f", "(it holds U+007F)"),
    "a C1 control": ("x\x9b", "(it holds U+009B)"),
    "a line separator": ("two\u2028lines", "(it holds U+2028 LINE SEPARATOR)"),
    "a right-to-left override": ("\u202eevil", "direction-changing characters (it holds U+202E RIGHT-TO-LEFT"),
    "a left-to-right embedding": ("\u202ax", "(it holds U+202A LEFT-TO-RIGHT EMBEDDING)"),
    "a first-strong isolate": ("x\u2068y", "(it holds U+2068 FIRST STRONG ISOLATE)"),
    "a right-to-left mark": ("x\u200fy", "(it holds U+200F RIGHT-TO-LEFT MARK)"),
    "a zero-width space": ("zero\u200bwidth", "invisible or direction-changing characters (it holds U+200B"),
    "a word joiner": ("x\u2060y", "(it holds U+2060 WORD JOINER)"),
    "a byte order mark": ("\ufeffx", "(it holds U+FEFF"),
    "a soft hyphen": ("pay\xadpal", "(it holds U+00AD SOFT HYPHEN)"),
}


@pytest.mark.parametrize(("label", "says"), REFUSED.values(), ids=REFUSED.keys())
def test_it_refuses_controls_and_invisible_characters_naming_the_first(label, says):
    assert says in label_problem(label)


@pytest.mark.parametrize(
    "label",
    [
        "laptop claude code",
        "Café crème, naïve",
        "תוכנית עבודה",  # Hebrew: right-to-left text needs no override
        "\u0646\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian writes the zero-width non-joiner
        "\U0001f468\u200d\U0001f469\u200d\U0001f467 family",  # an emoji sequence joined by U+200D
        "e\u0301",  # a combining accent
    ],
)
def test_it_lets_text_through_however_it_is_written(label):
    assert label_problem(label) is None


def test_a_derived_label_drops_invisible_characters_and_spaces_out_controls():
    assert label_from("Clau\u200bde \u202eCode\x1b[0m\tapp\ufeff") == "Claude Code [0m app"
    assert label_from("\x00\u200b\x07") == ""


def test_the_default_written_by_follows_the_derived_rule():
    assert written_by_or_default(None, token_name="cli", client_name="Clau\u200bde\u202e") == "Claude"
    assert written_by_or_default(None, token_name="laptop", client_name="\u200b\u2066") == "laptop"


@pytest.mark.parametrize("written_by", ["\u202eevil", "zero\u200bwidth", "bell\x07"])
def test_written_by_follows_the_rule(written_by):
    with pytest.raises(ValidationError) as caught:
        clean_written_by(written_by)
    assert caught.value.field == "written_by" and "(it holds U+" in caught.value.message


@pytest.mark.parametrize("name", ["laptop\x1b[2J", "laptop\u202e", "lap\u200btop"])
def test_a_token_name_follows_the_rule(owner, name):
    with pytest.raises(ValidationError) as caught:
        token_create(owner=owner, name=name, scope="write")
    assert caught.value.field == "name" and "(it holds U+" in caught.value.message
