from __future__ import annotations

from alembic import context

import upwatch.models  # noqa: F401  (registers every table)
from upwatch.kit.db import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `upwatch migrate` (upwatch.migrations.upgrade)")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
