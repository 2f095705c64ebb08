"""The probe worker process imports what probes need, not the app, the database or the
libraries of probes no monitor may use (issue 39: its memory is paid once per process)."""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys

import pytest

from upwatch.engine import workerprocess

pytestmark = pytest.mark.db_independent

# Top-level packages the child must never hold: each is megabytes of memory in every worker.
HEAVY = (
    "alembic",
    "asyncmy",
    "asyncpg",
    "authlib",
    "croniter",
    "cryptography",
    "dateutil",
    "fastapi",
    "icmplib",
    "jinja2",
    "rich",
    "segno",
    "sqlalchemy",
    "starlette",
    "uvicorn",
    "webauthn",
)
# Modules inside packages the child uses: the resolver machinery of dnspython and the app.
HEAVY_MODULES = ("dns.asyncresolver", "dns.resolver", "dns.rdata", "upwatch.app")
# Upwatch packages the child has no business with.
HEAVY_UPWATCH = ("upwatch.models", "upwatch.console", "upwatch.importers", "upwatch.sso")


def child_imports() -> list[str]:
    """The modules the child's entry imports at run time, read from its code, so the test
    follows them as they change."""
    names = []
    for function in (workerprocess.main, workerprocess._child):
        for node in ast.walk(ast.parse(inspect.getsource(function).lstrip())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module)
            elif isinstance(node, ast.Import):
                names.extend(alias.name for alias in node.names)
    return names


def modules_of_child() -> set[str]:
    script = (
        "import importlib, json, sys\n"
        "from upwatch.engine.workerprocess import main\n"
        f"for name in {child_imports()!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(done.stdout))


def test_the_worker_process_imports_no_heavy_library_the_probes_do_not_need() -> None:
    modules = modules_of_child()
    assert "upwatch.probes.http" in modules  # the probes are there: the script ran the entry
    held = sorted(
        name
        for name in modules
        if name.split(".")[0] in HEAVY
        or name in HEAVY_MODULES
        or name.startswith(tuple(f"{package}." for package in HEAVY_UPWATCH))
        or name in HEAVY_UPWATCH
    )
    assert held == []


def test_the_child_entry_is_read_for_its_imports() -> None:
    assert "upwatch.engine.checks" in child_imports()
    assert "uvloop" in child_imports()
