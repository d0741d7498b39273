"""The /ui pages under arbitrary input (hypothesis): any identity part, palace path, item id
or form value is answered with a page, 2xx/3xx or a 4xx that says what is wrong, never a
5xx; and every page shows only what the caller may see."""

from __future__ import annotations

import html
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qsl, quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar.testing import TestClient

import online
from online.controllers.ui import PAGE_SIZE
from tests.online.test_api import DANA, EVE, make_app, make_settings

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    app = make_app(make_settings(tmp_path_factory.mktemp("ui")))
    with TestClient(app) as test_client:
        yield test_client
    assert app.state.internal_errors == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(page=st.sampled_from(["/ui/", "/ui/palace", "/ui/conflicts", "/ui/quarantine", "/ui/items/m-latency"]),
       params=st.dictionaries(
           st.sampled_from(["user_id", "project_id", "session_id", "org_id", "path", "done", "page", "tz"]),
           st.one_of(TEXT, st.integers(-5, 10**7).map(str)), max_size=4))
def test_any_query_gets_a_page_never_a_5xx(client: TestClient, page: str, params: dict[str, str]) -> None:
    response = client.get(page, params=params)
    assert response.status_code < 500 and response.headers["content-type"].startswith("text/html")
    if response.status_code >= 400:
        assert 'id="error"' in response.text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(item_id=TEXT.filter(lambda s: s.strip()),
       form=st.dictionaries(st.sampled_from(["decision", "note", "extra"]), TEXT, max_size=3))
def test_any_review_post_is_a_4xx_page_unless_valid(client: TestClient, item_id: str, form: dict[str, str]) -> None:
    response = client.post(f"/ui/quarantine/{quote(item_id, safe='')}", params=DANA, data=form, follow_redirects=False)
    assert 400 <= response.status_code < 500, response.text[:300]  # nothing here is in quarantine


def test_pages_show_only_what_the_caller_may_see(client: TestClient) -> None:
    dana = client.get("/ui/palace", params={**DANA, "path": "atlas/performance/decision"}).text
    assert "Tile latency budget" in dana and "Borealis" not in dana
    assert client.get("/ui/palace", params=EVE).text.count("atlas") == 0
    assert client.get("/ui/items/m-latency", params=EVE).status_code == 404
    assert client.get("/ui/items/m-eve", params=EVE).status_code == 200


def test_pages_show_times_in_the_viewers_zone_and_keep_it_in_every_link(client: TestClient) -> None:
    utc = client.get("/ui/items/m-latency", params=DANA).text
    stamp = re.search(r"<dt>learned / updated</dt><dd>(\S+ \S+) /", utc).group(1)
    tokyo = f"{datetime.fromisoformat(stamp).replace(tzinfo=timezone.utc) + timedelta(hours=9):%Y-%m-%d %H:%M:%S}"
    for page in (client.get("/ui/items/m-latency", params={**DANA, "tz": "Asia/Tokyo"}).text,
                 client.get("/ui/items/m-latency", params=DANA, headers={"X-Loci-Timezone": "Asia/Tokyo"}).text):
        assert f"<dt>learned / updated</dt><dd>{tokyo} /" in page and 'id="zone">Asia/Tokyo' in page
    palace = client.get("/ui/palace", params={**DANA, "tz": "Asia/Tokyo"}).text
    links = re.findall(r'href="(/ui/[^"]*)"', palace)
    assert links and all("tz=Asia%2FTokyo" in html.unescape(link) for link in links), links
    bad = client.get("/ui/palace", params={**DANA, "tz": "Mars/Olympus"})
    assert bad.status_code == 400 and "Mars/Olympus" in html.unescape(bad.text)


def test_memory_text_is_escaped_in_pages(client: TestClient) -> None:
    body = client.post("/v1/tools", json={"action": "memory.write", "identity": DANA, "args": {"item": {
        "type": "note", "title": "<b>Markup</b> in a title", "content": "a <i>tag</i> & an ampersand"}}}).json()
    page = client.get(f"/ui/items/{body['result']['item_id']}", params=DANA).text
    assert "&lt;b&gt;Markup&lt;/b&gt;" in page and "a &lt;i&gt;tag&lt;/i&gt; &amp; an ampersand" in page
    assert "<b>Markup" not in page


def test_the_templates_ship_with_the_package() -> None:
    from online.app import TEMPLATES

    names = {p.name for p in (TEMPLATES / "ui").glob("*.html")}
    assert {"base.html", "home.html", "palace.html", "card.html", "conflicts.html", "quarantine.html",
            "error.html"} <= names
    assert TEMPLATES.parent == Path(online.__file__).parent  # inside the package: pyproject package-data


def test_long_lists_are_paged_and_every_entry_is_on_exactly_one_page(client: TestClient) -> None:
    who = {"user_id": "pat", "project_id": "pager"}
    titles = {f"Paged note {i:03d}" for i in range(PAGE_SIZE * 2 + 7)}
    for title in titles:
        r = client.post("/v1/tools", json={"action": "memory.write", "identity": who, "args": {"item": {
            "type": "note", "title": title, "content": f"{title}, written to fill the palace's unplaced list."}}})
        assert r.status_code == 200, r.text
    seen: list[str] = []
    url, params = "/ui/palace", dict(who)
    for expected_page in (1, 2, 3):
        page = client.get(url, params=params)
        assert page.status_code == 200 and f"page {expected_page} of 3 · {len(titles)} in all" in page.text
        seen += re.findall(r"Paged note \d{3}", page.text)
        nxt = re.search(r'id="next" href="\?([^"]+)"', page.text)
        if expected_page < 3:
            params = dict(parse_qsl(html.unescape(nxt.group(1))))
        else:
            assert nxt is None and 'id="prev"' in page.text
    assert sorted(seen) == sorted(titles)  # none twice, none missing
    past = client.get(url, params={**who, "page": "4"})
    assert past.status_code == 404 and "no page 4: there are 3" in past.text
    assert client.get(url, params={**who, "page": "0"}).status_code == 400
