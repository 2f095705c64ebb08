"""The ``upwatch`` command: serve, the distributed roles, migrate, admin create."""

from __future__ import annotations

import argparse
import asyncio
import gc
import getpass
import ipaddress
import logging
import os
import socket
import sys

from pydantic import ValidationError

from upwatch import __version__
from upwatch.client.parsers import add_parsers as add_client_parsers
from upwatch.config import Settings, SettingsProblem
from upwatch.kit.logs import configure_logging
from upwatch.operations.backup import add_parsers as add_backup_parsers
from upwatch.operations.database_copy import add_parsers as add_copy_parsers

log = logging.getLogger("upwatch")

ADMIN_PASSWORD_VARIABLE = "UPWATCH_ADMIN_PASSWORD"  # noqa: S105  (the variable's name)
LOG_LEVELS = ["critical", "error", "warning", "info", "debug"]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def served_url(host: str, port: int) -> str:
    """Where people reach a service bound to ``host``:``port``: a wildcard bind is reached
    by the machine's name, an IPv6 address goes in brackets."""
    if host in ("", "0.0.0.0", "::"):  # noqa: S104  (naming the wildcard, not binding it)
        host = socket.getfqdn()
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def serve_settings(host: str | None = None, port: int | None = None) -> Settings:
    """The settings, with the address to bind (flags over UPWATCH_HOST and UPWATCH_PORT) and
    the public URL following it unless it is set."""
    settings = Settings()
    host = settings.host if host is None else host
    port = settings.port if port is None else port
    settings = settings.model_copy(update={"host": host, "port": port})
    if "public_url" in settings.model_fields_set:
        return settings
    if not _is_loopback(host):
        log.warning(
            "UPWATCH_PUBLIC_URL is not set: links in e-mails, alerts and heartbeat URLs use "
            "%s; set it to the address people use to reach this service",
            served_url(host, port),
        )
    return settings.model_copy(update={"public_url": served_url(host, port)})


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from upwatch.app import create_app
    from upwatch.kit.allocator import limit_arenas

    limit_arenas()  # before any thread starts (docs/operations.md, "Memory")

    settings = serve_settings(args.host, args.port)
    level = args.log_level or settings.log_level
    if args.roles:
        if args.roles == "api" and not settings.redis_url:
            print(  # noqa: T201
                "upwatch: serve --roles api needs UPWATCH_REDIS_URL (monitor changes reach "
                "the scheduler through it)",
                file=sys.stderr,
            )
            return 2
        settings = settings.model_copy(update={"roles": args.roles})
    app = create_app(settings)
    # The code and the app built so far live as long as the process: full collections need
    # not walk them again (their pauses showed in a status page's p99, bench/statuspage.py).
    gc.freeze()
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=level,
        log_config=None,  # uvicorn's loggers write through ours (kit/logs.py)
        loop=settings.http_loop,
        proxy_headers=bool(settings.forwarded_allow_ips),
        forwarded_allow_ips=settings.forwarded_allow_ips or None,
    )
    return 0


def _concurrency(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 10_000:
        raise argparse.ArgumentTypeError("between 1 and 10000")
    return number


def _redis_settings(who_needs: str, for_what: str) -> Settings | None:
    """The settings, or None once it is said that ``who_needs`` UPWATCH_REDIS_URL."""
    settings = Settings()
    if not settings.redis_url:
        print(f"upwatch: {who_needs} UPWATCH_REDIS_URL ({for_what})", file=sys.stderr)  # noqa: T201
        return None
    return settings


def _worker(args: argparse.Namespace) -> int:
    from upwatch.engine.regionworker import serve_region

    settings = _redis_settings("a worker needs", "the broker")
    if settings is None:
        return 2
    concurrency = args.concurrency or settings.check_concurrency
    try:
        import uvloop

        uvloop.run(serve_region(settings, args.region, concurrency))
    except ImportError:  # pragma: no cover - uvloop comes with uvicorn[standard]
        asyncio.run(serve_region(settings, args.region, concurrency))
    return 0


def _role(args: argparse.Namespace) -> int:
    from upwatch.distributed import needs, run_role

    settings = Settings()
    problem = needs(settings)
    if problem:
        print(f"upwatch: {problem}", file=sys.stderr)  # noqa: T201
        return 2
    asyncio.run(run_role(settings, args.command))
    return 0


def _region_code(value: str) -> str:
    from upwatch.engine.workeraccess import worker_username

    try:
        worker_username(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _admin_worker_user(args: argparse.Namespace) -> int:
    from redis.exceptions import RedisError

    from upwatch.engine.workeraccess import RegionUnknown, create_worker_user
    from upwatch.kit.redisclient import connect

    settings = _redis_settings("this needs", "an admin connection")
    if settings is None:
        return 2

    async def create() -> str:
        redis = connect(settings.redis_url)
        try:
            return await create_worker_user(
                redis, settings.redis_url, settings.broker_prefix, args.region
            )
        finally:
            await redis.aclose()

    try:
        url = asyncio.run(create())
    except RegionUnknown as exc:
        print(f"upwatch: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    except RedisError as exc:
        print(f"upwatch: Redis refused: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    print(url)  # noqa: T201 - the worker's UPWATCH_REDIS_URL, shown once
    return 0


def _rdap_refresh(args: argparse.Namespace) -> int:
    import aiohttp

    from upwatch.probes.rdap import BootstrapInvalid, refresh_bootstrap

    settings = Settings()
    url = args.url or settings.rdap_bootstrap_url

    async def run() -> str:
        async with aiohttp.ClientSession(trust_env=True) as session:
            found = await refresh_bootstrap(session, url, settings.data_dir)
        return found.published.isoformat()

    try:
        published = asyncio.run(run())
    except (BootstrapInvalid, aiohttp.ClientError, OSError) as exc:
        # The file in the data directory, if any, is left as it was.
        print(f"upwatch: the RDAP bootstrap was not refreshed: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    print(f"RDAP bootstrap of {published} saved in {settings.data_dir}")  # noqa: T201
    return 0


def _quiet_migrations() -> None:
    """Alembic logs every step at INFO; a command's output is its own result."""
    logging.getLogger("alembic").setLevel(logging.WARNING)


def _migrate(_args: argparse.Namespace) -> int:
    _quiet_migrations()
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


def _admin_password(given: str | None) -> str:
    """--password, else the environment (kept out of shell history and ``ps``), else a
    prompt at a terminal."""
    if given is not None:
        return given
    from_environment = os.environ.get(ADMIN_PASSWORD_VARIABLE)
    if from_environment is not None:
        return from_environment
    if not sys.stdin.isatty():
        raise ValueError(
            f"password: give --password, set {ADMIN_PASSWORD_VARIABLE}, or run at a terminal"
        )
    password = getpass.getpass("Password: ")
    if getpass.getpass("Password again: ") != password:
        raise ValueError("password: the two entries differ")
    return password


def _admin_create(args: argparse.Namespace) -> int:
    _quiet_migrations()
    from upwatch.operations.bootstrap import create_admin

    try:
        password = _admin_password(args.password)
        created, email = asyncio.run(create_admin(Settings(), args.email, password, args.role))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    print(f"{'created' if created else 'promoted'} {args.role} {email}")  # noqa: T201
    return 0


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="upwatch", description="Upwatch uptime monitoring")
    root.add_argument("--version", action="version", version=f"upwatch {__version__}")
    commands = root.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the whole service in one process")
    serve.add_argument("--host", help="the address to listen on (default: UPWATCH_HOST, 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, help="the port to listen on (default: UPWATCH_PORT, 8000)"
    )
    serve.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        help="the least severe lines written, by Upwatch and by uvicorn alike "
        "(default: UPWATCH_LOG_LEVEL, info)",
    )
    serve.add_argument(
        "--roles",
        choices=["all", "api"],
        help="all: every role in this process (default, UPWATCH_ROLES); api: HTTP only, "
        "beside upwatch scheduler, ingester, sender and retention processes",
    )
    serve.set_defaults(run=_serve)

    worker = commands.add_parser(
        "worker",
        help="run one region's checks from the broker in Redis (distributed mode; no database)",
    )
    worker.add_argument(
        "--region", required=True, type=_region_code, help="the region's code, e.g. eu-west"
    )
    worker.add_argument(
        "--concurrency",
        type=_concurrency,
        metavar="N",
        help="checks run at once (default: UPWATCH_CHECK_CONCURRENCY)",
    )
    worker.add_argument("--log-level", choices=LOG_LEVELS, help="default: UPWATCH_LOG_LEVEL")
    worker.set_defaults(run=_worker)

    for role, text in (
        ("scheduler", "lead the scheduling of checks (others stand by)"),
        ("ingester", "store results from the broker, open and resolve incidents"),
        ("sender", "deliver alerts, e-mail and status-page subscriber notices"),
        ("retention", "expire old data by plan, with notice"),
    ):
        command = commands.add_parser(role, help=f"distributed mode: {text} (PostgreSQL and Redis)")
        command.add_argument("--log-level", choices=LOG_LEVELS, help="default: UPWATCH_LOG_LEVEL")
        command.set_defaults(run=_role)

    add_client_parsers(commands)
    add_backup_parsers(commands)
    add_copy_parsers(commands)

    migrate = commands.add_parser("migrate", help="create or upgrade the database schema")
    migrate.set_defaults(run=_migrate)

    rdap = commands.add_parser(
        "rdap-refresh",
        help="download the IANA RDAP bootstrap file (which server answers for each TLD) into "
        "the data directory, for domain monitors",
    )
    rdap.add_argument("--url", help="default: UPWATCH_RDAP_BOOTSTRAP_URL, else IANA's dns.json")
    rdap.set_defaults(run=_rdap_refresh)

    admin = commands.add_parser("admin", help="operator tasks")
    admin_commands = admin.add_subparsers(dest="admin_command", required=True)
    create = admin_commands.add_parser("create", help="create or promote an administrator")
    create.add_argument("--email", required=True)
    create.add_argument(
        "--password",
        help=f"the password; else ${ADMIN_PASSWORD_VARIABLE}, else a prompt at a terminal",
    )
    create.add_argument("--role", choices=["admin", "super_admin"], default="admin")
    create.set_defaults(run=_admin_create)
    worker_user = admin_commands.add_parser(
        "worker-user",
        help="create (or renew) the Redis user of one region's workers and print its "
        "UPWATCH_REDIS_URL: its own job stream only (docs/deployment.md)",
    )
    worker_user.add_argument("--region", required=True, type=_region_code, help="the code")
    worker_user.set_defaults(run=_admin_worker_user)
    return root


def main(argv: list[str] | None = None) -> None:
    # Arguments first: --help and --version answer even when the environment is wrong.
    args = parser().parse_args(argv)
    try:
        settings = Settings()
    except SettingsProblem as unreadable:
        print(f"upwatch: {unreadable}", file=sys.stderr)  # noqa: T201
        sys.exit(2)
    except ValidationError as error:
        for problem in error.errors():
            name = "_".join(str(part) for part in problem["loc"]).upper()
            # A rule across settings has no single name: its message names them.
            where = f"UPWATCH_{name}: " if name else ""
            text = str(problem["msg"]).removeprefix("Value error, ")
            print(f"upwatch: {where}{text}", file=sys.stderr)  # noqa: T201
        sys.exit(2)
    configure_logging(settings, level=getattr(args, "log_level", None) or settings.log_level)
    sys.exit(args.run(args))
