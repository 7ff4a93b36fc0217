"""One-line labels shown to people: a note's title, an OAuth client's or an API token's name, a
memory's `written_by`. One rule says which characters such a label may not hold, for every app and
interface: a label someone gives is refused naming the character, one derived from something else
(a client's name as a default `written_by`, an uploaded file's first heading as a title) drops them.
"""

import re
import unicodedata

# C0 and C1 controls (NUL, tabs, line breaks, terminal escapes such as ESC and BEL) and Unicode's
# line and paragraph separators: a label is one line of text, and PostgreSQL refuses NUL.
_CONTROLS = r"\x00-\x1f\x7f-\x9f\u2028\u2029"
# Characters that show nothing yet change what is shown or make two labels that look alike differ:
# bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) and marks
# (U+061C, U+200E, U+200F), which can make a label read as something else; the zero-width space,
# word joiner and invisible operators (U+200B, U+2060-U+2064), the byte order mark (U+FEFF) and the
# soft hyphen (U+00AD). The zero-width non-joiner and joiner (U+200C, U+200D) stay: Persian and
# Indic writing and emoji sequences need them.
_INVISIBLE = r"\u00ad\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_UNFIT = re.compile(f"[{_CONTROLS}{_INVISIBLE}]")
_CONTROL = re.compile(f"[{_CONTROLS}]")
_INVISIBLE_CHARACTER = re.compile(f"[{_INVISIBLE}]")


def label_problem(label: str) -> str | None:
    """Why `label` cannot be shown as a one-line label, naming the first character at fault (to
    follow the field's name: "title must not contain ..."), or None when it can."""
    found = _UNFIT.search(label)
    if found is None:
        return None
    character = found.group()
    code = f"U+{ord(character):04X}"
    named = f"{code} {unicodedata.name(character)}" if unicodedata.name(character, "") else code
    if _CONTROL.fullmatch(character):
        return f"must not contain control characters or line breaks (it holds {named}): write one line of plain text."
    return (
        f"must not contain invisible or direction-changing characters (it holds {named}), which can make it "
        "read as something else: type it plainly."
    )


def label_from(text: str) -> str:
    """`text` made fit to be a label: control characters become spaces, invisible ones are
    dropped, white space runs become one space; "" when nothing is left."""
    return " ".join(_INVISIBLE_CHARACTER.sub("", _CONTROL.sub(" ", text)).split())
