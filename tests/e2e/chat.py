"""What the e2e scenarios do between turns, in one place: run a consolidation the way the
scheduled job does and have the service load what it published, and read a browser page's
text as a person does."""

from __future__ import annotations

import html
import re

from litestar.testing import TestClient

from pipelines.consolidate import consolidate_once


def consolidate(client: TestClient, settings) -> None:
    """Flush the recalls' usage events (they go into this run), consolidate, reload the snapshot."""
    assert client.app.state.service.usage.flush()
    consolidate_once(settings)
    assert client.post("/v1/admin/reload").status_code == 200


def page_text(page: str) -> str:
    """A page's text as a reader sees it: no tags, one space between words."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
