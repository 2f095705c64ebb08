"""The ``upwatch`` command: serve, migrate, admin create."""

from __future__ import annotations

import argparse
import asyncio
import sys

from upwatch.config import Settings
from upwatch.kit.logs import configure_logging


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from upwatch.app import create_app

    settings = Settings()
    uvicorn.run(
        create_app(settings),
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        log_config=None,  # uvicorn's loggers write through ours (kit/logs.py)
        proxy_headers=bool(settings.forwarded_allow_ips),
        forwarded_allow_ips=settings.forwarded_allow_ips or None,
    )
    return 0


def _migrate(_args: argparse.Namespace) -> int:
    from upwatch.kit.db import Database
    from upwatch.migrations import upgrade

    async def run() -> None:
        db = Database(Settings())
        try:
            await upgrade(db.engine)
        finally:
            await db.dispose()

    asyncio.run(run())
    print("database is up to date")  # noqa: T201
    return 0


def _admin_create(args: argparse.Namespace) -> int:
    from upwatch.operations.bootstrap import create_admin

    try:
        created, email = asyncio.run(create_admin(Settings(), args.email, args.password, args.role))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    print(f"{'created' if created else 'promoted'} {args.role} {email}")  # noqa: T201
    return 0


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="upwatch", description="Upwatch uptime monitoring")
    commands = root.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the whole service in one process")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(run=_serve)

    migrate = commands.add_parser("migrate", help="create or upgrade the database schema")
    migrate.set_defaults(run=_migrate)

    admin = commands.add_parser("admin", help="operator tasks")
    admin_commands = admin.add_subparsers(dest="admin_command", required=True)
    create = admin_commands.add_parser("create", help="create or promote an administrator")
    create.add_argument("--email", required=True)
    create.add_argument("--password", required=True)
    create.add_argument("--role", choices=["admin", "super_admin"], default="admin")
    create.set_defaults(run=_admin_create)
    return root


def main(argv: list[str] | None = None) -> None:
    configure_logging(Settings())
    args = parser().parse_args(argv)
    sys.exit(args.run(args))
