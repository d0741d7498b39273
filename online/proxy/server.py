"""`serve_proxy(settings)`: run the Ollama proxy on uvicorn (settings.host:settings.proxy_port,
default 127.0.0.1:11435), forwarding to settings.ollama_host (OLLAMA_HOST honoured). Flags
flipped in the config file (`loci flags ...`) apply without a restart."""

from __future__ import annotations

import logging
from pathlib import Path

import uvicorn

from online.proxy.app import create_proxy_app
from online.proxy.config import ProxyConfig
from pipelines.settings import Settings, config_path


def serve_proxy(settings: Settings, *, config: ProxyConfig | None = None, upstream: str | None = None,
                log_level: str = "info", flags_file: str | Path | None = None) -> None:
    """Block serving the proxy until interrupted; `flags_file` (default: the config file,
    LOCI_CONFIG or ./loci.toml) is watched for flipped flags."""
    logging.basicConfig(level=getattr(logging, log_level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_proxy_app(settings, config=config, upstream=upstream, flags_file=flags_file or config_path())
    uvicorn.run(app, host=settings.host, port=settings.proxy_port, log_level=log_level,
                timeout_graceful_shutdown=10)
