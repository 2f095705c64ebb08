"""The C allocator's arenas: fewer of them, so threads do not each keep memory of their own.

glibc gives each thread that allocates while another holds the main arena an arena of its own
(up to 8 per core), and an arena keeps what it once held. The service's threads (SQLite
connections, Argon2 hashing, name resolution) each grew one; capped, their memory is shared.
"""

from __future__ import annotations

import ctypes
import logging
import os

log = logging.getLogger(__name__)

_M_ARENA_MAX = -8  # glibc's malloc.h


ARENAS = 2


def limit_arenas(count: int = ARENAS) -> bool:
    """Cap malloc arenas at ``count`` for threads started from now on, unless the operator
    set ``MALLOC_ARENA_MAX``; False where the C library has no ``mallopt`` (not glibc)."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        # The process's own symbols: the C library it runs on, without searching for it.
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no mallopt: not glibc
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(_M_ARENA_MAX, count))
    if not ok:
        log.debug("mallopt(M_ARENA_MAX, %d) was refused", count)
    return ok
