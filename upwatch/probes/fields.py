"""Config fields several monitor types share: the host and the port they reach."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from upwatch.kit.inputs import worded

Host = Annotated[
    str,
    Field(
        min_length=1,
        max_length=253,
        pattern=worded(
            r"^[A-Za-z0-9._:\[\]-]+$",
            "a host name or IP address: letters, digits, dots, hyphens, colons and brackets",
        ),
    ),
]
Port = Annotated[int, Field(ge=1, le=65535)]
