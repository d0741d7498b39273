"""`serve(settings)`: run the recall service on uvicorn (`loci serve` calls it).

One process serves the app. More capacity: run several processes on the same data
directory (each one reads the shared inbox, so they see each other's writes on the next
request) behind any load balancer.
"""

from __future__ import annotations

import logging

import uvicorn

from online.app import create_app
from pipelines.settings import Settings


def serve(settings: Settings, *, log_level: str = "info") -> None:
    """Block serving HTTP on settings.host:settings.port until interrupted."""
    logging.basicConfig(level=getattr(logging, log_level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=log_level,
                timeout_graceful_shutdown=10)
