"""``upwatch import --from SOURCE PATH… [-o FILE]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from upwatch.importers.output import write
from upwatch.importers.registry import SOURCES
from upwatch.importers.source import SourceError

# Exit status on bad input, as for a bad file given to `apply`.
REFUSED = 2


def import_command(args: argparse.Namespace) -> int:
    """The file in ``-o`` and the report on stdout, or the file on stdout and the report on
    stderr; on bad input, the reason and exit status 2, nothing written."""
    source = SOURCES.get(args.source)
    if source is None:  # named in the choices, its module not there
        sys.stderr.write(f"upwatch: importing from {args.source} is not available\n")
        return REFUSED
    to_stdout = args.output in (None, "-")
    try:
        imported = source.run([Path(path) for path in args.paths])
        text = imported.text()
    except SourceError as exc:
        sys.stderr.write(f"upwatch: {exc}\nupwatch: nothing was written\n")
        return REFUSED
    if to_stdout:
        sys.stdout.write(text)
        sys.stderr.write(imported.report.text())
        return 0
    try:
        write(text, Path(args.output))
    except OSError as exc:
        sys.stderr.write(f"upwatch: cannot write {args.output}: {exc.strerror}\n")
        return REFUSED
    sys.stdout.write(imported.report.text())
    sys.stdout.write(f"Written to {args.output}: apply it with upwatch apply -f {args.output}\n")
    return 0
