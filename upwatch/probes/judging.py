"""Assertions that read a body are judged in processes of their own, taken in turn by project.

Each is bounded (a JSONPath's budget, a pattern's time limit, the probe's body cap), but
parsing a 1 MiB JSON body alone holds the interpreter for about 70 ms, in C, where no thread
switch can interrupt it: on the probe worker's loop, or in a thread beside it, that time
lands in the response times of every check in flight. In a process of its own it lands
nowhere.

The judges are shared by every project whose checks run here, so a project has at most one
body in their queue at a time: a project with many costly monitors waits for its own, and
another project's check waits for at most one body from each project ahead of it. A judge
that dies fails the checks it held, saying so, and is replaced; one that makes no progress
for ``JUDGE_SECONDS`` is stopped and replaced.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Final

from upwatch.probes.assertions import Assertion, Response, first_failure

logger = logging.getLogger(__name__)

# Processes that judge at once (started on first use, spawned: the probe process has threads).
JUDGES: Final = 2
# Far beyond what the bounds allow (a few hundred ms a body on a loaded machine): judges that
# have finished nothing for this long are stuck, and are replaced.
JUDGE_SECONDS: Final = 10.0
# New judges first start a Python and import the rules: on a loaded machine that took more
# than JUDGE_SECONDS (a CI run), which is not being stuck. Until their first answer, they have
# this long.
JUDGE_START_SECONDS: Final = 60.0


class _Judges:
    def __init__(self) -> None:
        self.pool: ProcessPoolExecutor | None = None
        self.finished_at = time.monotonic()
        self.answered = False  # the current judges have finished something
        # Per event loop (tests run several, one after another) and project: one body queued.
        self.turns: dict[tuple[int, str], asyncio.Lock] = {}

    def executor(self) -> ProcessPoolExecutor:
        if self.pool is None:
            self.pool = ProcessPoolExecutor(JUDGES, mp_context=multiprocessing.get_context("spawn"))
            self.finished_at = time.monotonic()
            self.answered = False
        return self.pool

    def replace(self, pool: ProcessPoolExecutor) -> None:
        if self.pool is not pool:
            return  # already replaced by another check
        self.pool = None
        # A stuck judge does not end on shutdown: it is killed (the executor has no public
        # way to stop its processes before Python 3.14).
        processes = dict(getattr(pool, "_processes", None) or {})
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes.values():
            process.kill()

    def turn(self, project: str) -> asyncio.Lock:
        key = (id(asyncio.get_running_loop()), project)
        lock = self.turns.get(key)
        if lock is None:
            lock = self.turns[key] = asyncio.Lock()
        return lock

    def done(self, project: str, lock: asyncio.Lock) -> None:
        key = (id(asyncio.get_running_loop()), project)
        if not lock.locked() and self.turns.get(key) is lock:
            del self.turns[key]  # nobody of this project waits: forget it


_judges = _Judges()


async def judged(
    assertions: Sequence[Assertion], response: Response, project: str = ""
) -> str | None:
    """``first_failure`` of the assertions on the response, worked out by a judge, in turn
    with the other checks of ``project``; a judge that dies or is stuck fails the check,
    saying so."""
    lock = _judges.turn(project)
    try:
        async with lock:
            return await _judge(tuple(assertions), response)
    finally:
        _judges.done(project, lock)


async def _judge(assertions: tuple[Assertion, ...], response: Response) -> str | None:
    pool = _judges.executor()
    loop = asyncio.get_running_loop()
    answer = loop.run_in_executor(pool, first_failure, assertions, response)
    while True:
        try:
            result = await asyncio.wait_for(asyncio.shield(answer), JUDGE_SECONDS)
        except TimeoutError:
            allowed = JUDGE_SECONDS if _judges.answered else JUDGE_START_SECONDS
            if time.monotonic() - _judges.finished_at < allowed:
                continue  # the judges are busy (or starting), not stuck: this turn is coming
            logger.error("the assertion judges finished nothing in %s s: replaced", JUDGE_SECONDS)
            answer.cancel()
            _judges.replace(pool)
            return f"the assertions were not judged within {allowed:g}s"
        except BrokenProcessPool:
            logger.error("an assertion judge ended: replaced")
            _judges.replace(pool)
            return "the assertions could not be judged: their process ended"
        except Exception as exc:  # a response or result that could not cross the pipe
            logger.exception("the assertion judge failed")
            return f"the assertions could not be judged ({type(exc).__name__})"
        _judges.finished_at = time.monotonic()
        _judges.answered = True
        return result
