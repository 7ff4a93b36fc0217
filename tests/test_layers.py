"""The import layers, read from the source with `ast`: every import counts, at module level or inside
a function (a local import still ties the modules together), except those under
`if TYPE_CHECKING:`, which never run.

- No module imports itself back through others (no cycles).
- `accounts` stands below `memories`: it never imports it.
- `gnosem`, the project, imports the apps only from its composition roots. Settings name app
  classes by dotted path (middleware, DRF classes), which Django resolves; that is no import.
- The packages of `memories` (one a capability: indexing, notes, graph, ...) import each other in
  one direction only: no cycle between packages either.
- The app's core (models, vocabulary, selectors, validation, and the encryption its models seal
  and index their texts with) stands on no capability package.
- The interfaces (the pages, REST, MCP, commands) are imported by nothing of the app but its URLs
  and its start-up.
- Indexing (embedding and storing vectors, queueing work) never reaches the interfaces or search.
- `memories.indexing.queue` stands on no other module of the app, so that anything may send work.
"""

import ast
import os
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGES = ("memories", "accounts", "gnosem")

# The project's modules allowed to import the apps, and why.
COMPOSITION_ROOTS = {
    "gnosem.urls": "the root URLconf mounts each app's URLs",
    "gnosem.gunicorn_conf": "gunicorn's post_worker_init loads the serving embedding model in each web worker",
}
CORE = ("memories.models", "memories.vocabulary", "memories.selectors", "memories.validation", "memories.encryption")
INTERFACES = ("memories.views", "memories.api", "memories.mcp", "memories.management")
# What may import an interface: the URLs mount them, start-up connects the receivers and tasks.
INTERFACE_USERS = ("memories.urls", "memories.apps")
INDEXING = ("memories.indexing", "memories.compression", "memories.services")
ABOVE_INDEXING = ("memories.search", *INTERFACES)


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    where: str  # path:line of the import statement

    def __str__(self) -> str:
        return f"{self.where}: {self.importer} imports {self.imported}"


def module_files() -> dict[str, Path]:
    files = {}
    for package in PACKAGES:
        for path in sorted((REPOSITORY / package).rglob("*.py")):
            parts = path.relative_to(REPOSITORY).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_in(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, however deeply nested, leaving out `if TYPE_CHECKING:` bodies."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The module `name` or the nearest package of ours holding it; None for outside code."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> list[Edge]:
    modules = module_files()
    edges = set()
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for statement in imports_in(ast.parse(path.read_text(), str(path))):
            if isinstance(statement, ast.Import):
                targets = [_known(alias.name, modules) for alias in statement.names]
            else:
                source = statement.module or ""
                if statement.level:
                    base = package.rsplit(".", statement.level - 1)[0] if statement.level > 1 else package
                    source = f"{base}.{source}" if source else base
                # `from package import module` imports that module; `from module import name`, the module.
                targets = [_known(f"{source}.{alias.name}", modules) for alias in statement.names]
            where = f"{path.relative_to(REPOSITORY)}:{statement.lineno}"
            edges |= {Edge(module, target, where) for target in targets if target and target != module}
    return sorted(edges, key=lambda edge: (edge.importer, edge.imported, edge.where))


def within(module: str, layers: tuple[str, ...]) -> bool:
    return any(module == layer or module.startswith(f"{layer}.") for layer in layers)


def listed(edges) -> str:
    return "\n".join(str(edge) for edge in edges)


def test_the_graph_sees_module_level_and_function_local_imports_but_not_type_checking_ones(tmp_path):
    source = (
        "from typing import TYPE_CHECKING\nimport memories.models\nif TYPE_CHECKING:\n    import memories.search\n"
        "def later():\n    from memories import services\n"
    )
    names = {alias.name for node in imports_in(ast.parse(source)) for alias in node.names}
    assert names == {"TYPE_CHECKING", "memories.models", "services"}
    edges = {(edge.importer, edge.imported) for edge in import_graph()}
    # gunicorn_conf imports memories inside its post_worker_init hook only.
    assert ("gnosem.gunicorn_conf", "memories.indexing.embedding") in edges
    assert ("memories.api.views", "memories.services") in edges  # `from memories import services`


def loops(edges: list[Edge], node_of: Callable[[str], str] = str) -> list[list[Edge]]:
    """Each loop among the nodes the edges tie (modules, or whatever `node_of` groups them into),
    once: the shortest way back to its least node, found breadth first."""
    following: dict[str, list[Edge]] = {}
    for edge in edges:
        following.setdefault(node_of(edge.importer), []).append(edge)
    found = []
    for start in sorted(following):
        paths = deque([[edge] for edge in following[start]])
        seen = set()
        while paths:
            path = paths.popleft()
            last = node_of(path[-1].imported)
            if last == start:
                if min(node_of(edge.importer) for edge in path) == start:
                    found.append(path)
                break
            if last in seen:
                continue
            seen.add(last)
            paths.extend([*path, edge] for edge in following.get(last, []))
    return found


def test_there_are_no_import_cycles():
    cycles = loops(import_graph())
    assert not cycles, "import cycles:\n" + "\n\n".join(listed(cycle) for cycle in cycles)


def test_accounts_never_imports_memories():
    climbs = [
        edge for edge in import_graph() if within(edge.importer, ("accounts",)) and within(edge.imported, ("memories",))
    ]
    assert not climbs, "accounts imports memories:\n" + listed(climbs)


def test_the_project_imports_the_apps_only_from_its_composition_roots():
    climbs = [
        edge
        for edge in import_graph()
        if within(edge.importer, ("gnosem",))
        and within(edge.imported, ("memories", "accounts"))
        and edge.importer not in COMPOSITION_ROOTS
    ]
    assert not climbs, "gnosem imports an app outside its composition roots:\n" + listed(climbs)


def test_indexing_never_reaches_search_or_the_interfaces():
    """Not directly, nor through another module: the chain that gets there is printed."""
    following: dict[str, list[Edge]] = {}
    for edge in import_graph():
        following.setdefault(edge.importer, []).append(edge)
    chains = []
    starts = [module for module in module_files() if within(module, INDEXING)]
    for start in starts:
        paths, seen = deque([[edge] for edge in following.get(start, [])]), {start}
        while paths:
            path = paths.popleft()
            reached = path[-1].imported
            if within(reached, ABOVE_INDEXING):
                if reached not in seen:  # the shortest chain to each module above is enough
                    chains.append(path)
                    seen.add(reached)
                continue
            if reached not in seen:
                seen.add(reached)
                paths.extend([*path, edge] for edge in following.get(reached, []))
    assert not chains, "indexing reaches search or an interface:\n" + "\n\n".join(listed(chain) for chain in chains)


def test_the_queue_imports_nothing_from_memories():
    climbs = [
        edge
        for edge in import_graph()
        if edge.importer == "memories.indexing.queue" and within(edge.imported, ("memories",))
    ]
    assert not climbs, "memories.indexing.queue imports from memories:\n" + listed(climbs)


def test_indexing_loads_no_part_of_the_search_package_once_django_is_set_up(tmp_path):
    """What `ast` cannot see: the apps Django loads at set-up (their `ready()`, signals, admin)."""
    probe = (
        "import sys, django; django.setup(); "
        "import memories.services, memories.indexing.vectors, memories.indexing.sequences; "
        "print(sorted(name for name in sys.modules if name.startswith('memories.search')))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "gnosem.settings", "GNOSEM_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPOSITORY, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def package_of(module: str) -> str:
    """The package of `memories` a module belongs to (`memories.notes`), or the module itself
    where it stands at the app's top (`memories.services`); outside the app, its top package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "memories" else parts[0]


def test_the_app_packages_import_each_other_in_one_direction():
    between = [
        edge
        for edge in import_graph()
        if within(edge.importer, ("memories",))
        and within(edge.imported, ("memories",))
        and package_of(edge.importer) != package_of(edge.imported)
    ]
    found = loops(between, package_of)
    assert not found, "packages that import each other back:\n" + "\n\n".join(listed(loop) for loop in found)


def test_the_core_stands_on_no_capability_package():
    climbs = [
        edge
        for edge in import_graph()
        if within(edge.importer, CORE) and within(edge.imported, ("memories",)) and not within(edge.imported, CORE)
    ]
    assert not climbs, "the core imports a capability:\n" + listed(climbs)


def test_only_the_urls_and_start_up_import_the_interfaces():
    climbs = [
        edge
        for edge in import_graph()
        if within(edge.imported, INTERFACES)
        and within(edge.importer, ("memories",))
        and package_of(edge.importer) != package_of(edge.imported)
        and edge.importer not in INTERFACE_USERS
    ]
    assert not climbs, "an interface imported from inside the app:\n" + listed(climbs)


def test_the_package_rules_see_a_loop_between_packages(monkeypatch):
    """The checks above can fail: a made-up import from the core to a capability and back is caught."""
    made_up = [
        Edge("memories.models", "memories.notes.services", "made-up:1"),
        Edge("memories.notes.services", "memories.models", "made-up:2"),
    ]
    monkeypatch.setattr(sys.modules[__name__], "import_graph", lambda: made_up)
    with pytest.raises(AssertionError, match="packages that import each other back"):
        test_the_app_packages_import_each_other_in_one_direction()
    with pytest.raises(AssertionError, match="the core imports a capability"):
        test_the_core_stands_on_no_capability_package()
