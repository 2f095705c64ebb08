"""The monitor form: its boxes derived from the API's fields, and a posted form read back
into the API's request body.

A type's own boxes come from its config model (``upwatch/probes``: names, types, choices,
help texts; labels from its ``form`` declaration where it gives one); the boxes every type
has come from the request model's common fields. Lists are typed one per line, headers as
``Name: value`` lines and assertions as JSON, so any value the API takes can be typed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Any, Final, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.alias_generators import to_snake
from pydantic.fields import FieldInfo

from upwatch.models import Monitor
from upwatch.monitors import secrets
from upwatch.monitors.schemas import SECRET_SETTINGS, SETTING_FIELDS, TYPE_FIELDS
from upwatch.probes.kind import MonitorKind, is_secret
from upwatch.probes.registry import KINDS

Shape = Literal["text", "int", "float", "choice", "lines", "numbers", "pairs", "json", "bool"]


@dataclass(frozen=True)
class Box:
    """One box of the form, filling the API field ``name``."""

    name: str
    label: str
    shape: Shape
    hint: str = ""
    choices: tuple[tuple[str, str], ...] = ()
    input: str = "text"  # the HTML input type of a one-line box
    required: bool = False

    @property
    def multiline(self) -> bool:
        return self.shape in ("lines", "pairs", "json") or self.input == "textarea"


def _words(name: str) -> str:
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower()
    return spaced[:1].upper() + spaced[1:]


def _plain(annotation: Any) -> tuple[Any, bool]:
    """The annotation without ``None`` and ``Annotated``; whether it took ``None``."""
    optional = False
    if get_origin(annotation) in (Union, UnionType):
        kept = [a for a in get_args(annotation) if a is not NoneType]
        optional = len(kept) < len(get_args(annotation))
        annotation = kept[0]
    while hasattr(annotation, "__metadata__"):
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, UnionType):
        return _plain(annotation)[0], True
    return annotation, optional


LONG_TEXT: Final = 1000  # characters: a longer text field (a request body) is a text area


def _longest(info: FieldInfo) -> int:
    plain: Any = info.annotation
    marks = list(info.metadata)
    for arg in get_args(plain):
        for mark in getattr(arg, "__metadata__", ()):
            # Optional[Annotated[str, Field(...)]] keeps its bounds in a FieldInfo.
            marks += list(mark.metadata) if isinstance(mark, FieldInfo) else [mark]
    return max((getattr(m, "max_length", 0) or 0 for m in marks), default=0)


def _shape_of(annotation: Any) -> tuple[Shape, tuple[tuple[str, str], ...]]:
    plain, _optional = _plain(annotation)
    origin = get_origin(plain)
    if origin is Literal:
        return "choice", tuple((str(v), str(v)) for v in get_args(plain))
    if origin is dict:
        return "pairs", ()
    if origin is list:
        item, _ = _plain(get_args(plain)[0])
        if isinstance(item, type) and issubclass(item, BaseModel):
            return "json", ()
        return ("numbers" if item is int else "lines"), ()
    if plain is bool:
        return "bool", ()
    if plain is int:
        return "int", ()
    if plain is float:
        return "float", ()
    return "text", ()


def _box(name: str, info: FieldInfo, label: str = "", input: str = "") -> Box:
    shape, choices = _shape_of(info.annotation)
    one_line = {"int": "number", "float": "number"}.get(shape, "text")
    if shape == "text" and _longest(info) > LONG_TEXT:
        one_line = "textarea"
    # The API's help text, without its Markdown (`[]` is an empty box here).
    hint = (info.description or "").split(". ")[0].replace("`[]`", "empty").replace("`", "")
    hint = re.sub(r"^\w+ monitors: ", "", hint)
    default = None if info.is_required() else info.get_default(call_default_factory=True)
    if default not in (None, [], {}):
        hint = f"{hint}; default {default}".lstrip("; ")
    if is_secret(info):
        input = input or "password"  # shown masked; sent back masked, it keeps the secret
    return Box(
        name,
        label or _words(name),
        shape,
        hint,
        choices,
        input or one_line,
        required=info.is_required(),
    )


def type_boxes(kind: MonitorKind) -> list[Box]:
    """The boxes of the type's own fields, its target first."""
    declared = {f.name: f for f in kind.form}
    return [
        _box(name, info, declared[name].label if name in declared else "", _input(name, declared))
        for name, info in kind.config.model_fields.items()
    ]


def _input(name: str, declared: dict[str, Any]) -> str:
    return str(declared[name].input) if name in declared else ""


# The common fields a form offers (name and project are asked for separately; `key`
# and `secretRefs` belong to config files; pausing has its own buttons).
COMMON: Final = (
    "intervalSeconds",
    "timeoutSeconds",
    "retries",
    "degradedThresholdMs",
    "quorum",
    "successThreshold",
    "alertOnDegraded",
    "baselineFactor",
    "baselineMinSamples",
    "certificateWarningDays",
)


HINTS: Final = {
    "intervalSeconds": "Seconds between checks (10 to 86400)",
    "timeoutSeconds": "Seconds a check may take; shorter than the interval",
    "retries": "Failed checks tried again before the monitor turns down (0 to 10)",
    "degradedThresholdMs": "Slower answers (ms) count as degraded; empty: never",
    "quorum": "Regions that must agree before the status changes; empty: a majority",
    "successThreshold": "Successful checks in a row before a down monitor is up again; empty: 1",
    "alertOnDegraded": "Degraded checks in a row that open a low-severity incident and alert; "
    "empty: degraded never alerts",
    "baselineFactor": "Degraded when the last hour's p95 is this many times the 7-day p95; "
    "empty: off",
    "baselineMinSamples": "Checks each period needs before the baseline rule judges; empty: 30",
    "certificateWarningDays": "Days before a certificate expires that open a warning, one per "
    "line; empty: 14, 7 and 1",
}


def common_boxes(model: type[BaseModel]) -> list[Box]:
    fields = model.model_fields
    return [Box(**{**_box(name, fields[name]).__dict__, "hint": HINTS[name]}) for name in COMMON]


def stored_fields(monitor: Monitor) -> dict[str, Any]:
    """A monitor's values by API field name, secret header values masked as the API shows
    them (sent back unchanged, a mask keeps the stored value)."""
    values = {name: getattr(monitor, to_snake(name), None) for name in (*TYPE_FIELDS, *COMMON)}
    headers = {str(k): str(v) for k, v in (monitor.headers or {}).items()}
    values["headers"] = secrets.masked(headers, monitor.secret_headers or [])
    values.update(
        (name, secrets.masked_settings(monitor.settings or {}, SECRET_SETTINGS).get(name))
        for name in SETTING_FIELDS
    )
    kind = KINDS.get(monitor.type)
    if kind is not None and kind.url_password_secret:
        values["url"] = secrets.mask_url_password(monitor.url)
    return values


class FormError(ValueError):
    """A box whose text could not be read into the field's shape."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


def _read(box: Box, text: str) -> Any:
    text = text.strip()
    if box.shape == "bool":
        return text == "true"
    if not text:
        return None
    if box.shape in ("int", "float"):
        # The model reads numbers from text itself, with its own bounds and messages.
        return text
    if box.shape == "lines":
        return [line.strip() for line in text.splitlines() if line.strip()]
    if box.shape == "numbers":
        return [part for part in re.split(r"[\s,]+", text) if part]
    if box.shape == "pairs":
        pairs: dict[str, str] = {}
        for line in text.splitlines():
            if not line.strip():
                continue
            key, colon, value = line.partition(":")
            if not colon:
                raise FormError(box.name, f"write each as Name: value (not {line.strip()!r})")
            pairs[key.strip()] = value.strip()
        return pairs
    if box.shape == "json":
        try:
            return json.loads(text)
        except ValueError as exc:
            raise FormError(box.name, f"is not JSON: {exc}") from None
    return text


ALWAYS_VALUED: Final = frozenset(
    ("intervalSeconds", "timeoutSeconds", "retries", "successThreshold")
)
EMPTY_OF: Final[dict[str, Any]] = {"lines": [], "numbers": [], "pairs": {}, "json": []}


def body_of(
    boxes: list[Box], form: dict[str, str], lists: dict[str, list[str]], editing: bool
) -> dict[str, Any]:
    """The request body of a posted form. On create an empty box is left out (the type's
    default); on edit it clears the field (an empty list, or null where that is allowed)."""
    body: dict[str, Any] = {}
    for box in boxes:
        if box.name not in form:
            continue
        value = _read(box, form[box.name])
        if value is None and editing:
            value = EMPTY_OF.get(box.shape) if box.name in _REFUSING_NULL else None
            if box.shape in ("int", "float") and box.name in ALWAYS_VALUED:
                continue  # these always have a value: an empty box keeps it
        if value is not None or editing:
            body[box.name] = value
    for name, chosen in lists.items():
        body[name] = chosen
    return body


# Fields whose update refuses null: an empty box sends their empty value instead.
_REFUSING_NULL: Final = frozenset(
    name
    for name in TYPE_FIELDS
    if name not in SETTING_FIELDS  # null restores a setting's default
    and not any(kind.nullable(name) for kind in KINDS.values() if name in kind.config.model_fields)
)


def shown(box: Box, value: Any) -> str:
    """A stored value as the box shows it."""
    if value is None:
        return ""
    if box.shape == "bool":
        return "true" if value else ""
    if box.shape == "pairs":
        return "\n".join(f"{k}: {v}" for k, v in dict(value).items())
    if box.shape in ("lines", "numbers"):
        return "\n".join(str(v) for v in value)
    if box.shape == "json":
        return json.dumps(value, indent=2) if value else ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
