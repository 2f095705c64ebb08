"""SLA and statistics reports of a monitor and of a project, with their CSV download.

The figures come from the API's own handlers (called as functions, so the console shows what
``GET /monitors/{id}/sla`` and ``/stats`` answer), read with the API's query parameters."""

from __future__ import annotations

import csv
import io
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.kit.errors import ProblemError
from upwatch.kit.languages import N_
from upwatch.monitors.endpoints import (
    ApdexT,
    SlaFrom,
    SlaQuery,
    SlaTarget,
    SlaTo,
    monitor_sla,
    monitor_stats,
    project_sla,
    sla_query,
)
from upwatch.monitors.repository import MonitorRepository
from upwatch.monitors.schemas import Period, SlaOut, StatsOut
from upwatch.monitors.service import MonitorService
from upwatch.projects.service import ProjectService

router = APIRouter(prefix="/app")


class ReportQuery(BaseModel):
    """The query of a report page: the API's parameters of the stats and SLA operations."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    period: Period = "24h"
    from_: SlaFrom = None
    to: SlaTo = None
    target: SlaTarget = 99.9
    apdex_t: Annotated[ApdexT, Field(alias="apdexT")] = 500

    def sla_args(self, page: Page, csv_wanted: bool = False) -> SlaQuery:
        return sla_query(
            page.runtime,
            self.from_,
            self.to,
            self.target,
            self.apdex_t,
            "csv" if csv_wanted else "json",
        )


def asked(page: Page) -> dict[str, str]:
    """The report form's fields as sent; an empty one counts as left out."""
    return {k: v for k, v in page.request.query_params.items() if v}


def csv_of(out: BaseModel, name: str) -> Response:
    """One row of ``out``'s fields: the statistics, for which the API has no CSV form."""
    figures = out.model_dump(mode="json", by_alias=True)
    sheet = io.StringIO()
    rows = csv.writer(sheet, lineterminator="\r\n")
    rows.writerow(figures)
    rows.writerow("" if v is None else v for v in figures.values())
    return Response(
        sheet.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
    )


async def _monitor_figures(
    page: Page, monitor_id: str, query: ReportQuery
) -> tuple[StatsOut, SlaOut | Response]:
    stats = await monitor_stats(
        monitor_id, page.user, MonitorService(page.session, page.runtime), query.period
    )
    sla = await monitor_sla(monitor_id, query.sla_args(page), page.user, page.session, page.runtime)
    return stats, sla


@router.get("/monitors/{monitor_id}/report", openapi_extra=offers("monitorStats", "monitorSla"))
async def monitor_report(monitor_id: str, page: SignedInPage) -> Response:
    form = asked(page)
    monitor = await _visible_monitor(page, monitor_id)
    context: dict[str, Any] = {"stats": None, "sla": None}
    status, errors = 200, dict[str, str]()
    try:
        query = ReportQuery.model_validate(form)
        context["stats"], context["sla"] = await _monitor_figures(page, monitor_id, query)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("monitor"))
    return page.html(
        "report.html",
        status,
        title=page.gettext("Report of %(name)s") % {"name": monitor.name},
        section="monitors",
        action=f"/app/monitors/{monitor_id}/report",
        back=(f"/app/monitors/{monitor_id}", monitor.name),
        with_period=True,
        sla_csv=f"/app/monitors/{monitor_id}/report/sla.csv",
        csv_query=urlencode(form),
        form=form,
        errors=errors,
        **context,
    )


async def _visible_monitor(page: Page, monitor_id: str) -> Any:
    try:
        return await MonitorRepository(page.session).get_visible(page.user, monitor_id)
    except ProblemError:
        page.not_found(N_("monitor"))


@router.get("/monitors/{monitor_id}/report/sla.csv", openapi_extra=offers("monitorSla"))
async def monitor_sla_csv(monitor_id: str, page: SignedInPage) -> Response:
    try:
        query = ReportQuery.model_validate(asked(page))
        args = query.sla_args(page, csv_wanted=True)
        sheet = await monitor_sla(monitor_id, args, page.user, page.session, page.runtime)
    except (ProblemError, ValidationError) as exc:
        return _no_csv(page, exc, N_("monitor"))
    assert isinstance(sheet, Response)
    return sheet


@router.get("/monitors/{monitor_id}/report/stats.csv", openapi_extra=offers("monitorStats"))
async def monitor_stats_csv(monitor_id: str, page: SignedInPage) -> Response:
    try:
        query = ReportQuery.model_validate(asked(page))
        service = MonitorService(page.session, page.runtime)
        stats = await monitor_stats(monitor_id, page.user, service, query.period)
    except (ProblemError, ValidationError) as exc:
        return _no_csv(page, exc, N_("monitor"))
    return csv_of(stats, f"stats-{monitor_id}-{query.period}")


def _no_csv(page: Page, exc: ProblemError | ValidationError, what: str) -> Response:
    """The error page of a refused download (``what``: a noun marked with ``N_``)."""
    status, errors = page.refused(exc, what)
    detail = "; ".join(f"{k}: {v}" if k else v for k, v in errors.items())
    title = page.gettext("No report for that period")
    return page.html("error.html", status, title=title, detail=detail)


@router.get("/projects/{project_id}/sla", openapi_extra=offers("projectSla"))
async def project_report(project_id: str, page: SignedInPage) -> Response:
    form = asked(page)
    try:
        access = await ProjectService(page.session, page.runtime).visible(page.user, project_id)
    except ProblemError:
        page.not_found(N_("project"))
    sla: SlaOut | Response | None = None
    status, errors = 200, dict[str, str]()
    try:
        query = ReportQuery.model_validate(form)
        sla = await project_sla(
            project_id, query.sla_args(page), page.user, page.session, page.runtime
        )
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("project"))
    return page.html(
        "report.html",
        status,
        title=page.gettext("SLA of %(name)s") % {"name": access.project.name},
        section="projects",
        action=f"/app/projects/{project_id}/sla",
        back=(f"/app/projects/{project_id}", access.project.name),
        with_period=False,
        sla_csv=f"/app/projects/{project_id}/sla.csv",
        csv_query=urlencode(form),
        form=form,
        errors=errors,
        stats=None,
        sla=sla,
    )


@router.get("/projects/{project_id}/sla.csv", openapi_extra=offers("projectSla"))
async def project_sla_csv(project_id: str, page: SignedInPage) -> Response:
    try:
        query = ReportQuery.model_validate(asked(page))
        args = query.sla_args(page, csv_wanted=True)
        sheet = await project_sla(project_id, args, page.user, page.session, page.runtime)
    except (ProblemError, ValidationError) as exc:
        return _no_csv(page, exc, N_("project"))
    assert isinstance(sheet, Response)
    return sheet
