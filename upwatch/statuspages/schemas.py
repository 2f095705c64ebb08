"""Request and response shapes of status pages, their components and messages (seed 7-11,
contract §10), and of the public page."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr

from upwatch.kit.declared import DeclaredKey
from upwatch.kit.inputs import HTTP_URL_PATTERN, SINGLE_LINE_PATTERN, Input, TimeZone, worded
from upwatch.kit.languages import Language
from upwatch.kit.partial import Omittable
from upwatch.kit.schemas import Email, RowOut
from upwatch.notifications.channels import mask_value
from upwatch.statuspages.access import Visibility, normal_network
from upwatch.statuspages.rules import (
    ComponentStatus,
    DayStatus,
    Impact,
    OverallStatus,
    group_status,
)

Theme = Literal["light", "dark"]
Name = Annotated[str, Field(min_length=1, max_length=100, pattern=SINGLE_LINE_PATTERN)]
Description = Annotated[str, Field(max_length=5000)]
Slug = Annotated[
    str,
    Field(
        min_length=1,
        max_length=63,
        pattern=worded(
            "^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$",
            "lower-case letters, digits and inner hyphens, at most 63",
        ),
        description="The page's address: `/s/{slug}`. Unique across the service (409).",
    ),
]
# RFC 1123 labels, at least two, in any letter case (stored lower-case): a name a visitor's
# browser can ask for. No IP literal (the last label starts with a letter) and no port.
_HOST_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_PATTERN = worded(
    f"^(?:{_HOST_LABEL}\\.)+[A-Za-z](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?$",
    "a host name such as status.example.com: labels of letters, digits and inner hyphens, "
    "separated by dots, without a port",
)


CustomDomain = Annotated[
    str,
    Field(
        max_length=253,
        pattern=_HOST_PATTERN,
        description="A host name whose requests to `/` show this page (point its DNS here). "
        "Unique across pages (409); stored lower-case.",
    ),
    AfterValidator(str.lower),
]

CustomCss = Annotated[
    str,
    Field(
        max_length=65_536,
        description="A style sheet of the owner's, served as `/s/{slug}/custom.css`",
    ),
]
CustomJs = Annotated[
    str,
    Field(
        max_length=65_536,
        description="A script of the owner's, served as `/s/{slug}/custom.js` and run on "
        "that status page only",
    ),
]
PageVisibility = Annotated[
    Visibility,
    Field(
        description="Who may read the page: `public` (anyone), `password` (whoever gives its "
        "`password` on the page's form or `POST /status-pages/public/slug/{slug}/unlock`; "
        "members of its project too) or `members` (members of its project only: a bearer "
        "token for the JSON, the console's preview for the HTML). Everyone else gets 404 "
        "as for a missing page. `isPublic` is true exactly when this is `public`."
    ),
]
PagePassword = Annotated[
    str,
    Field(
        min_length=8,
        max_length=200,
        description="Write-only: stored as an Argon2id hash and never returned "
        "(`hasPassword` says one is set). A new one signs every visitor out. Required "
        "to make a page `password` that has none yet.",
    ),
]
AllowedNetworks = Annotated[
    list[Annotated[str, Field(max_length=49), AfterValidator(normal_network)]],
    Field(
        max_length=100,
        description="CIDRs (IPv4 or IPv6, e.g. `203.0.113.0/24`, `2001:db8::/32`; a bare "
        "address is one host) the client address must be in, whatever the visibility; "
        "outside them every route of the page is 404, for members too. Empty: any "
        "address. Behind a reverse proxy, set `UPWATCH_FORWARDED_ALLOW_IPS`.",
    ),
]
PageLanguage = Annotated[
    Language,
    Field(
        description="The language the HTML page, its feeds and its badges speak (the JSON's "
        "texts are the owner's own); `en` by default",
        examples=["ja"],
    ),
]
VisitorLanguage = Annotated[
    bool,
    Field(
        description="true: a visitor reads the HTML page in the language their browser asks "
        "for (`Accept-Language`), among the ten, and can pick another at its foot "
        "(`?lang=`); the page's `language` otherwise and for the feeds and badges",
    ),
]
Id = Annotated[str, Field(max_length=32)]
Order = Annotated[int, Field(ge=0, le=1_000_000)]
PageTimeZone = Annotated[
    TimeZone,
    Field(
        description="The IANA time zone (e.g. Europe/Paris) the HTML page, its incident "
        "history and its feeds show times in; the JSON keeps UTC",
        examples=["Europe/Paris"],
    ),
]


class StatusPageCreate(Input):
    projectId: Id
    name: Name
    slug: Slug
    description: Description = ""
    isPublic: bool = Field(
        default=True,
        description="The seed's switch: false makes a `members` page (404 to the public) "
        "unless `visibility` says otherwise",
    )
    visibility: PageVisibility | None = Field(
        default=None, description="Default: `public`, or `members` when `isPublic` is false"
    )
    password: PagePassword | None = None
    allowedNetworks: AllowedNetworks = Field(default_factory=list)
    theme: Theme = "light"
    customDomain: CustomDomain | None = None
    customCss: CustomCss = ""
    customJs: CustomJs = ""
    key: DeclaredKey | None = None
    timeZone: PageTimeZone = "UTC"
    language: PageLanguage = "en"
    visitorLanguage: VisitorLanguage = False


class StatusMessageOut(RowOut):
    model_config = ConfigDict(coerce_numbers_to_str=True)

    id: str
    message: str
    component_ids: list[str] = Field(description="The components the message is about")
    created_at: datetime


class ComponentOut(RowOut):
    id: str
    status_page_id: str
    monitor_id: str
    name: str
    description: str
    order: int
    status: ComponentStatus = Field(description="From the monitor's current state")
    group_id: str | None = Field(default=None, description="Its group on the page, if any")

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        return {"order": row.position, "status": context["statuses"][row.id]}


class GroupOut(RowOut):
    id: str
    status_page_id: str
    name: str
    order: int = Field(
        description="Its place among the groups and the ungrouped components of the page"
    )
    status: ComponentStatus = Field(description="Its worst member's status")
    component_ids: list[str] = Field(description="Its members, in their order")

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        members = context["members"].get(row.id, [])
        return {
            "order": row.position,
            "status": group_status(context["statuses"][m] for m in members),
            "component_ids": members,
        }


class StatusPageOut(RowOut):
    id: str
    project_id: str
    name: str
    slug: str
    description: str
    is_public: bool
    visibility: Visibility = Field(description="Who may read it (see the create operation)")
    has_password: bool = Field(description="A page password is set (it is never returned)")
    allowed_networks: list[str] = Field(
        description="CIDRs a visitor's address must be in; empty: any"
    )
    theme: Theme
    custom_domain: str | None
    custom_css: str
    custom_js: str
    key: str | None = Field(description="Its key in a config file (`upwatch apply`)")
    message: StatusMessageOut | None = Field(
        description="The current message, or null when none is posted or the last was empty"
    )
    components: list[ComponentOut] = Field(description="In their order")
    groups: list[GroupOut] = Field(
        default_factory=list, description="Component groups, in their order"
    )
    time_zone: str = Field(description="The zone the HTML page and feeds show times in")
    language: str = Field(description="The language of the HTML page, its feeds and badges")
    visitor_language: bool = Field(
        description="Whether a visitor's browser language (or choice) wins on the HTML page"
    )
    public_url: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        return {
            "message": context["message"],
            "components": context["components"],
            "groups": context.get("groups", []),
            "public_url": f"{context['base_url']}/s/{row.slug}",
            "has_password": row.password_hash is not None,
        }


class StatusPageUpdate(Input):
    """Change a page (seed 7); fields left out stay as they are, and only `customDomain` may
    be null (it removes the domain)."""

    resource = StatusPageOut

    name: Omittable[Name] = None
    slug: Omittable[Slug] = None
    description: Omittable[Description] = None
    isPublic: Omittable[bool] = Field(
        default=None,
        description="true makes the page `public`; false makes a public page `members`",
    )
    visibility: Omittable[PageVisibility] = None
    password: Omittable[PagePassword] = None
    allowedNetworks: Omittable[AllowedNetworks] = None
    theme: Omittable[Theme] = None
    customDomain: CustomDomain | None = Field(default=None, description="null removes it")
    customCss: Omittable[CustomCss] = None
    customJs: Omittable[CustomJs] = None
    key: DeclaredKey | None = Field(default=None, description="null removes it")
    timeZone: Omittable[PageTimeZone] = None
    language: Omittable[PageLanguage] = None
    visitorLanguage: Omittable[VisitorLanguage] = None


GroupId = Annotated[
    str,
    Field(max_length=32, description="A group of this page (422 otherwise)"),
]


class ComponentCreate(Input):
    monitorId: Id = Field(description="A monitor of the page's project")
    name: Name | None = Field(default=None, description="Default: the monitor's name")
    description: Description = ""
    order: Order | None = Field(default=None, description="Default: after the last component")
    groupId: GroupId | None = Field(
        default=None, description="A group of this page to show it in (422 otherwise)"
    )


class ComponentUpdate(Input):
    resource = ComponentOut

    name: Omittable[Name] = None
    description: Omittable[Description] = None
    order: Omittable[Order] = None
    groupId: GroupId | None = Field(
        default=None,
        description="A group of this page to move it into (422 otherwise); null takes it "
        "out of its group",
    )


class GroupCreate(Input):
    name: Name = Field(description="Unique on the page (409)")
    order: Order | None = Field(
        default=None, description="Default: after the last group or component"
    )


class GroupUpdate(Input):
    resource = GroupOut

    name: Omittable[Name] = None
    order: Omittable[Order] = None


class StatusMessageIn(Input):
    message: Annotated[
        str, Field(max_length=5000, description="Shown on the page; an empty one clears it")
    ]
    componentIds: Annotated[list[Id], Field(max_length=500)] = Field(
        default_factory=list, description="Components of this page the message is about"
    )


# ---- the public page (seed 11, contract §10) ----


class PublicModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class PublicDay(PublicModel):
    date: date
    uptimePercentage: float | None = Field(description="null: no checks that day")
    status: DayStatus


class PublicComponent(PublicModel):
    id: str
    name: str
    description: str
    status: ComponentStatus
    uptime90d: float | None = Field(description="null: no checks in the 90 days")
    days: list[PublicDay] = Field(description="90 days, oldest first, today last (UTC)")
    # Its place among the groups and ungrouped components, for the HTML page alone: the
    # JSON's components keep the shape old clients know.
    _order: int = PrivateAttr(default=0)


class PublicGroup(PublicModel):
    id: str
    name: str
    status: ComponentStatus = Field(description="Its worst member's status")
    componentIds: list[str] = Field(description="Its members in `components`, in their order")
    order: int = Field(
        description="Its place among the groups and the ungrouped components (by their "
        "`order`), as the HTML page lists them"
    )


class PublicIncidentUpdate(PublicModel):
    status: str
    message: str
    createdAt: datetime


class PublicIncident(PublicModel):
    id: str
    title: str
    status: str
    severity: str
    impact: Impact | None = Field(
        description="While open, what it means for what it affects, from its severity: "
        "`degraded` (low, medium), `partial_outage` (high), `major_outage` (critical); null "
        "once resolved"
    )
    componentIds: list[str] = Field(
        description="The components it affects (its monitor's, and those it was placed on); "
        "empty for an incident placed on the page as a whole"
    )
    startedAt: datetime
    resolvedAt: datetime | None
    updates: list[PublicIncidentUpdate] = Field(description="Oldest first")


class PublicMaintenance(PublicModel):
    title: str
    startsAt: datetime = Field(description="This occurrence's start")
    endsAt: datetime
    active: bool = Field(description="On now")
    componentIds: list[str] = Field(description="The page's components it covers")


class PublicMessage(PublicModel):
    message: str
    componentIds: list[str]
    createdAt: datetime


class PublicStatusPage(PublicModel):
    name: str
    slug: str
    description: str
    theme: Theme
    overallStatus: OverallStatus
    message: PublicMessage | None
    components: list[PublicComponent]
    incidents: list[PublicIncident] = Field(
        description="Open incidents on the page's monitors, and those resolved in the last "
        "14 days, newest first"
    )
    maintenance: list[PublicMaintenance] = Field(
        default_factory=list,
        description="Maintenance on the page's components that is on now or starts within "
        "the next 14 days (the next occurrence of each window), soonest first",
    )
    groups: list[PublicGroup] = Field(
        default_factory=list,
        description="Component groups with members, in their order; `components` lists "
        "every component, grouped or not",
    )
    timeZone: str = Field(
        default="UTC", description="The zone the HTML page shows times in (the JSON keeps UTC)"
    )
    language: str = Field(default="en", description="The language of the HTML page")
    visitorLanguage: bool = Field(
        default=False,
        description="Whether the HTML page follows a visitor's browser language",
    )
    updatedAt: datetime = Field(description="When this answer was built")


ChosenComponents = Annotated[
    list[Id] | None,
    Field(
        max_length=500,
        description="Components of the page to hear about (incidents and maintenance that "
        "touch one of them; changes to the whole page always); null or left out: all",
    ),
]


class SubscribeIn(Input):
    email: Email
    componentIds: ChosenComponents = None


class SubscribeOut(PublicModel):
    status: Literal["confirmation_sent"] = Field(
        default="confirmation_sent",
        description="A confirmation link is mailed unless the address is confirmed already",
    )


HookKind = Literal["webhook", "slack"]
HookUrl = Annotated[str, Field(min_length=1, max_length=2048, pattern=HTTP_URL_PATTERN)]


class SubscriberCreate(Input):
    """A webhook or Slack subscriber, added by a member of the page's project (so confirmed at
    once: e-mail subscribers confirm themselves through the public form's link instead)."""

    kind: HookKind = Field(
        description="webhook: a JSON POST signed per Standard Webhooks; slack: a message to "
        "a Slack incoming webhook"
    )
    url: HookUrl = Field(description="Where notices are posted; checked by the address guard")
    componentIds: ChosenComponents = None


class SubscriberOut(RowOut):
    id: str
    kind: str = Field(description="email, webhook or slack")
    email: str | None = Field(description="An e-mail subscriber's address; null for the others")
    url: str | None = Field(
        description="A webhook or Slack subscriber's URL, masked (scheme and host only)"
    )
    component_ids: list[str] | None = Field(description="The components followed; null: all")
    created_at: datetime
    confirmed_at: datetime | None

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        return {"url": mask_value(row.url) if row.url else None}


class SubscriberCreated(SubscriberOut):
    secret: str | None = Field(
        description="A webhook subscriber's signing secret (`whsec_...`), shown only in this "
        "answer; null for Slack"
    )


class SubscriberUpdate(Input):
    """Fields left out stay; `url` sent back masked keeps the stored one."""

    resource = SubscriberOut

    url: Omittable[HookUrl] = None
    componentIds: ChosenComponents = None


class UnlockIn(Input):
    password: Annotated[str, Field(min_length=1, max_length=200)]
