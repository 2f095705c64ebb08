"""``upwatch backup FILE`` and ``upwatch restore FILE``: the SQLite database of the embedded
service, copied whole with SQLite's online backup; PostgreSQL is pg_dump's job (they say how).

Exit status: 0 done, 1 the copy failed, 2 refused (a bad file, a file in the way, a schema
newer than this code, PostgreSQL).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sqlite3
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

from upwatch.config import Settings

# What the service's own connections wait for a lock (kit/db.py's busy_timeout).
BUSY_SECONDS = 10.0


class Refused(Exception):
    """The command will not do it (exit 2); the message says why and what to do."""


class Failed(Exception):
    """The copy went wrong on the way (exit 1)."""


@dataclass(frozen=True)
class Contents:
    """What a database file holds, for the one line a command prints about it."""

    size: int
    revision: str | None
    monitors: int | None
    users: int | None

    def summary(self) -> str:
        parts = [_size(self.size), f"schema {self.revision or 'none'}"]
        if self.monitors is not None:
            parts.append(_plural(self.monitors, "monitor"))
        if self.users is not None:
            parts.append(_plural(self.users, "user"))
        return ", ".join(parts)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _size(count: int) -> str:
    size = float(count)
    for unit in ("bytes", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{count} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


# ---- where the database is -----------------------------------------------------------------


def _sqlite_path(settings: Settings, file: str, verb: str) -> Path:
    """The configured SQLite database file, or Refused saying what to use instead."""
    url = make_url(settings.sqlalchemy_url)
    if url.get_backend_name() == "postgresql":
        raise Refused(_postgres_advice(url, file, verb))
    if url.get_backend_name() != "sqlite":
        raise Refused(f"{verb} knows SQLite and PostgreSQL databases only, not {url.drivername}")
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        raise Refused(
            f"{verb} needs UPWATCH_DATABASE_URL to name an SQLite file by its path "
            "(sqlite:///path/to/upwatch.db), or unset for UPWATCH_DATA_DIR/upwatch.db"
        )
    return Path(database)


def _postgres_advice(url: URL, file: str, verb: str) -> str:
    """The pg_dump or pg_restore command for the configured database, without its password:
    PostgreSQL's own tools copy a live database consistently, and its owner runs them."""
    options = []
    if url.host:
        options.append(f"--host={url.host}")
    if url.port:
        options.append(f"--port={url.port}")
    if url.username:
        options.append(f"--username={url.username}")
    if url.database:
        options.append(f"--dbname={url.database}")
    if verb == "backup":
        tool = ["pg_dump", "--format=custom", *options, f"--file={file}"]
    else:
        # --clean --if-exists: the dump's tables replace the ones there; --no-owner: they
        # belong to the user restoring, whoever owned them where the dump was made.
        tool = ["pg_restore", "--clean", "--if-exists", "--no-owner", *options, file]
    return (
        f"{verb} copies SQLite databases; UPWATCH_DATABASE_URL names PostgreSQL, whose own "
        f"tools do this (docs/operations.md):\n  {shlex.join(tool)}\n"
        "(it asks for the password, or takes it from PGPASSWORD or ~/.pgpass)"
    )


# ---- reading and copying SQLite files ------------------------------------------------------


def _open_read_only(path: Path) -> sqlite3.Connection:
    # A read-only connection: the copy never writes to the file it copies, even while the
    # service has it open, and a path that is not there is not created as an empty database.
    return sqlite3.connect(
        f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_SECONDS, isolation_level=None
    )


def _copy(source: sqlite3.Connection, path: Path) -> None:
    """Copy ``source`` whole into the (empty) file at ``path``, left as one self-contained file.

    In one step: between steps the backup would let go of its read snapshot, and any commit
    by the service in between (a check result, every second or so) would restart it from the
    first page, so a busy database's copy might never finish. One step reads one snapshot,
    and under WAL the service's writers go on beside it.
    """
    destination = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None)
    try:
        source.backup(destination, pages=-1)
        # The pages come with the source's WAL mode: rollback mode keeps everything in this
        # one file (the service turns WAL back on when it opens a restored copy).
        destination.execute("PRAGMA journal_mode=DELETE")
    finally:
        destination.close()


def _inspect(path: Path) -> Contents:
    """Check the copy at ``path`` (Failed unless ``PRAGMA integrity_check`` says ok) and read
    what it holds."""
    connection = _open_read_only(path)
    try:
        problems = [row[0] for row in connection.execute("PRAGMA integrity_check(10)")]
        if problems != ["ok"]:
            raise Failed("PRAGMA integrity_check: " + "; ".join(problems))
        tables = {
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }

        def count(table: str) -> int | None:
            if table not in tables:
                return None
            query = f"SELECT count(*) FROM {table}"  # noqa: S608  (one of two fixed names)
            return int(connection.execute(query).fetchone()[0])

        revision = None
        if "alembic_version" in tables:
            row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
            revision = None if row is None else str(row[0])
        return Contents(path.stat().st_size, revision, count("monitors"), count("users"))
    finally:
        connection.close()


class _Staged:
    """A private temporary file beside ``final``, renamed into place by ``place`` or removed
    on exit: no half-written file is ever found under the final name."""

    def __init__(self, final: Path, owned_as_directory: bool = False) -> None:
        self.final = final
        _safe_directory(final.parent)
        # mkstemp makes the file 0600 whatever the umask: the data holds password hashes and
        # token digests. SQLite keeps the mode, and gives its journal the same.
        fd, name = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
        try:
            if owned_as_directory and os.geteuid() == 0:
                # Restored by root (sudo) for a service running as its own user: the file is
                # that user's, as its directory is, or the service could not open it.
                directory = final.parent.stat()
                os.fchown(fd, directory.st_uid, directory.st_gid)
        finally:
            os.close(fd)
        self.path = Path(name)
        self.placed = False

    def place(self) -> None:
        os.replace(self.path, self.final)
        self.placed = True
        _sync_directory(self.final.parent)

    def __enter__(self) -> _Staged:
        return self

    def __exit__(self, *_exc: object) -> None:
        if not self.placed:
            for leftover in _with_companions(self.path):
                leftover.unlink(missing_ok=True)


def _safe_directory(directory: Path) -> None:
    """Refuse a directory where another user could swap the temporary file for a link
    between its creation and SQLite opening it by name (SQLite would then write the whole
    database, readable by anyone, wherever the link points): the directory must be this
    user's or root's, and not writable by others unless sticky (as /tmp is, where no one
    may rename another's file)."""
    state = directory.stat()
    if state.st_uid not in (0, os.geteuid()):
        raise Refused(
            f"{directory} belongs to another user (uid {state.st_uid}), who could redirect "
            "the copy: write it to a directory of yours"
        )
    if state.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not state.st_mode & stat.S_ISVTX:
        raise Refused(
            f"{directory} is writable by other users, who could redirect the copy: write it "
            "to a directory only you can write (or make this one sticky, chmod +t)"
        )


def _with_companions(path: Path) -> list[Path]:
    """A database file and the files SQLite keeps beside it."""
    return [path, *(Path(f"{path}{suffix}") for suffix in ("-wal", "-shm", "-journal"))]


def _sync_directory(directory: Path) -> None:
    # The rename is durable once the directory is: a backup reported done survives a crash.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _private_directory(directory: Path) -> None:
    """As the service makes its data directory (config.Settings.ensure_data_dir): 0700."""
    if not directory.exists():
        directory.mkdir(mode=0o700, parents=True)
        directory.chmod(0o700)  # whatever the umask took away


def _same_file(one: Path, other: Path) -> bool:
    return one.exists() and other.exists() and one.samefile(other)


# ---- backup ----------------------------------------------------------------------------------


def backup(settings: Settings, file: Path, force: bool) -> tuple[Path, Contents]:
    """Copy the service's SQLite database to ``file``; the database and what the copy holds."""
    database = _sqlite_path(settings, str(file), "backup")
    if not database.is_file():
        raise Refused(
            f"no database at {database}: run this where `upwatch serve` runs, with the same "
            "UPWATCH_DATA_DIR (or UPWATCH_DATABASE_URL)"
        )
    if file.is_dir():
        raise Refused(f"{file} is a directory: name the file to write")
    if not file.parent.is_dir():
        raise Refused(f"no directory {file.parent}")
    if _same_file(file, database):
        raise Refused(f"{file} is the service's database itself")
    if file.exists() and not force:
        raise Refused(f"{file} exists: give --force to replace it")
    source = _open_read_only(database)
    try:
        with _Staged(file) as staged:
            try:
                _copy(source, staged.path)
                contents = _inspect(staged.path)
            except sqlite3.Error as exc:
                raise Failed(f"copying {database}: {exc}") from exc
            # Checked again: the copy may have taken a while.
            if file.exists() and not force:
                raise Refused(f"{file} appeared while copying: give --force to replace it")
            staged.place()
    finally:
        source.close()
    return database, contents


# ---- restore ---------------------------------------------------------------------------------


def known_revisions() -> tuple[set[str], str]:
    """Every schema revision this version of Upwatch has a migration for, and the newest."""
    from alembic.script import ScriptDirectory

    from upwatch.migrations import alembic_config

    scripts = ScriptDirectory.from_config(alembic_config())
    head = scripts.get_current_head()
    assert head is not None  # the package ships its migrations
    return {script.revision for script in scripts.walk_revisions()}, head


def _in_use(database: Path) -> bool:
    """Whether another connection has ``database`` open: under WAL each open connection holds
    a shared lock on the file (the service's pool keeps its connections open), so an exclusive
    one is refused at once."""
    connection = sqlite3.connect(
        f"{database.resolve().as_uri()}?mode=rw", uri=True, timeout=0, isolation_level=None
    )
    try:
        connection.execute("PRAGMA locking_mode=EXCLUSIVE")
        connection.execute("BEGIN EXCLUSIVE")
        connection.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return True
        raise
    except sqlite3.DatabaseError:
        return False  # not a database at all: no service has it open
    finally:
        connection.close()
    return False


def restore(settings: Settings, file: Path, force: bool) -> tuple[Path, Contents, str]:
    """Put the SQLite database in ``file`` in the service's place; the database, what it
    holds, and the newest schema this code knows."""
    database = _sqlite_path(settings, str(file), "restore")
    if not file.is_file():
        raise Refused(f"no file {file}")
    if _same_file(file, database):
        raise Refused(f"{file} is the service's database itself")
    if database.exists() and not force:
        raise Refused(
            f"{database} exists: stop the service, then give --force to replace it with {file} "
            "(what it holds now is lost: back it up first)"
        )
    revisions, head = known_revisions()
    _private_directory(database.parent)
    try:
        source = _open_read_only(file)
    except sqlite3.Error as exc:
        raise Refused(f"cannot open {file}: {exc}") from exc
    try:
        with _Staged(database, owned_as_directory=True) as staged:
            try:
                _copy(source, staged.path)
                contents = _inspect(staged.path)
            except (sqlite3.Error, Failed) as exc:
                raise Refused(f"{file} is not a sound SQLite database: {exc}") from exc
            if contents.revision is None:
                raise Refused(f"{file} holds no Upwatch schema (no alembic_version)")
            if contents.revision not in revisions:
                raise Refused(
                    f"{file} has schema revision {contents.revision}, which this version of "
                    f"Upwatch does not know (its newest is {head}): it comes from a newer "
                    "Upwatch. Restore it with that version (or a later one)."
                )
            if database.exists() and _in_use(database):
                raise Refused(
                    f"{database} is in use: stop `upwatch serve` (and any other upwatch "
                    "process using it), then restore again"
                )
            # A -wal or -journal left beside the old database would be replayed into the
            # restored one when it is next opened: they go first.
            for companion in _with_companions(database)[1:]:
                companion.unlink(missing_ok=True)
            staged.place()
    finally:
        source.close()
    return database, contents, head


# ---- the commands ----------------------------------------------------------------------------


def _reported(action: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run ``action``; a refusal or a failure is one line on stderr and the exit status."""
    try:
        return action(args)
    except Refused as exc:
        print(f"upwatch: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    except (Failed, OSError, sqlite3.Error) as exc:
        print(f"upwatch: {args.command} failed: {exc}", file=sys.stderr)  # noqa: T201
        return 1


def _backup(args: argparse.Namespace) -> int:
    database, contents = backup(Settings(), Path(args.file), args.force)
    print(f"backed up {database} to {args.file}: {contents.summary()}; integrity ok")  # noqa: T201
    return 0


def _restore(args: argparse.Namespace) -> int:
    settings = Settings()
    database, contents, head = restore(settings, Path(args.file), args.force)
    print(f"restored {args.file} to {database}: {contents.summary()}; integrity ok")  # noqa: T201
    if contents.revision != head:
        when = (
            "on the next start (UPWATCH_MIGRATE_ON_START)"
            if settings.migrate_on_start
            else "by `upwatch migrate`, to run before the service starts"
        )
        print(f"schema {contents.revision} is older than this version's {head}: upgraded {when}")  # noqa: T201
    if not settings.secret_key and not (settings.data_dir / "secret_key").exists():
        print(  # noqa: T201
            f"upwatch: note: no {settings.data_dir / 'secret_key'} and no UPWATCH_SECRET_KEY: "
            "a new key is made on start, so everyone signs in again and links mailed to "
            "status-page subscribers stop working; copy the old secret_key there to keep them",
            file=sys.stderr,
        )
    return 0


def backup_command(args: argparse.Namespace) -> int:
    return _reported(_backup, args)


def restore_command(args: argparse.Namespace) -> int:
    return _reported(_restore, args)


def add_parsers(commands: Any) -> None:
    """``backup`` and ``restore``, beside the service's own commands in ``upwatch.cli``.
    Their output is their result: logs only say warnings."""
    backup_parser = commands.add_parser(
        "backup",
        help="copy the SQLite database, also while the service runs (PostgreSQL: pg_dump)",
        description="Copy the SQLite database consistently with SQLite's online backup, also "
        "while the service writes to it, and check the copy (PRAGMA integrity_check). The "
        "copy is mode 0600: it holds password hashes and tokens. data/secret_key is not in "
        "it: keep that too. On PostgreSQL it prints the pg_dump command to use instead.",
    )
    backup_parser.add_argument("file", metavar="FILE", help="the copy to write")
    backup_parser.add_argument("--force", action="store_true", help="replace FILE if it exists")
    backup_parser.set_defaults(run=backup_command, log_level="warning")

    restore_parser = commands.add_parser(
        "restore",
        help="put a backup in place of the SQLite database (stop the service first)",
        description="Put a backup made by `upwatch backup` in place of the SQLite database, "
        "with the service stopped. A backup from a newer Upwatch (a schema revision this "
        "version does not know) is refused; an older schema is upgraded on the next start. "
        "On PostgreSQL it prints the pg_restore command to use instead.",
    )
    restore_parser.add_argument("file", metavar="FILE", help="the backup to restore")
    restore_parser.add_argument(
        "--force", action="store_true", help="replace the database there (what it holds is lost)"
    )
    restore_parser.set_defaults(run=restore_command, log_level="warning")
