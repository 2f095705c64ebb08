"""Assertions that read a body are judged in a process of their own.

Each is bounded (a JSONPath's budget, a pattern's time limit, the probe's body cap), but
parsing a 1 MiB JSON body alone holds the interpreter for about 70 ms, in C, where no thread
switch can interrupt it: on the probe worker's loop, or in a thread beside it, that time
lands in the response times of every check in flight. In a process of its own it lands
nowhere. One process per probe process, started on first use (spawned: the probe process
has threads) and replaced if it dies or overruns.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import multiprocessing
import multiprocessing.pool
import threading
from collections.abc import Sequence
from typing import Final

from upwatch.probes.assertions import Assertion, Response, first_failure

logger = logging.getLogger(__name__)

# Far beyond what the bounds allow (a few hundred ms on a loaded machine): a judge that has
# not answered by then is stuck, and is replaced.
JUDGE_SECONDS: Final = 10.0

_lock = threading.Lock()
_pool: multiprocessing.pool.Pool | None = None


def _judge() -> multiprocessing.pool.Pool:
    global _pool
    with _lock:
        if _pool is None:
            _pool = multiprocessing.get_context("spawn").Pool(1)
            atexit.register(_pool.terminate)
        return _pool


def _replace(pool: multiprocessing.pool.Pool) -> None:
    """The next check starts a new judge; this one is stopped from a thread of its own, as
    stopping waits for the pool's threads."""
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    threading.Thread(target=pool.terminate, name="judge-stop", daemon=True).start()


async def judged(assertions: Sequence[Assertion], response: Response) -> str | None:
    """``first_failure`` of the assertions on the response, worked out in the judging
    process; a judge that fails or overruns fails the check, saying so."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str | None] = loop.create_future()

    def deliver(result: str | None, error: BaseException | None) -> None:
        if answer.done():  # given up on: the judge answered after its time
            return
        if error is None:
            answer.set_result(result)
        else:
            answer.set_exception(error)

    # The pool calls these from its own thread.
    def settle(result: str | None) -> None:
        loop.call_soon_threadsafe(deliver, result, None)

    def refuse(error: BaseException) -> None:
        loop.call_soon_threadsafe(deliver, None, error)

    pool = _judge()
    pool.apply_async(
        first_failure, (tuple(assertions), response), callback=settle, error_callback=refuse
    )
    try:
        return await asyncio.wait_for(answer, JUDGE_SECONDS)
    except TimeoutError:
        logger.error("the assertion judge did not answer in %s s: replaced", JUDGE_SECONDS)
        _replace(pool)
        return f"the assertions were not judged within {JUDGE_SECONDS:g}s"
    except Exception as exc:  # a response or result that could not cross the pipe
        logger.exception("the assertion judge failed")
        return f"the assertions could not be judged ({type(exc).__name__})"
