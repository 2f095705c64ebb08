"""Row ids: made in Python, so a row's id is known before it is stored (and where it is made,
e.g. a worker process without a database)."""

from __future__ import annotations

import uuid


def new_id() -> str:
    return uuid.uuid4().hex
