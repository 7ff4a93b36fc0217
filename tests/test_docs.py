"""The documentation stays navigable and true to the code: links resolve, every environment variable
the code reads is documented, code cites documents that exist, and every measured figure in
docs/benchmarks.md comes with its date, commit and command."""

import ast
import re
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent
README = BASE_DIR / "README.md"
DOCS = BASE_DIR / "docs"
CODE_PACKAGES = ("gnosem", "memories", "accounts", "bench", "tests")
# The README is the front door: what Gnosem is, the two commands, connecting, the tools, where to read on.
README_MAX_LINES = 100

_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*$", re.MULTILINE)


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def prose(text: str) -> str:
    """The text without code blocks and inline code, where links and headings are not links and headings."""
    return _INLINE_CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for _, heading in _HEADING.findall(_FENCE.sub("", path.read_text())):
        anchor, n = slug(heading), 1
        while anchor in found:  # GitHub numbers repeated headings: name, name-1, name-2
            anchor = f"{slug(heading)}-{n}"
            n += 1
        found.add(anchor)
    return found


def headings(path: Path) -> list[str]:
    return [re.sub(r"`", "", heading) for _, heading in _HEADING.findall(_FENCE.sub("", path.read_text()))]


def python_files(*packages: str) -> list[Path]:
    """The packages' Python files, this one left out (it spells the patterns it looks for)."""
    this = Path(__file__).resolve()
    return [path for package in packages for path in sorted((BASE_DIR / package).rglob("*.py")) if path != this]


def test_the_docs_folder_holds_what_the_readme_promises():
    for name in ("configuration", "operations", "search", "benchmarks", "compression", "export-format", "design"):
        assert (DOCS / f"{name}.md").is_file(), f"docs/{name}.md is missing"


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: str(path.relative_to(BASE_DIR)))
def test_every_relative_link_resolves_to_a_file_and_heading(path):
    broken = []
    for target in _LINK.findall(prose(path.read_text())):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists() or not linked.is_relative_to(BASE_DIR):
            broken.append(f"{target}: no such file in the repository")
        elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked)):
            broken.append(f"{target}: no heading #{anchor} in {linked.relative_to(BASE_DIR)}")
    assert not broken, f"{path.relative_to(BASE_DIR)}: " + "; ".join(broken)


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: str(path.relative_to(BASE_DIR)))
def test_every_file_of_the_repository_the_docs_name_exists(path):
    named = re.findall(r"`((?:gnosem|memories|accounts|bench|tests|templates|static)/[\w./-]*)`", path.read_text())
    missing = sorted({name for name in named if not (BASE_DIR / name).exists()})
    assert not missing, f"{path.relative_to(BASE_DIR)} names files that moved or went: {', '.join(missing)}"


def test_the_readme_is_a_short_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_the_readme_opens_with_the_two_commands_the_makefile_runs():
    text = README.read_text()
    first_block = re.search(r"^```\w*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert first_block and first_block.start() < text.index("\n## "), "the commands come before any section"
    commands = [line.split("#")[0].strip() for line in first_block[1].splitlines() if line.strip()]
    assert commands == ["make run", "make test"]
    makefile = (BASE_DIR / "Makefile").read_text()
    assert re.search(r"^run:", makefile, re.MULTILINE) and re.search(r"^test:", makefile, re.MULTILINE)


def _constant(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def environment_variables_read(path: Path) -> set[str]:
    """Names read through the settings helpers (env_str, env_int, ..., persistent_secret) or from
    os.environ / os.getenv, wherever the name is a literal."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and node.args:
            function = node.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            helper = called.startswith("env_") or called == "persistent_secret"
            environ_call = called == "getenv" or (
                isinstance(function, ast.Attribute) and called in ("get", "setdefault") and _is_environ(function.value)
            )
            if (helper or environ_call) and (name := _constant(node.args[0])):
                names.add(name)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
            if name := _constant(node.slice):
                names.add(name)
    return names


def test_the_variable_finder_sees_settings_helpers_and_environ_reads(tmp_path):
    module = tmp_path / "example.py"
    module.write_text(
        "import os\n"
        'A = env_int("GNOSEM_A", 1, minimum=0)\n'
        'B = os.environ.get("GNOSEM_B", "")\n'
        'C = os.environ["GNOSEM_C"]\n'
        'os.environ["GNOSEM_WRITTEN"] = "1"\n'
        'D = persistent_secret("GNOSEM_D", data_dir)\n'
    )
    assert environment_variables_read(module) == {"GNOSEM_A", "GNOSEM_B", "GNOSEM_C", "GNOSEM_D"}


def test_every_environment_variable_the_code_reads_is_in_the_configuration_doc():
    read = set().union(*(environment_variables_read(path) for path in python_files(*CODE_PACKAGES)))
    read |= environment_variables_read(BASE_DIR / "manage.py")
    assert {"DATABASE_URL", "GNOSEM_WEB_WORKERS", "LOG_LEVEL"} <= read, "the finder missed the settings"
    configuration = (DOCS / "configuration.md").read_text()
    missing = sorted(name for name in read if not re.search(rf"\b{re.escape(name)}\b", configuration))
    assert not missing, f"not in docs/configuration.md: {', '.join(missing)}"


def test_no_code_cites_the_design_outside_the_repository_or_a_readme_section():
    citing = [
        f"{path.relative_to(BASE_DIR)}:{number}"
        for path in python_files(*CODE_PACKAGES)
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if re.search(r"DESIGN\.md|README, section", line)
    ]
    assert not citing, f"cite docs/design.md or another docs/ file instead: {', '.join(citing)}"


def test_documents_cited_in_code_exist_with_the_sections_named():
    broken = []
    for path in python_files(*CODE_PACKAGES):
        text = path.read_text()
        for name, section in re.findall(r"docs/([\w.-]+\.md) §(\d+)", text):
            if not any(heading.startswith(f"{section}. ") for heading in headings(DOCS / name)):
                broken.append(f"{path.relative_to(BASE_DIR)}: docs/{name} §{section}")
        for name, title in re.findall(r'docs/([\w.-]+\.md), "([^"]+)"', text):
            if title not in headings(DOCS / name):
                broken.append(f'{path.relative_to(BASE_DIR)}: docs/{name}, "{title}"')
        for name in re.findall(r"docs/([\w.-]+\.md)", text):
            if not (DOCS / name).is_file():
                broken.append(f"{path.relative_to(BASE_DIR)}: docs/{name}")
    assert not broken, "no such document or section: " + "; ".join(broken)


# A latency, a rate, or a score with two or more decimals.
_FIGURE = re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:ms|s|memories/s)\b|\b0\.\d{2,4}\b")
_COMMAND = re.compile(r"^```sh\n", re.MULTILINE)
_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
_COMMIT = re.compile(r"`[0-9a-f]{7,40}`")


def benchmark_sections() -> list[tuple[str, str, str]]:
    """(heading, its own text, the text of the level-2 section's introduction it sits under)."""
    text = (DOCS / "benchmarks.md").read_text()
    parts = re.split(r"^(#{2,3} .+)$", text, flags=re.MULTILINE)
    sections, introduction = [], ""
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        if heading.startswith("## "):
            introduction = body
        sections.append((heading, body, introduction))
    return sections


def test_every_figure_in_the_benchmarks_names_its_date_commit_and_command():
    incomplete = []
    for heading, body, introduction in benchmark_sections():
        if not _FIGURE.search(_FENCE.sub("", body)):
            continue
        context = body + introduction
        for what, pattern in (("command", _COMMAND), ("date", _DATE), ("commit", _COMMIT)):
            if not pattern.search(context):
                incomplete.append(f"{heading}: no {what}")
    assert not incomplete, "; ".join(incomplete)


def test_measurements_stay_out_of_the_code():
    figures = re.compile(r"\b\d+(?:\.\d+)?\s?ms\b|recall@\d|hit@\d|\bR@\d")
    found = [
        f"{path.relative_to(BASE_DIR)}:{number}"
        for path in python_files("gnosem", "memories", "accounts")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if figures.search(line)
    ]
    assert not found, f"move these figures to docs/benchmarks.md with their command: {', '.join(found)}"
