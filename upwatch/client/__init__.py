"""Config as code and the command-line client of a running service (docs/config-as-code.md)."""

from typing import Final

# Where a running service serves the JSON Schema of the config file (for editors). Here, not
# in ``document``: the service routes it without building the file's models until asked.
SCHEMA_PATH: Final = "/schemas/upwatch-config.json"
