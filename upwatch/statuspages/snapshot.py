"""The public page as one snapshot per page: built from the database at most once per change
or maximum age, whatever the number of visitors, and served as ready bytes with an ETag.

A status page is read hardest during an outage, exactly when the database is busiest: a
flood of visitors costs one build per page and age, not one per request. Changes made through
this process's API (page, components, message, incidents placed on it) drop the snapshot at
once, and no snapshot whose build began before such a change is served after it (a page made
private is private from the moment its change commits). Monitor states and incidents, which
other processes change, are caught by the page's marks of change: the first visit past the
maximum age reads them (one small query), and when they moved it waits for a rebuild instead
of being served the old snapshot, so no visitor sees a state that changed more than a maximum
age ago.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from upwatch.incidents.automatic import automatic_title
from upwatch.incidents.repository import IncidentRepository
from upwatch.kit import languages
from upwatch.kit.clock import Clock
from upwatch.maintenance.repository import MaintenanceRepository
from upwatch.maintenance.rules import next_start, occurrence_at
from upwatch.maintenance.service import schedule_of
from upwatch.models import Monitor, StatusPage, StatusPageComponent, StatusPageGroup
from upwatch.statuspages import render, rules
from upwatch.statuspages.access import Gate
from upwatch.statuspages.repository import StatusPageRepository
from upwatch.statuspages.schemas import (
    PublicComponent,
    PublicDay,
    PublicGroup,
    PublicIncident,
    PublicIncidentUpdate,
    PublicMaintenance,
    PublicMessage,
    PublicStatusPage,
)
from upwatch.statuspages.service import members_of, monitor_component_status

log = logging.getLogger(__name__)

DAYS = 90
_NO_CHECKS = (0, 0, 0, 0)
RESOLVED_INCIDENTS_SHOWN = timedelta(days=14)
# How long a page's older day counts are taken from its earlier builds (late results
# land on today and yesterday, which every build reads).
FULL_READ_SECONDS = 600.0


# A day's bar by monitor and day, with the counts it was made from: past days rarely change,
# so a rebuild makes new bars only for today and for days whose counts moved.
DayBars = dict[tuple[str, date], tuple[tuple[int, int, int, int], PublicDay]]


async def build(
    session: AsyncSession,
    page: StatusPage,
    now: datetime,
    bars_made: DayBars | None = None,
    *,
    recent_only: bool = False,
) -> PublicStatusPage:
    """What the public sees of ``page`` at ``now``: from monitor states, day aggregates,
    the current message and incidents; never a monitor's target or settings. ``bars_made``
    keeps the day bars of earlier builds (and gets this one's). ``recent_only`` reads the
    counts of today and yesterday only and takes older days from ``bars_made`` where it has
    them all (late results land on these two days; older ones change only in a full read)."""
    made: DayBars = {} if bars_made is None else bars_made
    repository = StatusPageRepository(session)
    components = (await repository.components([page.id]))[page.id]
    monitor_ids = [c.monitor_id for c in components]
    monitors = await repository.monitors(monitor_ids)
    today = now.date()
    first = today - timedelta(days=DAYS - 1)
    dates = [first + timedelta(days=n) for n in range(DAYS)]
    day_texts = [day.isoformat() for day in dates]
    for key in [k for k in made if k[1] < first]:  # days that left the window
        del made[key]
    read_from = today - timedelta(days=1)
    counts: dict[str, dict[str, tuple[int, int, int, int]]] = defaultdict(dict)
    if recent_only and all(
        (monitor_id, day) in made for monitor_id in monitor_ids for day in dates[:-2]
    ):
        for monitor_id in monitor_ids:
            earlier = counts[monitor_id]
            for day, day_text in zip(dates[:-2], day_texts[:-2], strict=True):
                earlier[day_text] = made[(monitor_id, day)][0]
    else:
        read_from = first
    for monitor_id, day_text, total, up, degraded, down in await repository.day_counts(
        monitor_ids, read_from.isoformat()
    ):
        counts[monitor_id][day_text] = (total, up, degraded, down)
    planned = await _maintenance(session, page, components, now)
    under_maintenance = {c for m in planned if m.active for c in m.componentIds}
    shown = []
    for component in components:
        # A large page builds in slices: visits to other pages go on between them.
        await asyncio.sleep(0)
        days = counts.get(component.monitor_id, {})
        bars = []
        period = [0, 0, 0]  # total, up, degraded over the 90 days
        for day, day_text in zip(dates, day_texts, strict=True):
            day_counts = days.get(day_text, _NO_CHECKS)
            total, up, degraded, down = day_counts
            period[0] += total
            period[1] += up
            period[2] += degraded
            key = (component.monitor_id, day)
            known = made.get(key)
            if known is None or known[0] != day_counts:
                # Built from our own counts: validating 1,800 of them on a 20-component page
                # would be a third of its build.
                bar = PublicDay.model_construct(
                    date=day,
                    uptimePercentage=rules.day_uptime(total, up, degraded),
                    status=rules.day_status(total, up, degraded, down),
                )
                known = made[key] = (day_counts, bar)
            bars.append(known[1])
        public_component = PublicComponent(
            id=component.id,
            name=component.name,
            description=component.description,
            # In maintenance whatever its checks say: no incident opens for it meanwhile.
            status="maintenance"
            if component.id in under_maintenance
            else monitor_component_status(monitors.get(component.monitor_id)),
            uptime90d=rules.day_uptime(*period),
            days=bars,
        )
        public_component._order = component.position
        shown.append(public_component)
    incidents = await _incidents(session, page, components, monitors, now)
    # Open incidents show on what they affect: their impact on their components, and on the
    # banner (a page with an open incident never says all is well).
    impacts: dict[str, list[rules.Impact]] = defaultdict(list)
    for incident in incidents:
        if incident.impact is not None:
            for component_id in incident.componentIds:
                impacts[component_id].append(incident.impact)
    for item in shown:
        if item.id in impacts:
            item.status = rules.with_incidents(item.status, impacts[item.id])
    message = (await repository.current_messages([page.id])).get(page.id)
    return PublicStatusPage(
        name=page.name,
        slug=page.slug,
        description=page.description,
        theme=page.theme,
        overallStatus=rules.overall_status(
            (c.status for c in shown), (i.impact for i in incidents if i.impact is not None)
        ),
        message=None
        if message is None
        else PublicMessage(
            message=message.message,
            componentIds=message.component_ids,
            createdAt=message.created_at,
        ),
        components=shown,
        incidents=incidents,
        maintenance=planned,
        groups=_groups((await repository.groups([page.id]))[page.id], components, shown),
        timeZone=page.time_zone,
        language=page.language,
        visitorLanguage=page.visitor_language,
        updatedAt=now,
    )


def _groups(
    groups: Sequence[StatusPageGroup],
    components: Sequence[StatusPageComponent],
    shown: Sequence[PublicComponent],
) -> list[PublicGroup]:
    """The page's groups that have members, each with its worst member's status; an empty
    group is the owner's work in progress, not something to show visitors."""
    statuses = {c.id: c.status for c in shown}
    members = members_of(components)
    return [
        PublicGroup(
            id=group.id,
            name=group.name,
            status=rules.group_status(statuses[m] for m in members[group.id]),
            componentIds=members[group.id],
            order=group.position,
        )
        for group in groups
        if members.get(group.id)
    ]


# How far ahead a page announces maintenance.
MAINTENANCE_AHEAD = timedelta(days=14)


async def _maintenance(
    session: AsyncSession,
    page: StatusPage,
    components: Sequence[StatusPageComponent],
    now: datetime,
) -> list[PublicMaintenance]:
    """Windows over the page's components that are on now or start within
    ``MAINTENANCE_AHEAD``: each window's current or next occurrence."""
    if not components:
        return []
    found = []
    for window, covers in await MaintenanceRepository(session).covering([page.project_id]):
        covered = [c.id for c in components if covers is None or c.monitor_id in covers]
        if not covered:
            continue
        schedule = schedule_of(window)
        current = occurrence_at(schedule, now)
        if current is None:
            start = next_start(schedule, now)
            if start is None or start > now + MAINTENANCE_AHEAD:
                continue
            current = (start, start + schedule.duration)
        found.append(
            PublicMaintenance(
                title=window.title,
                startsAt=current[0],
                endsAt=current[1],
                active=current[0] <= now,
                componentIds=covered,
            )
        )
    return sorted(found, key=lambda m: (m.startsAt, m.title))


async def _incidents(
    session: AsyncSession,
    page: StatusPage,
    components: Sequence[StatusPageComponent],
    monitors: dict[str, Monitor],
    now: datetime,
) -> list[PublicIncident]:
    by_monitor: dict[str, list[StatusPageComponent]] = defaultdict(list)
    for component in components:
        by_monitor[component.monitor_id].append(component)
    incidents = await StatusPageRepository(session).incidents(
        page.project_id, list(by_monitor), now - RESOLVED_INCIDENTS_SHOWN
    )
    own = {c.id: c for c in components}
    placed: dict[str, list[StatusPageComponent]] = {}
    for incident in incidents:
        # Its monitor's components and those it was placed on; an incident placed on the
        # page as a whole (or on nothing of it that still exists) affects none in particular.
        on = [*by_monitor.get(incident.monitor_id or "", [])]
        on += [own[i] for i in incident.component_ids if i in own and own[i] not in on]
        if on or page.id in incident.status_page_ids:
            placed[incident.id] = on
    incidents = [i for i in incidents if i.id in placed]
    timeline = await IncidentRepository(session).updates_of([i.id for i in incidents], public=True)
    shown = []
    # The status machine's own words, in the page's language (statuspages/rules.py).
    gettext = languages.translations(page.language).gettext
    for incident in incidents:
        on = placed[incident.id]
        names = ", ".join(c.name for c in on) or page.name
        monitor = monitors.get(incident.monitor_id or "")
        machine = automatic_title(monitor) if incident.automatic and monitor else None
        shown.append(
            PublicIncident(
                id=incident.id,
                title=rules.public_title(incident.title, machine, names, gettext),
                status=incident.status,
                severity=incident.severity,
                impact=None
                if incident.status == "resolved"
                else rules.incident_impact(incident.severity),
                componentIds=[c.id for c in on],
                startedAt=incident.started_at,
                resolvedAt=incident.resolved_at,
                updates=[
                    PublicIncidentUpdate(
                        status=u.status,
                        message=rules.public_update_words(
                            u.automatic, u.status, u.message, names, gettext
                        ),
                        createdAt=u.created_at,
                    )
                    for u in timeline[incident.id]
                ],
            )
        )
    return shown


async def change_marks(session: AsyncSession, page_id: str) -> tuple[Any, ...]:
    """A page's marks of change: equal marks, nothing a visitor must see at once has changed
    (the page, its components and their statuses, its project's incidents), whichever
    process changed it. Day bars and uptime figures are not in them: those may lag by one
    maximum age."""
    page, monitors, incidents = await StatusPageRepository(session).change_marks(page_id)
    if page is None:
        return ()
    statuses = tuple((c, monitor_component_status(m)) for c, m in monitors)
    return (page.updated_at, page.is_public, page.slug, statuses, incidents)


@dataclass(frozen=True)
class Snapshot:
    """One build of a public page in every form it is served in."""

    page_id: str
    page: PublicStatusPage
    json: bytes
    etag: str
    html: bytes
    rss: bytes
    atom: bytes
    custom_css: str
    custom_js: str
    custom_domain: str | None
    built_at: float  # monotonic seconds
    # ``Snapshots``' change count when its build began: what it read is no older.
    generation: int
    # ``change_marks`` read as its build began.
    marks: tuple[Any, ...] = ()
    # Response headers made for it, by form and origin (statuspages/serving.py).
    answers: dict[tuple[bool, str, str], Any] = field(default_factory=dict, compare=False)
    # Its HTML in the languages visitors asked for besides the page's (serving.html_in).
    localized: dict[str, bytes] = field(default_factory=dict, compare=False)
    # Who may read it (statuspages/access.py); checked on every route before any byte of it.
    gate: Gate = field(default_factory=Gate)


class Snapshots:
    """Snapshots by slug, each rebuilt after ``max_age`` seconds or a change, with who may
    read them (``Snapshot.gate``; every route checks it). One build
    at a time per slug: visitors arriving during a build wait for it instead of starting
    their own. Unknown slugs are not remembered (a flood of random slugs must not
    grow memory); each costs one indexed lookup."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        clock: Clock,
        max_age: float,
        public_url: str,
    ) -> None:
        self.sessions = sessions
        self.clock = clock
        self.max_age = max_age
        self.public_url = public_url
        self._pages: dict[str, Snapshot] = {}
        # Custom domain -> slug, learnt from builds: a flood on a page's own domain costs no
        # query either.
        self._domains: dict[str, str] = {}
        self._unknown_domains: dict[str, float] = {}
        self._building: dict[str, asyncio.Future[Snapshot | None]] = {}
        # Rebuilds of stale snapshots running beside the visits (held so none is collected).
        self._refreshing: set[asyncio.Task[Snapshot | None]] = set()
        # Looks at stale snapshots' marks of change in flight, and the slugs whose rebuild
        # runs because they moved (their visitors wait for it).
        self._looking: dict[str, asyncio.Future[bool]] = {}
        self._urgent: set[str] = set()
        self._bars: dict[str, DayBars] = {}
        self._read_all_at: dict[str, float] = {}
        # Counts changes, and the count at each page's last one: a snapshot whose build
        # began before its page's last change may show what that change undid (a page made
        # private), so it is neither kept nor served.
        self._changes = 0
        self._changed_at: dict[str, int] = {}
        self._forgotten = 0  # builds begun before this count predate a forgotten change
        self.builds = 0

    def changed(self, page_id: str) -> None:
        """The page, its components or its message changed (after commit)."""
        self._changes += 1
        if len(self._changed_at) > 100_000:
            self._changed_at.clear()
            self._forgotten = self._changes
        self._changed_at[page_id] = self._changes
        self._unknown_domains.clear()  # the change may have given a page its domain
        for slug, snapshot in list(self._pages.items()):
            if snapshot.page_id == page_id:
                del self._pages[slug]
                if snapshot.custom_domain is not None:
                    self._domains.pop(snapshot.custom_domain, None)

    async def for_domain(self, host: str) -> Snapshot | None:
        """The public page whose custom domain ``host`` is (any letter case, no port)."""
        domain = host.lower()
        slug = self._domains.get(domain)
        if slug is None:
            # A host no page has is remembered for the maximum age too: a flood of requests
            # with made-up Host headers costs one query per name and age, not one each.
            if time.monotonic() - self._unknown_domains.get(domain, -self.max_age) < self.max_age:
                return None
            async with self.sessions() as session:
                page = await StatusPageRepository(session).by_domain(domain)
            if page is None:
                if len(self._unknown_domains) > 100_000:
                    self._unknown_domains.clear()
                self._unknown_domains[domain] = time.monotonic()
                return None
            slug = page.slug
        snapshot = await self.get(slug)
        if snapshot is None or snapshot.custom_domain != domain:
            self._domains.pop(domain, None)
            return None
        return snapshot

    def _current(self, snapshot: Snapshot) -> bool:
        """No change to its page committed after its build began."""
        changed_at = max(self._forgotten, self._changed_at.get(snapshot.page_id, 0))
        return changed_at <= snapshot.generation

    async def get(self, slug: str) -> Snapshot | None:
        while True:
            snapshot = await self._get(slug)
            if snapshot is None or self._current(snapshot):
                return snapshot
            # Built before its page's last change (a build in flight then, whose waiters
            # resume after it, or one kept from before the counts were forgotten): built again.
            if self._pages.get(slug) is snapshot:
                del self._pages[slug]

    async def _get(self, slug: str) -> Snapshot | None:
        snapshot = self._pages.get(slug)
        if snapshot is not None:
            if time.monotonic() - snapshot.built_at < self.max_age:
                return snapshot
            if self.max_age > 0:
                return await self._stale(slug, snapshot)
        pending = self._building.get(slug)
        if pending is not None:
            return await asyncio.shield(pending)
        return await self._rebuild(slug, None, self._start(slug))

    async def _stale(self, slug: str, snapshot: Snapshot) -> Snapshot | None:
        """A snapshot past its maximum age. When its marks of change moved (a monitor's
        state or an incident, perhaps changed by another process during a quiet spell), the
        visitors wait for one rebuild: none is shown what changed more than a maximum age
        ago. Otherwise they keep getting it while one rebuild runs beside them. One look at
        the marks per page at a time, so a flood past the age costs one query and one build."""
        pending = self._building.get(slug)
        if pending is not None:
            return await asyncio.shield(pending) if slug in self._urgent else snapshot
        looking = self._looking.get(slug)
        if looking is None:
            looking = self._looking[slug] = asyncio.get_running_loop().create_future()
            moved = False
            try:
                async with self.sessions() as session:
                    moved = await change_marks(session, snapshot.page_id) != snapshot.marks
            except Exception as exc:
                # The database cannot answer: the rebuild below keeps the last snapshot.
                log.warning("status page %s: its marks of change unread: %s", slug, exc)
            finally:
                del self._looking[slug]
                looking.set_result(moved)
        else:
            moved = await asyncio.shield(looking)
        pending = self._building.get(slug)
        if moved:
            if pending is None:
                self._urgent.add(slug)
                try:
                    return await self._rebuild(slug, snapshot, self._start(slug))
                finally:
                    self._urgent.discard(slug)
            return await asyncio.shield(pending)
        if pending is None:
            # Registered before the task runs, so the visits until then start none.
            future = self._start(slug)
            task = asyncio.create_task(self._rebuild(slug, snapshot, future))
            self._refreshing.add(task)
            task.add_done_callback(self._refreshing.discard)
        return snapshot

    def _start(self, slug: str) -> asyncio.Future[Snapshot | None]:
        future: asyncio.Future[Snapshot | None] = asyncio.get_running_loop().create_future()
        self._building[slug] = future
        return future

    async def _rebuild(
        self, slug: str, stale: Snapshot | None, future: asyncio.Future[Snapshot | None]
    ) -> Snapshot | None:
        """Build ``slug`` once, whoever else asks meanwhile (``future`` is what they await).
        Without ``stale`` the caller waits for it (and its error); with it, a failure keeps
        the stale one."""
        try:
            built = await self._build(slug)
        except Exception as exc:
            if stale is None:
                future.set_exception(exc)
                future.exception()  # retrieved: waiters see it, nobody else must
                raise
            # The database cannot answer (an outage, a lock): the page visitors need most
            # right now is the last one built. Tried again after another maximum age.
            log.warning("status page %s served as built before: %s", slug, exc)
            built = replace(stale, built_at=time.monotonic())
            if self._pages.get(slug) is stale:
                self._pages[slug] = built
            future.set_result(built)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()
            raise
        else:
            future.set_result(built)
        finally:
            del self._building[slug]
        return built

    async def preview(self, session: AsyncSession, page: StatusPage) -> bytes:
        """``page`` as visitors would see it now, public or not, for its members (the
        console's preview): built each time, with the day bars this process keeps."""
        public = await self._public(session, page)
        return render.html(public, "", "")

    async def _public(self, session: AsyncSession, page: StatusPage) -> PublicStatusPage:
        if page.id not in self._bars and len(self._bars) > 10_000:
            self._bars.clear()  # pages deleted long ago leave their bars behind
            self._read_all_at.clear()
        bars = self._bars.setdefault(page.id, {})
        # Every day's counts again now and then; in between, today's and yesterday's.
        read_all = time.monotonic() - self._read_all_at.get(page.id, -FULL_READ_SECONDS)
        recent_only = read_all < FULL_READ_SECONDS
        public = await build(session, page, self.clock.now(), bars, recent_only=recent_only)
        if not recent_only:
            self._read_all_at[page.id] = time.monotonic()
        return public

    async def _build(self, slug: str) -> Snapshot | None:
        while True:
            snapshot = await self._build_once(slug)
            if snapshot is None or self._current(snapshot):
                break
            # The page changed while this build read it: read it again.
        if snapshot is not None:
            self._pages[slug] = snapshot
            if snapshot.custom_domain is not None:
                if len(self._domains) > 100_000:
                    self._domains.clear()
                self._domains[snapshot.custom_domain] = slug
        return snapshot

    async def _build_once(self, slug: str) -> Snapshot | None:
        generation = self._changes
        async with self.sessions() as session:
            page = await StatusPageRepository(session).by_slug(slug)
            if page is None:
                self._pages.pop(slug, None)
                return None
            # Read before the page: a change committed during the build moves them again.
            marks = await change_marks(session, page.id)
            public = await self._public(session, page)
        self.builds += 1
        body = public.model_dump_json().encode()
        # ``updatedAt`` is the last field: the tag covers everything before it.
        stamp = body.rfind(b',"updatedAt":')
        link = f"{self.public_url}/s/{slug}"
        # Weak: a rebuild that changed nothing but ``updatedAt`` keeps the tag, so a visitor's
        # browser keeps its copy.
        same = body[:stamp]
        snapshot = Snapshot(
            page_id=page.id,
            page=public,
            json=body,
            etag='W/"' + hashlib.blake2b(same, digest_size=12).hexdigest() + '"',
            html=render.html(public, page.custom_css, page.custom_js),
            rss=render.rss(public, link),
            atom=render.atom(public, link),
            custom_css=page.custom_css,
            custom_js=page.custom_js,
            custom_domain=page.custom_domain,
            built_at=time.monotonic(),
            generation=generation,
            marks=marks,
            gate=gate_of(page),
        )
        return snapshot


def gate_of(page: StatusPage) -> Gate:
    return Gate(page.project_id, page.visibility, page.password_hash, tuple(page.allowed_networks))
