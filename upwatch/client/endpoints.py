"""The config file's JSON Schema, served for editors (``# yaml-language-server: $schema=``)."""

from __future__ import annotations

from functools import cache
from typing import Any

from fastapi import APIRouter

from upwatch.client import SCHEMA_PATH
from upwatch.kit.errors import problem_responses

router = APIRouter(tags=["config as code"], responses=problem_responses(500))


@cache
def _schema() -> dict[str, Any]:
    # The file's models (9 MB) are built on the first request, not in every service process.
    from upwatch.client.document import json_schema

    return json_schema()


@router.get(SCHEMA_PATH, operation_id="configFileSchema")
async def config_file_schema() -> dict[str, Any]:
    """The JSON Schema of the file `upwatch apply` reads (docs/config-as-code.md); public,
    like the API's own description."""
    return _schema()
