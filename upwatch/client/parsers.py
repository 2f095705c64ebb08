"""The client commands' arguments. Kept apart from ``commands.py`` so that ``upwatch serve``
starts without the client's libraries (httpx, rich: the ``client`` extra), and a client
command without them says which extra to install."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import Any

CLIENT_LIBRARIES = frozenset({"httpx", "rich"})
# The sources of `upwatch import` (upwatch/importers/registry.py finds their modules; a test
# holds the two equal), named here so that `--help` loads none of them.
IMPORT_SOURCES = ("kuma", "uptimerobot", "gatus", "healthchecks")


def _command(
    name: str, module: str = "upwatch.client.commands"
) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            commands = importlib.import_module(module)
        except ModuleNotFoundError as missing:
            if missing.name not in CLIENT_LIBRARIES:
                raise
            print(  # noqa: T201
                f"upwatch: {args.command} needs the 'client' extra: pip install 'upwatch[client]'",
                file=sys.stderr,
            )
            return 2
        return int(getattr(commands, name)(args))

    return run


def _service_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", help="the service's address (default: UPWATCH_API_URL, http://127.0.0.1:8000)"
    )
    parser.add_argument(
        "--api-key",
        help="a project's API key (default: UPWATCH_API_KEY, which keeps it out of the process "
        "list and the shell's history)",
    )


def add_parsers(commands: Any) -> None:
    """The client commands, beside the service's own in ``upwatch.cli``. Their output is
    their result: logs only say warnings (not each HTTP request)."""
    client = (
        "talks to a running service: --url or UPWATCH_API_URL (default http://127.0.0.1:8000) "
        "and --api-key or UPWATCH_API_KEY (a project's API key)"
    )
    apply = commands.add_parser(
        "apply", help=f"make a project match a config file (docs/config-as-code.md); {client}"
    )
    apply.add_argument("-f", "--file", required=True, help="the YAML file, or - for stdin")
    apply.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    apply.add_argument(
        "--detailed-exitcode",
        action="store_true",
        help="exit 0 when nothing was to change, 2 when the plan had changes (pending with "
        "--dry-run), 1 on an error, as terraform plan does",
    )
    apply.add_argument(
        "--prune", action="store_true", help="delete keyed objects the file does not have"
    )
    _service_options(apply)
    apply.set_defaults(run=_command("apply_command"), log_level="warning")

    export = commands.add_parser("export", help=f"write the project as a config file; {client}")
    export.add_argument("-o", "--output", help="the file to write (default: stdout)")
    export.add_argument(
        "--adopt",
        action="store_true",
        help="first give every object without a key one made from its name",
    )
    _service_options(export)
    export.set_defaults(run=_command("export_command"), log_level="warning")

    imports = commands.add_parser(
        "import",
        help="write a config file from another tool's configuration, and report what became "
        "of each object (docs/migrating.md); sends nothing",
    )
    imports.add_argument(
        "--from", dest="source", required=True, choices=IMPORT_SOURCES, help="the other tool"
    )
    imports.add_argument(
        "paths",
        nargs="+",
        metavar="SOURCE",
        help="kuma: kuma.db or a 1.x JSON backup; uptimerobot: saved API v2 responses "
        "(getMonitors, and getAlertContacts and getPSPs if you have them), as files or a "
        "directory of them; gatus: config.yaml; healthchecks: the saved /api/v3/checks/ list",
    )
    imports.add_argument(
        "-o",
        "--output",
        help="the file to write, the report then on stdout (default: the file on stdout, "
        "the report on stderr)",
    )
    # The importers read the file's models from the client, not the other way round.
    imports.set_defaults(
        run=_command("import_command", "upwatch.importers.command"), log_level="warning"
    )

    schema = commands.add_parser("schema", help="print the JSON Schema of the config file")
    schema.set_defaults(run=_command("schema_command"), log_level="warning")

    status = commands.add_parser("status", help=f"monitors with state and uptime; {client}")
    status.add_argument("--json", action="store_true", help="the API's answer, as JSON")
    _service_options(status)
    status.set_defaults(run=_command("status_command"), log_level="warning")

    incidents = commands.add_parser("incidents", help=f"open incidents; {client}")
    incidents.add_argument("--all", action="store_true", help="resolved ones too")
    incidents.add_argument("--limit", type=int, default=50, choices=range(1, 1001), metavar="N")
    incidents.add_argument("--json", action="store_true", help="the API's answer, as JSON")
    _service_options(incidents)
    incidents.set_defaults(run=_command("incidents_command"), log_level="warning")

    check = commands.add_parser(
        "check", help=f"check a monitor now and print the result with timing; {client}"
    )
    check.add_argument("monitor", help="its key, id or name")
    check.add_argument("--json", action="store_true", help="the API's answer, as JSON")
    _service_options(check)
    check.set_defaults(run=_command("check_command"), log_level="warning")
