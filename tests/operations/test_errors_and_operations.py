"""One error model on every path (contract §3) and the operations endpoints (contract §14)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Account, Cast, SignUp, assert_problem, lifespan, make_settings
from tests.factories import change_profile, change_settings, log_in
from upwatch.app import create_app
from upwatch.config import Settings
from upwatch.kit.metrics import Metrics

RATE_LIMIT = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")


async def test_an_unknown_route_is_a_404_problem(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/no/such/thing"), 404)


async def test_an_unsupported_method_is_a_405_problem(client: httpx.AsyncClient) -> None:
    assert_problem(await client.delete("/healthz"), 405)


@pytest.mark.parametrize("settings_overrides", [{"max_body_bytes": 1024}])
async def test_a_body_over_the_limit_is_a_413_problem(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/contact", content=b"{" + b" " * 4096 + b"}", headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 413)


@pytest.mark.parametrize("settings_overrides", [{"max_body_bytes": 1024}])
async def test_a_streamed_body_over_the_limit_is_a_413_problem(client: httpx.AsyncClient) -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(8):
            yield b" " * 512

    response = await client.post(
        "/contact", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 413)


async def test_an_unexpected_error_is_a_500_problem_without_internals(
    database_url: str, tmp_path: Path
) -> None:
    app = create_app(make_settings(database_url, tmp_path))

    @app.get("/explode")
    async def explode() -> None:
        raise RuntimeError("database password is hunter2")

    async with lifespan(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            response = await client.get("/explode")
    body = assert_problem(response, 500)
    assert "hunter2" not in response.text
    assert "Traceback" not in response.text
    assert body["title"] == "Internal server error"


async def test_healthz_and_readyz_answer(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).json() == {"status": "ready"}


async def test_readyz_is_a_503_when_the_database_is_unreachable(tmp_path: Path) -> None:
    settings = make_settings("postgresql://nobody@127.0.0.1:1/none", tmp_path)
    app = create_app(settings)
    async with lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            response = await client.get("/readyz")
    assert_problem(response, 503)


async def test_metrics_are_in_prometheus_text_format(client: httpx.AsyncClient) -> None:
    await client.get("/healthz")
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert 'upwatch_http_requests_total{method="GET",route="/healthz",status="200"}' in (
        response.text
    )
    assert "upwatch_http_request_duration_seconds_bucket" in response.text


def test_the_per_monitor_series_are_prometheus_text_its_own_parser_reads() -> None:
    # Written by Metrics itself, not by prometheus_client: what a scraper reads is checked.
    metrics = Metrics()
    metrics.monitor_checked("m-1", "p-1", "up", 12.5)
    metrics.monitor_checked("m-2", "p-1", "down", None)
    metrics.monitor_checked("m-3", "p-2", "pending", 3.0)
    metrics.monitor_checked("m-4", "p-2", "up", 1.0)
    metrics.monitor_gone("m-4")
    families = {f.name: f for f in text_string_to_metric_families(metrics.render().decode())}
    up = families["upwatch_monitor_up"]
    response = families["upwatch_monitor_response_seconds"]
    assert up.type == response.type == "gauge"
    assert {(s.labels["monitor"], s.labels["project"], s.value) for s in up.samples} == {
        ("m-1", "p-1", 1.0),
        ("m-2", "p-1", 0.0),
    }
    assert {(s.labels["monitor"], s.value) for s in response.samples} == {
        ("m-1", 0.0125),
        ("m-3", 0.003),
    }
    assert "upwatch_http_requests" in families


METRICS_TOKEN = "scrape-token-0123456789-ünïcode"


@pytest.mark.parametrize(
    "settings_overrides",
    [{"metrics_token": METRICS_TOKEN}, {"metrics_token": METRICS_TOKEN, "metrics_public": True}],
)
async def test_metrics_answer_only_the_bearer_token_when_one_is_set(
    client: httpx.AsyncClient,
) -> None:
    for headers in (
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": f"Bearer {METRICS_TOKEN[:-1]}".encode()},
        {"Authorization": "Basic c2NyYXBlOnRva2Vu"},
    ):
        response = await client.get("/metrics", headers=headers)
        problem = assert_problem(response, 401)
        assert "UPWATCH_METRICS_TOKEN" in problem["detail"]
        assert response.headers["WWW-Authenticate"] == "Bearer"
    raw = f"Bearer {METRICS_TOKEN}".encode()  # a client sends the token's UTF-8 bytes
    good = await client.get("/metrics", headers={"Authorization": raw})
    assert good.status_code == 200
    assert "upwatch_http_requests_total" in good.text


@pytest.mark.parametrize("settings_overrides", [{"metrics_public": False}])
async def test_metrics_are_refused_when_no_token_is_set_and_they_are_not_opened(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    # They list every tenant's monitors: closed unless the operator chooses otherwise.
    assert Settings.model_fields["metrics_public"].default is False
    assert Settings.model_fields["metrics_token"].default == ""
    alice = await sign_up("alice@example.com")
    for headers in ({}, {"Authorization": "Bearer anything"}, alice.headers):
        response = await client.get("/metrics", headers=headers)
        problem = assert_problem(response, 401)
        assert "UPWATCH_METRICS_TOKEN" in problem["detail"]
        assert "UPWATCH_METRICS_PUBLIC" in problem["detail"]
        assert response.headers["WWW-Authenticate"] == "Bearer"
        assert "upwatch_" not in response.text


@pytest.mark.parametrize("settings_overrides", [{"metrics_public": True}])
async def test_metrics_opened_by_the_operator_are_served_to_anyone_and_the_rule_is_documented(
    client: httpx.AsyncClient,
) -> None:
    for headers in ({}, {"Authorization": "Bearer anything"}):
        response = await client.get("/metrics", headers=headers)
        assert response.status_code == 200
        assert "upwatch_http_requests_total" in response.text
    document = (await client.get("/openapi.json")).json()
    operation = document["paths"]["/metrics"]["get"]
    assert "UPWATCH_METRICS_TOKEN" in operation["description"]
    assert "UPWATCH_METRICS_PUBLIC" in operation["description"]
    assert "application/problem+json" in operation["responses"]["401"]["content"]


async def test_lists_declare_x_total_count_and_token_requests_the_ratelimit_headers(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    document = (await client.get("/openapi.json")).json()
    declared = document["components"]["headers"]
    listing = document["paths"]["/monitors"]["get"]["responses"]
    assert set(listing["200"]["headers"]) == {"X-Total-Count", *RATE_LIMIT}
    assert set(listing["429"]["headers"]) == set(RATE_LIMIT)
    public = document["paths"]["/status-pages/public/slug/{slug}"]["get"]["responses"]["200"]
    assert "headers" not in public
    # What is declared is what is sent.
    answered = await client.get("/monitors", headers=cast.alice.headers)
    for name in ("X-Total-Count", *RATE_LIMIT):
        assert re.fullmatch(declared[name]["schema"]["pattern"], answered.headers[name]), name


async def test_the_openapi_document_declares_the_bearer_and_api_key_schemes(
    client: httpx.AsyncClient,
) -> None:
    document = (await client.get("/openapi.json")).json()
    schemes = document["components"]["securitySchemes"]
    assert {k: v for k, v in schemes["bearer"].items() if k != "description"} == {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
    }
    assert (schemes["apiKey"]["scheme"], schemes["apiKey"]["bearerFormat"]) == (
        "bearer",
        "upw_...",
    )
    # A person's route names the access token alone; a project route takes a key too.
    operation = document["paths"]["/users/me"]["get"]
    assert operation["security"] == [{"bearer": []}]
    monitors = document["paths"]["/monitors"]["get"]
    assert monitors["security"] == [{"bearer": []}, {"apiKey": []}]
    assert "application/problem+json" in operation["responses"]["401"]["content"]
    docs = await client.get("/docs")
    assert docs.status_code == 200
    assert "swagger" in docs.text.lower()


async def test_nul_characters_in_a_body_are_a_422_not_a_database_error(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    login = await log_in(client, "a\x00@example.com", "x")
    assert_problem(login, 422)
    contact = await client.post(
        "/contact",
        json={"name": "Da\x00na", "email": "d@example.com", "subject": "s", "message": "m"},
    )
    assert_problem(contact, 422)
    alice = await sign_up("alice@example.com")
    profile = await change_profile(client, alice, firstName="A\x00")
    assert_problem(profile, 422)


async def test_nul_characters_inside_config_objects_are_a_422_naming_the_field(
    client: httpx.AsyncClient, alice: Account
) -> None:
    # The settings' *Config objects were free-form (stored as given); they are personal
    # channels now, checked like provider configs, whose strings refuse NUL.
    response = await change_settings(
        client, alice, webhookConfig={"url": "https://hooks.example.com/x", "secret": "a\x00b"}
    )
    problem = assert_problem(response, 422)
    assert [e["field"] for e in problem["errors"]] == ["webhookConfig.secret"]


@pytest.mark.parametrize("url", ["/contact/ab%00cd", "/admin/users?limit=1%00"])
async def test_nul_characters_in_the_url_are_a_400(client: httpx.AsyncClient, url: str) -> None:
    assert_problem(await client.patch(url) if "contact" in url else await client.get(url), 400)


async def test_every_authenticated_operation_documents_401_and_429(
    client: httpx.AsyncClient,
) -> None:
    document = (await client.get("/openapi.json")).json()
    undocumented = [
        (method, path)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if operation.get("security") and not {"401", "429"} <= set(operation["responses"])
    ]
    assert undocumented == []
