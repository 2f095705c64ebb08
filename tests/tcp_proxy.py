"""A TCP proxy of the test's own between the service and PostgreSQL, to take the database away.

Outage tests never touch the machine's shared PostgreSQL: they point the service at this proxy
and then ``cut()`` every open connection (what a server restart does to its clients), or
``refuse()`` new ones for a while (a server that is down), and ``restore()`` it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator


class TcpProxy:
    """Runs on its own thread and event loop, so it serves a child process and the test alike."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port: int = sock.getsockname()[1]
        self.connections = 0

    def url_for(self, database_url: str) -> str:
        """``database_url`` (postgresql://user@host:port/db) rewritten to go through the proxy."""
        scheme, _, rest = database_url.partition("://")
        userinfo, _, hostpart = rest.rpartition("@")
        _, _, database = hostpart.partition("/")
        prefix = f"{userinfo}@" if userinfo else ""
        return f"{scheme}://{prefix}127.0.0.1:{self.port}/{database}"

    def _call(self, coroutine: object) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)  # type: ignore[arg-type]

    def start(self) -> None:
        self._thread.start()
        self._call(self._listen())

    def stop(self) -> None:
        self._call(self._close(cut=True))
        self._call(self._finish_tasks())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def cut(self) -> None:
        """Close every open connection, as a database restart does, and keep accepting."""
        self._call(self._cut())

    def refuse(self) -> None:
        """Close every connection and stop listening: new connections are refused."""
        self._call(self._close(cut=True))

    def restore(self) -> None:
        self._call(self._listen())

    async def _listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(
                self._serve, "127.0.0.1", self.port, reuse_address=True
            )

    async def _close(self, cut: bool) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        if cut:
            await self._cut()

    async def _finish_tasks(self) -> None:
        """Connections still being opened or piped end here, with their sockets closed, so
        nothing of the proxy's is left to the garbage collector (and its ResourceWarning)."""
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._cut()

    async def _cut(self) -> None:
        for writer in list(self._writers):
            with contextlib.suppress(Exception):
                writer.transport.abort()
        self._writers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)  # a cut while the upstream connection opens closes it too
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            self._writers.discard(writer)
            return
        if writer not in self._writers:  # cut meanwhile: do not connect a dropped client
            up_writer.transport.abort()
            return
        self.connections += 1
        self._writers.add(up_writer)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                dst.transport.abort()
                self._writers.discard(dst)

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


@contextlib.contextmanager
def proxy_to(host: str, port: int) -> Iterator[TcpProxy]:
    proxy = TcpProxy(host, port)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
