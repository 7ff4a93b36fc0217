"""A PDF's text layer read in a process of its own: `python -m memories.notes.pdf_extraction PAGES TEXT_BYTES
MEMORY_BYTES CPU_SECONDS NICENESS`, the PDF on stdin, one JSON object on stdout.

memories.notes.files runs it for every uploaded PDF, so that no file can hold a web process: this
process caps its own address space and CPU time and lowers its priority before it reads a byte,
and the caller kills it at its wall-clock limit. It imports only pypdf and the standard library
(no Django, no settings, nothing of the web process's), and answers with one of:

- `{"text": ...}`: the pages' text, cleaned, pages separated by a blank line (empty for a scan);
- `{"refused": "encrypted"}`, `{"refused": "too_many_pages", "pages": n}`,
  `{"refused": "too_much_text"}` (past TEXT_BYTES of text), `{"refused": "out_of_memory"}`,
  `{"refused": "unreadable", "reason": "KeyError: ..."}` (pypdf gave up).
"""

import io
import json
import logging
import os
import re
import resource
import sys

# Control characters a PDF's text layer may carry that have no place in a note (tab and newline
# stay), and lone surrogates from broken font maps, which cannot be stored as UTF-8.
_PDF_JUNK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_TRAILING_SPACE = re.compile(r"[ \t]+$", re.MULTILINE)
_BLANK_RUN = re.compile(r"\n{4,}")  # more than two blank lines in a row
_REASON_CHARS = 120


def limit_this_process(*, memory_bytes: int, cpu_seconds: int, niceness: int) -> None:
    """Cap the address space and CPU time (SIGXCPU at the limit, SIGKILL a second later), write no
    core file, and run at `niceness` at least, below the web processes."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.nice(max(0, niceness - os.nice(0)))


def pdf_text(data: bytes, *, max_pages: int, max_text_bytes: int) -> dict:
    """The answer for one PDF (see the module's docstring)."""
    from pypdf import PdfReader  # after the limits are set: its import counts against them too
    from pypdf.errors import FileNotDecryptedError

    pages: list[str] = []
    text_bytes = 0
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            return {"refused": "encrypted"}
        page_count = len(reader.pages)
        if page_count > max_pages:
            return {"refused": "too_many_pages", "pages": page_count}
        for page in reader.pages:
            text = _clean_page_text(page.extract_text() or "")
            if not text:
                continue
            pages.append(text)
            text_bytes += len(text.encode("utf-8")) + 2
            if text_bytes > max_text_bytes:
                return {"refused": "too_much_text"}
    except FileNotDecryptedError:
        return {"refused": "encrypted"}
    except MemoryError:
        return {"refused": "out_of_memory"}
    except Exception as exc:  # pypdf raises many kinds on a damaged file; any of them means "unreadable"
        return {"refused": "unreadable", "reason": _reason(exc)}
    return {"text": _BLANK_RUN.sub("\n\n\n", "\n\n".join(pages))}


def _clean_page_text(text: str) -> str:
    """One page's extracted text without control characters, trailing spaces or surrounding blank lines."""
    text = _PDF_JUNK.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _TRAILING_SPACE.sub("", text).strip("\n")


def _reason(exc: Exception) -> str:
    """A short, single-line account of why pypdf gave up."""
    detail = " ".join(str(exc).split())[:_REASON_CHARS]
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def main(argv: list[str]) -> None:
    max_pages, max_text_bytes, memory_bytes, cpu_seconds, niceness = (int(arg) for arg in argv)
    limit_this_process(memory_bytes=memory_bytes, cpu_seconds=cpu_seconds, niceness=niceness)
    # pypdf logs a warning for each oddity of a damaged file, as many as the file holds.
    logging.disable(logging.CRITICAL)
    data = sys.stdin.buffer.read()
    answer = pdf_text(data, max_pages=max_pages, max_text_bytes=max_text_bytes)
    sys.stdout.buffer.write(json.dumps(answer).encode("ascii"))


if __name__ == "__main__":
    main(sys.argv[1:])
