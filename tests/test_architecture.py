"""The import rules of docs/architecture.md, checked on the code (TYPE_CHECKING imports count).

Layers, lowest first: the base (config, kit, models), the probes, the ports (ports, runtime,
dependencies, migrations), the engine, the domains, and the composition root (app, cli).
An import may only point down, or sideways within a layer, with the exceptions named below.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "upwatch"
DOMAINS = {
    "accounts",
    "apikeys",
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
    "statuspages",
}
LAYERS = {"base": 0, "probes": 1, "ports": 2, "engine": 3, "domain": 4, "root": 5}

pytestmark = pytest.mark.db_independent


def layer_of(module: str) -> str:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    # `from upwatch import __version__` names the package itself, which is base.
    if top in {"config", "kit", "models", "__init__", "__version__"} or top == "":
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
