"""The import rules of docs/architecture.md, checked on the code (TYPE_CHECKING imports count).

Layers, lowest first: the base (config, kit, models, mail), the probes, the ports (ports,
runtime, dependencies, migrations), the engine, the domains, and the composition root (app,
cli). An import may only point down, or sideways within a layer. Sideways is not free: the
packages' import graph must have no cycle, so two domains never lean on each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "upwatch"
DOMAINS = {
    "accounts",
    "apikeys",
    "audit",
    "admin",
    "billing",
    "callers",
    "console",
    "contact",
    "escalation",
    "incidents",
    "maintenance",
    "monitors",
    "notifications",
    "operations",
    "projects",
    "retention",
    "sessions",
    "sso",
    "statuspages",
}
LAYERS = {"base": 0, "probes": 1, "ports": 2, "engine": 3, "domain": 4, "root": 5}

pytestmark = pytest.mark.db_independent


def layer_of(module: str) -> str:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    # `from upwatch import __version__` names the package itself, which is base.
    if top in {"config", "kit", "models", "mail", "__init__", "__version__"} or top == "":
        return "base"
    if top == "probes":
        return "probes"
    if top in {"ports", "runtime", "dependencies", "migrations"}:
        return "ports"
    if top == "engine":
        return "engine"
    if top in DOMAINS:
        return "domain"
    return "root"  # app, cli


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "upwatch" or name.startswith("upwatch.")}


def arrows() -> list[tuple[str, str]]:
    result = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = module_name(path)
        for target in imports_of(path):
            result.append((source, target))
    return result


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] not in {"__init__", "__version__"} else ""


def package_graph(edges: list[tuple[str, str]]) -> dict[str, set[str]]:
    """Which top-level package imports which (a module of ``upwatch`` itself, e.g. app.py, is
    a package of its own)."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        tail, head = package_of(source), package_of(target)
        if tail and head and tail != head:
            graph.setdefault(tail, set()).add(head)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more packages (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for head in sorted(graph.get(node, ())):
            if head not in index:
                visit(head)
                low[node] = min(low[node], low[head])
            elif head in stack:
                low[node] = min(low[node], index[head])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_packages_import_each_other_without_a_cycle() -> None:
    edges = arrows()
    knots = cycles(package_graph(edges))
    # Name the imports that tie each knot, so a failure says where to cut.
    ties = [
        f"{source} -> {target}"
        for knot in knots
        for source, target in edges
        if package_of(source) in knot
        and package_of(target) in knot
        and package_of(source) != package_of(target)
    ]
    assert knots == [], ties


def test_the_cycle_check_sees_a_knot_of_three_packages() -> None:
    edges = [
        ("upwatch.incidents.automatic", "upwatch.escalation.paging"),
        ("upwatch.escalation.pager", "upwatch.statuspages.snapshot"),
        ("upwatch.statuspages.snapshot", "upwatch.incidents.repository"),
        ("upwatch.monitors.service", "upwatch.incidents.rules"),
    ]
    assert cycles(package_graph(edges)) == [["escalation", "incidents", "statuspages"]]
    assert cycles(package_graph(edges[1:])) == []


def test_no_import_points_up_a_layer() -> None:
    upward = [
        f"{source} -> {target}"
        for source, target in arrows()
        if LAYERS[layer_of(target)] > LAYERS[layer_of(source)]
    ]
    assert upward == []


def test_the_engine_imports_no_domain_and_the_probes_no_engine() -> None:
    wrong = [
        f"{source} -> {target}"
        for source, target in arrows()
        if (layer_of(source) == "engine" and layer_of(target) == "domain")
        or (layer_of(source) == "probes" and layer_of(target) in {"engine", "domain"})
    ]
    assert wrong == []


def test_the_layer_rule_sees_a_forbidden_arrow() -> None:
    # The checker itself must be able to fail: an arrow from kit into a domain is upward.
    assert LAYERS[layer_of("upwatch.monitors.service")] > LAYERS[layer_of("upwatch.kit.db")]
    assert layer_of("upwatch.runtime") == "ports"
    assert layer_of("upwatch.app") == "root"


def test_the_kit_imports_no_domain() -> None:
    # Shapes several domains use (Email, Role, DeletedOut, ...) live in kit/schemas.py.
    wrong = [
        f"{source} -> {target}"
        for source, target in arrows()
        if source.startswith("upwatch.kit") and layer_of(target) == "domain"
    ]
    assert wrong == []


def test_the_kit_imports_no_model() -> None:
    # The models are built on the kit (its Base, ids, types); mail's outbox rows live in mail/.
    wrong = [
        f"{source} -> {target}"
        for source, target in arrows()
        if source.startswith("upwatch.kit") and target.startswith("upwatch.models")
    ]
    assert wrong == []


def test_no_domain_takes_shared_shapes_from_the_accounts_schemas() -> None:
    wrong = [
        f"{source} -> {target}"
        for source, target in arrows()
        if target.startswith("upwatch.accounts.schemas")
        and not source.startswith("upwatch.accounts")
        # The console is a front end: it checks its sign-up and settings forms with the
        # API's own request models, as the API would, rather than taking a shape from them.
        and not source.startswith("upwatch.console.endpoints.")
    ]
    assert wrong == []
