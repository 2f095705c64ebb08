"""What a browser meets outside the console's pages: ``/`` leads into the console, and an
unknown console address is an HTML page with the navigation; API clients keep the JSON 404."""

from __future__ import annotations

import httpx

from tests.conftest import Cast
from tests.console.forms import signed_in

BROWSER = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


async def test_a_browser_at_the_root_is_led_to_the_console(client: httpx.AsyncClient) -> None:
    answer = await client.get("/", headers=BROWSER)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/app"


async def test_an_api_client_at_the_root_still_gets_a_problem_document(
    client: httpx.AsyncClient,
) -> None:
    answer = await client.get("/", headers={"accept": "application/json"})
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("application/problem+json")


async def test_an_unknown_console_address_is_an_html_page_with_the_navigation(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    signed_out = await client.get("/app/no-such-page", headers=BROWSER)
    assert signed_out.status_code == 404
    assert signed_out.headers["content-type"].startswith("text/html")
    assert "There is no such page in the console." in signed_out.text
    await signed_in(client, cast.alice.email)
    signed = await client.get("/app/monitors/x/y/z", headers=BROWSER)
    assert signed.status_code == 404
    assert 'aria-label="Main"' in signed.text
    assert cast.alice.email in signed.text
