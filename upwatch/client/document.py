"""The config file of ``upwatch apply``: its shape (published as JSON Schema), and reading it
with every error named by line and field.

Each object is the API's create body with a ``key`` (how ``apply`` finds it again) and without
``projectId`` (the API key's project). References name keys of the same file: a monitor's
``dependsOn``, a component's ``monitor``, a maintenance window's ``monitors``. Secrets are
``{env: NAME}``: read from the environment when applying, never written in the file.

The file's models are built from the API's own, so the two never drift; each entry is then
checked against the API's model itself (its cross-field rules included) before anything is
sent, so a bad file changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Annotated, Any, Final, Literal, Union, get_origin

import yaml
from pydantic import BaseModel, Field, TypeAdapter, ValidationError, create_model
from pydantic.fields import FieldInfo

from upwatch.client import SCHEMA_PATH as SCHEMA_PATH
from upwatch.kit.declared import DeclaredKey, EnvName
from upwatch.kit.errors import described
from upwatch.kit.inputs import Input, TagInWords
from upwatch.kit.security import SECRET_MASK
from upwatch.maintenance.schemas import MaintenanceWindowCreate
from upwatch.monitors.schemas import MONITOR_CREATES, MonitorCreate
from upwatch.monitors.secrets import secret_names
from upwatch.notifications.channels import REGISTRY, is_secret_path
from upwatch.notifications.schemas import NewProvider, ProviderCreate
from upwatch.probes.registry import KINDS as MONITOR_KINDS
from upwatch.statuspages.schemas import ComponentCreate, StatusPageCreate
from upwatch.statuspages.schemas import Name as GroupName

SCHEMA_ID: Final = "https://upwatch.dev/schemas/upwatch-config.schema.json"
# A stand-in id for references while an entry is checked against the API's model.
PLACEHOLDER_ID: Final = "0" * 32


class EnvRef(Input):
    """A secret read from the environment when applying; the file never holds the value."""

    env: EnvName


def _without(
    model: type[BaseModel], drop: set[str], **changed: Any
) -> dict[str, tuple[Any, FieldInfo]]:
    fields: dict[str, tuple[Any, FieldInfo]] = {
        name: (info.annotation, info)
        for name, info in model.model_fields.items()
        if name not in drop and name not in changed
    }
    fields.update(changed)
    return fields


def _entry(model: type[BaseModel], name: str, drop: set[str], **changed: Any) -> type[Input]:
    """``model``'s fields without ``drop``, with ``changed``, and a required ``key``."""
    fields = _without(model, drop | {"key", "secretRefs"}, **changed)
    built: type[Input] = create_model(  # type: ignore[call-overload]
        name,
        __base__=Input,
        __doc__=model.__doc__,
        key=(DeclaredKey, ...),
        **fields,
    )
    return built


KeyList = Annotated[list[DeclaredKey], Field(max_length=1000)]
Secret = Union[str, EnvRef]  # noqa: UP007 - pydantic reads the annotation at run time


def _secret_fields(model: type[BaseModel]) -> dict[str, Any]:
    """A monitor type's secret fields (a database URL among them), given as ``{env: NAME}``."""
    kind = next(k for k in MONITOR_KINDS.values() if model.__name__ == f"{k.title}MonitorCreate")
    names = (*kind.secrets, *(("url",) if kind.url_password_secret else ()))
    changed: dict[str, Any] = {}
    for name in names:
        required = model.model_fields[name].is_required()
        changed[name] = (
            Secret if required else Secret | None,
            Field(default=... if required else None, description="A secret: {env: NAME}"),
        )
    return changed


def _monitor_entries() -> Any:
    members = []
    for model in MONITOR_CREATES:
        headers = (
            Annotated[dict[str, Secret], Field(max_length=50)] | None,
            Field(
                default=None,
                description="Header values; a secret one as {env: NAME}",
            ),
        )
        depends = (
            KeyList | None,
            Field(default=None, description="Keys of monitors of this file"),
        )
        members.append(
            _entry(
                model,
                f"{model.__name__.removesuffix('Create')}Entry",
                {"projectId", "escalationPolicyId", "regionIds"},
                headers=headers,
                dependsOn=depends,
                **_secret_fields(model),
            )
        )
    return Annotated[Union[tuple(members)], TagInWords("type")]  # noqa: UP007


def _config_entry(config: type[BaseModel], secret_fields: Sequence[str]) -> type[Input]:
    changed: dict[str, Any] = {}
    for name in secret_fields:
        info = config.model_fields[name]
        required = info.is_required()
        if get_origin(info.annotation) is list:  # a list of secrets (Apprise URLs)
            changed[name] = (
                list[Secret] if required else list[Secret] | None,
                Field(
                    default=... if required else None,
                    description="Secrets, each as {env: NAME}",
                ),
            )
            continue
        changed[name] = (
            Secret if required else Secret | None,
            Field(default=... if required else None, description="A secret: {env: NAME}"),
        )
    if "headers" in config.model_fields:  # webhook header values are kept secret
        changed["headers"] = (
            Annotated[dict[str, Secret], Field(max_length=20)] | None,
            Field(default=None, description="Header values; a secret one as {env: NAME}"),
        )
    built: type[Input] = create_model(  # type: ignore[call-overload]
        f"{config.__name__}Entry",
        __base__=Input,
        **_without(config, set(), **changed),
    )
    return built


def _provider_entries() -> Any:
    members = []
    for model in NewProvider.__args__:
        channel = REGISTRY[model.model_fields["type"].annotation.__args__[0]]
        config = _config_entry(channel.config_model, channel.secret_fields)
        members.append(
            _entry(
                model,
                f"{model.__name__.removesuffix('Create')}Entry",
                {"projectId"},
                config=(config, Field(...)),
            )
        )
    return Annotated[Union[tuple(members)], TagInWords("type")]  # noqa: UP007


ComponentEntry = create_model(  # type: ignore[call-overload]
    "ComponentEntry",
    __base__=Input,
    __doc__="A monitor shown on the page, in the file's order",
    monitor=(DeclaredKey, Field(description="The key of a monitor of this file")),
    **_without(ComponentCreate, {"monitorId", "order", "groupId"}),
    group=(
        GroupName | None,
        Field(
            default=None,
            description="The group to show it in: components naming the same group share "
            "its header, placed where its first member is. Left out: ungrouped (groups no "
            "component names are removed from the page)",
        ),
    ),
)
StatusPageEntry = _entry(
    StatusPageCreate,
    "StatusPageEntry",
    # A page password is set in the console or the API: a file holds no password (and the
    # service returns none to compare with).
    {"projectId", "password"},
    components=(
        Annotated[list[ComponentEntry], Field(max_length=500)] | None,
        Field(default=None, description="In their order; left out: the page's are kept"),
    ),
)
MaintenanceEntry = _entry(
    MaintenanceWindowCreate,
    "MaintenanceEntry",
    {"projectId", "monitorIds"},
    monitors=(
        KeyList | None,
        Field(default=None, description="Keys of monitors of this file; left out: all"),
    ),
)
MonitorEntry = _monitor_entries()
ProviderEntry = _provider_entries()


class ConfigFile(Input):
    """A project's monitors, notification providers, status pages and maintenance windows,
    for ``upwatch apply -f FILE`` (docs/config-as-code.md)."""

    version: Literal[1] = Field(description="The format's version")
    monitors: list[MonitorEntry] = Field(default_factory=list)  # type: ignore[valid-type]
    providers: list[ProviderEntry] = Field(default_factory=list)  # type: ignore[valid-type]
    statusPages: list[StatusPageEntry] = Field(default_factory=list)  # type: ignore[valid-type]  # noqa: N815
    maintenance: list[MaintenanceEntry] = Field(default_factory=list)  # type: ignore[valid-type]


KINDS: Final = ("providers", "monitors", "statusPages", "maintenance")


def json_schema() -> dict[str, Any]:
    """The published JSON Schema of the file (docs/upwatch-config.schema.json)."""
    schema = ConfigFile.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


# ---- reading, with line numbers ------------------------------------------------------------


class FileError(Exception):
    """What is wrong with the file: each problem as ``line N: field: message``."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class Document:
    """The file's data, and where each value sits in it."""

    data: dict[str, Any]
    root: yaml.Node
    name: str

    def line_of(self, loc: Sequence[str | int]) -> int:
        """The 1-based line of the value at ``loc``, or of its nearest parent found."""
        node = self.root
        for part in loc:
            child = _child(node, part)
            if child is None:
                continue  # a discriminator's tag or a missing field: stay on the parent
            node = child
        return node.start_mark.line + 1

    def problem(self, loc: Sequence[str | int], message: str) -> str:
        return f"{self.name}:{self.line_of(loc)}: {dotted(loc)}: {message}"


def _child(node: yaml.Node, part: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == part:
                return value  # type: ignore[no-any-return]
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        return node.value[part]  # type: ignore[no-any-return]
    return None


def dotted(loc: Sequence[str | int]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(file)"


def _plain(value: Any) -> Any:
    """YAML's dates and times as the API's ISO text."""
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def parse(text: str, name: str = "config") -> Document:
    """The YAML document, or ``FileError`` naming the line of a syntax error."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else 1
        raise FileError([f"{name}:{line}: not valid YAML: {exc.problem}"]) from None
    except yaml.YAMLError as exc:
        raise FileError([f"{name}: not valid YAML: {exc}"]) from None
    if root is None or not isinstance(data, dict):
        raise FileError([f"{name}:1: (file): must be a mapping with `version: 1`"])
    return Document(_plain(data), root, name)


def _messages(error: ValidationError) -> Iterator[tuple[tuple[str | int, ...], str]]:
    for item in error.errors():
        if isinstance(item.get("input"), str) and SECRET_MASK in item["input"]:
            # An exported secret without a reference: the service reads its mask as the
            # stored value (creating with one is refused when the plan is made).
            continue
        yield described(item)


def masked_places(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Where ``value`` holds a masked secret."""
    if isinstance(value, str) and SECRET_MASK in value:
        yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from masked_places(v, (*path, k))
    elif isinstance(value, list):
        for n, v in enumerate(value):
            yield from masked_places(v, (*path, n))


def _secret_place(kind: str, entry: Mapping[str, Any], path: str) -> bool:
    """Whether the service keeps ``path`` of the entry secret (where a reference may go)."""
    if kind == "monitors" and path.startswith("headers."):
        return path[8:].lower() in secret_names(entry.get("secretHeaders") or [])
    if kind == "monitors" and (monitor := MONITOR_KINDS.get(str(entry.get("type")))):
        return path in monitor.secrets or (path == "url" and monitor.url_password_secret)
    return kind == "providers" and is_secret_path(str(entry["type"]), path)


def checked(document: Document, environment: Mapping[str, str] = os.environ) -> ConfigFile:
    """The file against its schema, every problem named; then each entry against the API,
    its ``{env: NAME}`` secrets read from ``environment``."""
    try:
        config = ConfigFile.model_validate(document.data)
    except ValidationError as exc:
        raise FileError([document.problem(loc, msg) for loc, msg in _messages(exc)]) from None
    problems = list(_cross_checks(document, config, environment))
    if problems:
        raise FileError(problems)
    return config


def entries(config: ConfigFile, kind: str) -> list[dict[str, Any]]:
    """The entries of one kind as given (fields left out are absent)."""
    return [entry.model_dump(mode="json", exclude_unset=True) for entry in getattr(config, kind)]


_API_CHECKS: Final[dict[str, TypeAdapter[Any]]] = {
    "monitors": TypeAdapter(MonitorCreate),
    "providers": TypeAdapter(ProviderCreate),
    "statusPages": TypeAdapter(StatusPageCreate),
    "maintenance": TypeAdapter(MaintenanceWindowCreate),
}


def as_api_body(
    kind: str, entry: Mapping[str, Any], secret: Callable[[str], str]
) -> dict[str, Any]:
    """An entry in the API's create shape, references as stand-in ids and each secret as
    ``secret(name)``."""
    body = {k: v for k, v in entry.items() if k not in ("key", "components", "monitors")}
    body["projectId"] = PLACEHOLDER_ID
    if kind == "monitors" and entry.get("dependsOn") is not None:
        body["dependsOn"] = [PLACEHOLDER_ID for _ in entry["dependsOn"]]
    if kind == "maintenance" and entry.get("monitors") is not None:
        body["monitorIds"] = [PLACEHOLDER_ID for _ in entry["monitors"]]
    return resolved(body, secret)  # type: ignore[no-any-return]


def resolved(value: Any, secret: Any) -> Any:
    """``value`` with each ``{env: NAME}`` replaced by ``secret(NAME)``."""
    if isinstance(value, dict):
        if set(value) == {"env"} and isinstance(value["env"], str):
            return secret(value["env"])
        return {k: resolved(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [resolved(v, secret) for v in value]
    return value


def secret_refs(value: Any, path: str = "") -> dict[str, str]:
    """Each ``{env: NAME}`` in ``value``, by its dotted path."""
    found: dict[str, str] = {}
    if isinstance(value, dict):
        if set(value) == {"env"} and isinstance(value["env"], str):
            return {path: value["env"]}
        for k, v in value.items():
            found.update(secret_refs(v, f"{path}.{k}" if path else str(k)))
    return found


def _cross_checks(
    document: Document, config: ConfigFile, environment: Mapping[str, str]
) -> Iterator[str]:
    monitor_keys = {entry["key"] for entry in entries(config, "monitors")}
    for kind in KINDS:
        seen: set[str] = set()
        for index, entry in enumerate(entries(config, kind)):
            where: tuple[str | int, ...] = (kind, index)
            if entry["key"] in seen:
                yield document.problem((*where, "key"), f"{entry['key']!r} is given twice")
            seen.add(entry["key"])
            missing = [
                (path, name) for path, name in secret_refs(entry).items() if name not in environment
            ]
            for path, name in missing:
                yield document.problem(
                    (*where, *path.split(".")), f"the environment variable {name} is not set"
                )
            for path in secret_refs(entry):
                if not _secret_place(kind, entry, path):
                    yield document.problem(
                        (*where, *path.split(".")),
                        "not a secret field: give the value itself"
                        + (" (or name the header in secretHeaders)" if kind == "monitors" else ""),
                    )
            try:
                if not missing:
                    _API_CHECKS[kind].validate_python(
                        as_api_body(kind, entry, lambda name: environment[name])
                    )
            except ValidationError as exc:
                for loc, msg in _messages(exc):
                    yield document.problem((*where, *_file_loc(kind, loc)), msg)
            refs = [("dependsOn", entry.get("dependsOn"))]
            refs.append(("monitors", entry.get("monitors") if kind == "maintenance" else None))
            refs += [
                (f"components.{i}.monitor", [c["monitor"]])
                for i, c in enumerate(entry.get("components") or [])
            ]
            for field, keys in refs:
                for n, key in enumerate(keys or []):
                    if key not in monitor_keys:
                        parts = [int(p) if p.isdigit() else p for p in field.split(".")]
                        if field in ("dependsOn", "monitors"):
                            parts.append(n)
                        yield document.problem(
                            (*where, *parts), f"no monitor with the key {key!r} in this file"
                        )


def _file_loc(kind: str, loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """An API error's field as the file names it."""
    if kind == "maintenance" and loc[:1] == ("monitorIds",):
        return ("monitors", *loc[1:])
    return loc
