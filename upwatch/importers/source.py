"""A source an import reads, as its module declares it, and the error for input it cannot
read."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from upwatch.importers.output import Imported


class SourceError(Exception):
    """The input is not what the source reads: the message names what was expected (a file
    of another kind, a newer schema, a corrupt file). Nothing is written."""


@dataclass(frozen=True)
class Source:
    name: str  # as `--from` names it
    label: str  # as the report names it
    expects: str  # what SOURCE is, for --help and errors
    read: Callable[[Sequence[Path]], Imported]
    many: bool = False  # several SOURCE arguments (UptimeRobot's saved responses)

    def run(self, paths: Sequence[Path]) -> Imported:
        if not paths or (len(paths) > 1 and not self.many):
            raise SourceError(f"--from {self.name} reads one SOURCE: {self.expects}")
        for path in paths:
            if not path.exists():
                raise SourceError(f"{path}: no such file (expected {self.expects})")
        return self.read(paths)


def read_text(path: Path, expects: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise SourceError(f"{path}: a directory (expected {expects})") from None
    except UnicodeDecodeError:
        raise SourceError(f"{path}: not a text file (expected {expects})") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read: {exc.strerror} (expected {expects})") from None


def read_json(path: Path, expects: str) -> Any:
    """The file's JSON, or ``SourceError`` naming the line of the fault and what was expected."""
    try:
        return json.loads(read_text(path, expects))
    except json.JSONDecodeError as exc:
        raise SourceError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); expected {expects}"
        ) from None


def read_yaml(path: Path, expects: str) -> Any:
    """The file's YAML, or ``SourceError`` naming the line of the fault and what was expected."""
    try:
        return yaml.safe_load(read_text(path, expects))
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else 1
        raise SourceError(
            f"{path}:{line}: not valid YAML ({exc.problem}); expected {expects}"
        ) from None
    except yaml.YAMLError as exc:
        raise SourceError(f"{path}: not valid YAML ({exc}); expected {expects}") from None
