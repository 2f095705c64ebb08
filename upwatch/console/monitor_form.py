"""The monitor form: its boxes derived from the API's fields, and a posted form read back
into the API's request body.

A type's own boxes come from its config model (``upwatch/probes``: names, types, choices,
help texts; labels from its ``form`` declaration where it gives one); the boxes every type
has come from the request model's common fields. Lists are typed one per line, headers as
``Name: value`` lines and assertions as JSON, so any value the API takes can be typed.

The boxes' labels and hints are English, marked for the catalogs here (``N_``: the labels made
from field names, the hints cut from the API's help texts) or where the types declare them,
and translated where the form shows them (``monitor_form.html``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Any, Final, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.alias_generators import to_snake
from pydantic.fields import FieldInfo

from upwatch.kit.languages import N_
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
    default: str = ""  # the field's default, named after the hint (a value, not a word)
    input: str = "text"  # the HTML input type of a one-line box
    required: bool = False

    @property
    def multiline(self) -> bool:
        return self.shape in ("lines", "pairs", "json") or self.input == "textarea"


def _words(name: str) -> str:
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower()
    return spaced[:1].upper() + spaced[1:]


# The labels made from field names (``_words``), marked for the catalogs; a field missing here
# is labelled all the same, in English.
LABELS: Final = {
    "method": N_("Method"),
    "headers": N_("Headers"),
    "secretHeaders": N_("Secret headers"),
    "body": N_("Body"),
    "expectedStatusCodes": N_("Expected status codes"),
    "keyword": N_("Keyword"),
    "assertions": N_("Assertions"),
    "recordType": N_("Record type"),
    "expectedValue": N_("Expected value"),
    "schedule": N_("Schedule"),
    "timezone": N_("Timezone"),
    "graceSeconds": N_("Grace seconds"),
    "intervalSeconds": N_("Interval seconds"),
    "timeoutSeconds": N_("Timeout seconds"),
    "retries": N_("Retries"),
    "degradedThresholdMs": N_("Degraded threshold ms"),
    "quorum": N_("Quorum"),
    "successThreshold": N_("Success threshold"),
    "alertOnDegraded": N_("Alert on degraded"),
    "baselineFactor": N_("Baseline factor"),
    "baselineMinSamples": N_("Baseline min samples"),
    "certificateWarningDays": N_("Certificate warning days"),
}

# The hints of the types' own boxes as ``_box`` cuts them from the API's help texts (in
# ``upwatch/probes``), marked for the catalogs: a help text changed without its hint here is
# shown in English until it is added.
TYPE_HINTS: Final = (
    N_(
        "A pattern (regular expression) searched in the first message the server sends (after "
        "message, when one is sent); no reply in time, or one it is not found in, is down"
    ),
    N_(
        "Days before the registration expires when the check starts failing: it fails with "
        "fewer days left than the largest."
    ),
    N_("Dial with TLS, verifying the certificate for host (null: false)"),
    N_("Names of further headers whose values are secret (any letter case)"),
    N_("Sent with the opening handshake (Authorization is masked in responses)"),
    N_("Text sent once the socket is open"),
    N_(
        "The connection URL, e.g. rediss://default:secret@cache.example.com:6380/0; its "
        "password is a secret"
    ),
    N_(
        "The connection URL, e.g. mysql://monitor:secret@db.example.com:3306/app?ssl=true; its "
        "password is a secret"
    ),
    N_(
        "The connection URL, e.g. postgresql://monitor:secret@db.example.com:5432/app; its "
        "password is a secret"
    ),
    N_("The registered domain name, as example.com."),
    N_(
        "The service the health service is asked about (e.g. my.package.Greeter); left out, "
        "the server as a whole"
    ),
    N_(
        "Values of Authorization, Cookie, Proxy-Authorization and of the headers named in "
        "secretHeaders are masked in responses; sent back masked, they keep the stored value"
    ),
    N_(
        "a cron schedule (five fields, or @hourly, @daily, ...) read in timezone; the job is "
        "late when no ping arrives by the schedule's next time after the last ping, plus "
        "graceSeconds"
    ),
    N_("conditions on the response beyond its status code, checked in order (empty removes them)"),
    N_("empty means 200-399"),
    N_(
        "how late a ping may be, and how long a started job may run, before the monitor is "
        "down (60)"
    ),
    N_("logs in as this user (with password)"),
    N_(
        "starttls upgrades a plain connection, implicit speaks TLS from the first byte, none "
        "never encrypts; null on update: starttls"
    ),
    N_("the IANA zone of schedule (UTC)"),
    N_("the login's password"),
    N_("the port; null: the protocol's usual one for the TLS mode"),
)


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


# The end of the API help text's first sentence (not the "." of an "e.g.").
_FIRST_SENTENCE: Final = re.compile(r"(?<!e\.g)\. ")


def _box(name: str, info: FieldInfo, label: str = "", input: str = "") -> Box:
    shape, choices = _shape_of(info.annotation)
    one_line = {"int": "number", "float": "number"}.get(shape, "text")
    if shape == "text" and _longest(info) > LONG_TEXT:
        one_line = "textarea"
    # The API's help text, without its Markdown (`[]` is an empty box here).
    hint = _FIRST_SENTENCE.split(info.description or "")[0]
    hint = hint.replace("`[]`", "empty").replace("`", "")
    hint = re.sub(r"^\w+ monitors: ", "", hint)
    default = None if info.is_required() else info.get_default(call_default_factory=True)
    # Shown after the hint as "; default …" (monitor_form.html).
    named = "" if default in (None, [], {}) else str(default)
    if is_secret(info):
        input = input or "password"  # shown masked; sent back masked, it keeps the secret
    return Box(
        name,
        label or LABELS.get(name) or _words(name),
        shape,
        hint,
        choices,
        default=named,
        input=input or one_line,
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
    "intervalSeconds": N_("Seconds between checks (10 to 86400)"),
    "timeoutSeconds": N_("Seconds a check may take; shorter than the interval"),
    "retries": N_("Failed checks tried again before the monitor turns down (0 to 10)"),
    "degradedThresholdMs": N_("Slower answers (ms) count as degraded; empty: never"),
    "quorum": N_("Regions that must agree before the status changes; empty: a majority"),
    "successThreshold": N_(
        "Successful checks in a row before a down monitor is up again; empty: 1"
    ),
    "alertOnDegraded": N_(
        "Degraded checks in a row that open a low-severity incident and alert; "
        "empty: degraded never alerts"
    ),
    "baselineFactor": N_(
        "Degraded when the last hour's p95 is this many times the 7-day p95; empty: off"
    ),
    "baselineMinSamples": N_("Checks each period needs before the baseline rule judges; empty: 30"),
    "certificateWarningDays": N_(
        "Days before a certificate expires that open a warning, one per line; empty: 14, 7 and 1"
    ),
}


def common_boxes(model: type[BaseModel]) -> list[Box]:
    fields = model.model_fields
    return [
        Box(**{**_box(name, fields[name]).__dict__, "hint": HINTS[name], "default": ""})
        for name in COMMON
    ]


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
    """A box whose text could not be read into the field's shape: ``message`` (marked with
    ``N_``) with its ``values``, in English as the exception's text."""

    def __init__(self, name: str, message: str, **values: str) -> None:
        super().__init__(message % values)
        self.name = name
        self.message = message
        self.values = values

    def said(self, gettext: Callable[[str], str]) -> str:
        """The message in the language of ``gettext``."""
        return gettext(self.message) % self.values


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
                raise FormError(
                    box.name,
                    N_("write each as Name: value (not %(line)s)"),
                    line=repr(line.strip()),
                )
            pairs[key.strip()] = value.strip()
        return pairs
    if box.shape == "json":
        try:
            return json.loads(text)
        except ValueError as exc:
            raise FormError(box.name, N_("is not JSON: %(error)s"), error=str(exc)) from None
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
