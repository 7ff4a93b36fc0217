"""Splits raw content into overlapping pieces the embedding model can take whole."""

from dataclasses import dataclass

# all-MiniLM-L6-v2 reads 256 word pieces; ~1,000 characters of English stay below that.
CHUNK_CHARS = 1000
CHUNK_OVERLAP_CHARS = 150


@dataclass(frozen=True)
class Span:
    start: int
    end: int


def chunk_spans(text: str, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP_CHARS) -> list[Span]:
    """Spans covering `text`, each at most `size` characters, cut at whitespace where possible."""
    if len(text) <= size:
        return [Span(0, len(text))]
    spans: list[Span] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            cut = text.rfind(" ", start + size // 2, end)
            end = cut if cut > start else end
        spans.append(Span(start, end))
        if end >= len(text):
            break
        next_start = max(end - overlap, start + 1)
        space = text.find(" ", next_start, end)
        start = space + 1 if space != -1 else next_start
    return spans
