"""The client commands of ``upwatch``: apply, export, schema, status, incidents, check.

Each talks to a running service over its HTTP API (``client/service.py``); ``--json`` prints
what the API answered, for scripts. Exit status: 0 done, 1 the service refused or failed,
2 a bad file or bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from upwatch.client.service import Service, ServiceError

if TYPE_CHECKING:
    from upwatch.client.document import ConfigFile
    from upwatch.client.plan import Plan

# The config file's models are built from the API's (a second to import): only the commands
# that read or write a file load them, so `upwatch status` starts at once.
# `apply --detailed-exitcode`: the plan had changes (Terraform's plan uses 2 alike).
PENDING = 2


def _out() -> Console:
    return Console(soft_wrap=True, highlight=False)


def _err() -> Console:
    return Console(stderr=True, soft_wrap=True, highlight=False)


def _run(args: argparse.Namespace, command: Any) -> int:
    try:
        service = Service.from_environment(args.url, args.api_key)
    except ServiceError as exc:
        _err().print(f"upwatch: {exc}", markup=False)
        return _refused(args)
    try:
        return int(command(service, args))
    except ServiceError as exc:
        _err().print(f"upwatch: {exc}", markup=False)
        return 1
    finally:
        service.close()


# ---- apply / export ----------------------------------------------------------------------


def _refused(args: argparse.Namespace) -> int:
    """The exit status of a command that could not start: 2, or 1 under --detailed-exitcode
    (where 2 means "changes", as in Terraform)."""
    return 1 if getattr(args, "detailed_exitcode", False) else 2


def apply_command(args: argparse.Namespace) -> int:
    from upwatch.client.document import FileError, checked, parse

    path = Path(args.file)
    try:
        text = sys.stdin.read() if args.file == "-" else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        _err().print(f"upwatch: cannot read {args.file}: {exc}", markup=False)
        return _refused(args)
    try:
        config = checked(parse(text, args.file))
    except FileError as exc:
        for problem in exc.problems:
            _err().print(problem, markup=False)
        _err().print("upwatch: the file has errors; nothing was changed", markup=False)
        return _refused(args)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return _run(args, lambda service, a: _apply(service, config, a, digest))


def _apply(service: Service, config: ConfigFile, args: argparse.Namespace, digest: str) -> int:
    from upwatch.client.apply import Applier, current_state, describe, make_plan
    from upwatch.client.document import masked_places

    out = _out()
    current = current_state(service)
    plan = make_plan(config, current, prune=args.prune)
    masked = [
        f"{change.label}: {'.'.join(map(str, place))}"
        for change in plan.changes
        if change.action in ("create", "replace")
        for place in masked_places(change.entry)
    ]
    if masked:
        for place in masked:
            _err().print(f"{place}: a masked secret cannot make a new object", markup=False)
        _err().print("upwatch: give those secrets as {env: NAME}; nothing was changed")
        return _refused(args)
    for change in plan.changes:
        out.print(describe(change), markup=False)
    out.print(plan.summary(), markup=False)
    # Under --detailed-exitcode, 2 says the plan had changes (pending with --dry-run).
    changes = PENDING if args.detailed_exitcode and not plan.empty else 0
    if args.dry_run or plan.empty:
        out.print("Nothing changed (--dry-run)." if args.dry_run else "Nothing to do.")
        return changes
    todo = sum(1 for change in plan.changes if change.action != "unchanged")
    with Progress(
        TextColumn("applying"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        console=_err(),
        transient=True,
    ) as progress:
        task = progress.add_task("", total=todo)

        def report(line: str) -> None:
            progress.console.print(line, markup=False)
            progress.update(task, advance=1, description=line)

        Applier(service, report).run(plan, current)
        # A replaced monitor leaves the objects that named it (a window, a dependent) to be
        # pointed at the new one: a second pass over the new state does that.
        current = current_state(service)
        follow_up = make_plan(config, current, prune=args.prune)
        if not follow_up.empty:
            Applier(service, report).run(follow_up, current)
    out.print(f"Applied: {todo} change(s).")
    _record_run(service, plan, digest)
    return changes


def _record_run(service: Service, plan: Plan, digest: str) -> None:
    """The project's audit log gets one event for the run (`config.applied`); a service that
    cannot take it (an older version) does not undo what was applied."""
    counts = {
        "created": plan.count("create"),
        "updated": plan.count("update"),
        "replaced": plan.count("replace"),
        "deleted": plan.count("delete"),
        "unchanged": plan.count("unchanged"),
        "fileDigest": digest,
    }
    try:
        service.call("POST", f"/projects/{service.project_id}/config-applied", json=counts)
    except ServiceError as exc:
        _err().print(f"upwatch: applied, but not recorded in the audit log: {exc}", markup=False)


def export_command(args: argparse.Namespace) -> int:
    from upwatch.client.apply import adopt, as_yaml, current_state, exported
    from upwatch.client.document import SCHEMA_PATH

    def export(service: Service, args: argparse.Namespace) -> int:
        current = current_state(service)
        if args.adopt:
            adopt(service, current, lambda line: _err().print(line, markup=False))
        document = exported(current, lambda line: _err().print(f"note: {line}", markup=False))
        text = as_yaml(document, f"{service.url}{SCHEMA_PATH}")
        if args.output in (None, "-"):
            sys.stdout.write(text)
        else:
            Path(args.output).write_text(text, encoding="utf-8")
        return 0

    return _run(args, export)


def schema_command(_args: argparse.Namespace) -> int:
    from upwatch.client.document import json_schema

    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")
    return 0


# ---- status / incidents / check ----------------------------------------------------------


def _percent(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f} %"


def _ms(value: Any) -> str:
    return "-" if value is None else f"{float(value):.0f} ms"


def status_command(args: argparse.Namespace) -> int:
    def status(service: Service, args: argparse.Namespace) -> int:
        items = service.call("GET", "/dashboard/uptime", params={"projectId": service.project_id})
        if args.json:
            sys.stdout.write(json.dumps(items, indent=2) + "\n")
            return 0
        table = Table("Monitor", "Status", "24 h", "7 d", "30 d", "Last check")
        for item in sorted(items, key=lambda i: str(i["name"]).lower()):
            table.add_row(
                item["name"],
                item["status"],
                _percent(item["uptime24h"]),
                _percent(item["uptime7d"]),
                _percent(item["uptime30d"]),
                item["lastCheckedAt"] or "never",
            )
        _out().print(table)
        return 0

    return _run(args, status)


def incidents_command(args: argparse.Namespace) -> int:
    def incidents(service: Service, args: argparse.Namespace) -> int:
        query = {"projectId": service.project_id, "limit": args.limit}
        wanted = [None] if args.all else ["investigating", "identified", "monitoring"]
        items = [
            item
            for status in wanted
            for item in service.call(
                "GET", "/incidents", params=query if status is None else {**query, "status": status}
            )
        ]
        items = sorted(items, key=lambda item: str(item["startedAt"]), reverse=True)[: args.limit]
        if args.json:
            sys.stdout.write(json.dumps(items, indent=2) + "\n")
            return 0
        if not items:
            _out().print("No open incidents." if not args.all else "No incidents.")
            return 0
        table = Table("Started", "Status", "Severity", "Title", "Acknowledged", "Id")
        for item in items:
            table.add_row(
                item["startedAt"],
                item["status"],
                item["severity"],
                item["title"],
                item["acknowledgedAt"] or "no",
                item["id"],
            )
        _out().print(table)
        return 0

    return _run(args, incidents)


def _find_monitor(service: Service, name: str) -> dict[str, Any]:
    monitors = service.listed("/monitors", projectId=service.project_id)
    for field in ("id", "key", "name"):
        found = [m for m in monitors if m.get(field) == name]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise ServiceError(f"{len(found)} monitors are named {name!r}: give its key or id")
    raise ServiceError(f"no monitor with the id, key or name {name!r} in the project")


def check_command(args: argparse.Namespace) -> int:
    def check(service: Service, args: argparse.Namespace) -> int:
        monitor = _find_monitor(service, args.monitor)
        with _err().status(f"checking {monitor['name']}…"):
            result = service.call("POST", f"/monitors/{monitor['id']}/check")
        if args.json:
            sys.stdout.write(json.dumps(result, indent=2) + "\n")
            return 0 if result["status"] != "down" else 3
        out = _out()
        code = f", HTTP {result['statusCode']}" if result.get("statusCode") else ""
        out.print(
            f"{monitor['name']}: {result['status']}{code} in {_ms(result['responseTimeMs'])}",
            markup=False,
        )
        timings = result.get("timings") or {}
        phases = [
            ("dns", "dnsMs"),
            ("connect", "connectMs"),
            ("tls", "tlsMs"),
            ("first byte", "firstByteMs"),
            ("total", "totalMs"),
        ]
        shown = [f"{label} {_ms(timings[name])}" for label, name in phases if timings.get(name)]
        if shown:
            out.print("  " + " · ".join(shown), markup=False)
        if result.get("error"):
            out.print(f"  error: {result['error']}", markup=False)
        return 0 if result["status"] != "down" else 3

    return _run(args, check)
