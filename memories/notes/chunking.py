"""Splits a note into passages by its headings and paragraphs: each passage lies within one section,
holds whole paragraphs where they fit, and knows the headings it sits under, so that search can
return the passage that answers and say where in the note it is."""

import re
from dataclasses import dataclass

from memories.indexing.chunking import chunk_spans

# A passage's text; its title and headings go in front when it is embedded, within the model's
# 256 word pieces (memories.indexing.chunking.CHUNK_CHARS is the whole).
NOTE_CHUNK_CHARS = 800
# Headings shown per passage: the innermost ones, joined by " > ".
HEADING_PATH_CHARS = 150

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


@dataclass(frozen=True)
class NotePassage:
    start: int
    end: int
    # The headings it sits under, outermost first ("Failover > Promote the standby"); "" for none.
    heading: str


def note_passages(content: str, *, markdown: bool = True, size: int = NOTE_CHUNK_CHARS) -> list[NotePassage]:
    """Passages covering `content`'s sections (headings included in the section they open), whole
    paragraphs packed up to `size` characters, a longer paragraph cut at white space."""
    passages: list[NotePassage] = []
    for start, end, heading in _sections(content, markdown):
        pack_start: int | None = None
        pack_end = 0  # where the pack ends, while there is one
        for paragraph_start, paragraph_end in _paragraphs(content, start, end):
            if pack_start is not None and paragraph_end - pack_start <= size:
                pack_end = paragraph_end
                continue
            if pack_start is not None:
                passages.append(NotePassage(pack_start, pack_end, heading))
            if paragraph_end - paragraph_start <= size:
                pack_start, pack_end = paragraph_start, paragraph_end
                continue
            pieces = chunk_spans(content[paragraph_start:paragraph_end], size=size)
            passages += [
                NotePassage(paragraph_start + piece.start, paragraph_start + piece.end, heading) for piece in pieces
            ]
            pack_start = None
        if pack_start is not None:
            passages.append(NotePassage(pack_start, pack_end, heading))
    return passages


def passage_for_embedding(title: str, passage: NotePassage, content: str) -> str:
    """What is embedded (and searched by keyword) for a passage: the note's title and the headings
    it sits under, then its text."""
    where = passage.heading if passage.heading.startswith(title) else " > ".join(filter(None, [title, passage.heading]))
    return f"{where}\n{content[passage.start : passage.end]}"


def _sections(content: str, markdown: bool) -> list[tuple[int, int, str]]:
    """(start, end, heading path) of each section with text; a heading outside code fences opens one."""
    if not markdown:
        return [(0, len(content), "")] if content.strip() else []
    sections: list[tuple[int, int, str]] = []
    path: list[tuple[int, str]] = []
    section_start, section_path, fenced, offset = 0, "", False, 0
    for line in content.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line.rstrip("\n"))
        if heading:
            if content[section_start:offset].strip():
                sections.append((section_start, offset, section_path))
            level = len(heading.group(1))
            path = [(depth, text) for depth, text in path if depth < level] + [(level, heading.group(2).strip())]
            section_start, section_path = offset, _joined([text for _, text in path])
        offset += len(line)
    if content[section_start:].strip():
        sections.append((section_start, len(content), section_path))
    return sections


def _joined(headings: list[str]) -> str:
    """The innermost headings that fit HEADING_PATH_CHARS, outermost first."""
    kept: list[str] = []
    for heading in reversed(headings):
        if sum(len(text) + 3 for text in kept) + len(heading) > HEADING_PATH_CHARS:
            break
        kept.insert(0, heading)
    return " > ".join(kept)


def _paragraphs(content: str, start: int, end: int) -> list[tuple[int, int]]:
    """The blank-line separated paragraphs of content[start:end] (a fenced code block is one),
    without surrounding white space."""
    paragraphs: list[tuple[int, int]] = []
    paragraph_start, fenced, offset = None, False, start
    for line in content[start:end].splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        if not line.strip() and not fenced:
            if paragraph_start is not None:
                paragraphs.append((paragraph_start, offset))
                paragraph_start = None
        elif paragraph_start is None:
            paragraph_start = offset
        offset += len(line)
    if paragraph_start is not None:
        paragraphs.append((paragraph_start, offset))
    trimmed = [(first, first + len(content[first:last].rstrip())) for first, last in paragraphs]
    # A heading goes with the paragraph after it.
    merged: list[tuple[int, int]] = []
    for first, last in trimmed:
        if merged and _HEADING.match(content[merged[-1][0] : merged[-1][1]]):
            first = merged.pop()[0]
        merged.append((first, last))
    return merged
