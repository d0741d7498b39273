"""A drop-in Ollama proxy with Loci's memory: memory on top of Ollama as a proxy wrapper,
without modifying Ollama.

Point any Ollama client (the official Python and JavaScript clients, Open WebUI, curl), or
any OpenAI client (base URL `http://127.0.0.1:11435/v1`), at the proxy instead of Ollama and
it gets memory: recalled context injected before each chat or generate call, memory
proposals stripped from the answer and landed (governed) in the inbox, recall requests
answered from memory, and a pre-return Q* catalog in the final JSON object's `loci` field.
Every other Ollama endpoint is forwarded unchanged.

    from online.proxy import create_proxy_app, serve_proxy
    serve_proxy(load_settings())        # 127.0.0.1:11435 -> settings.ollama_host

Modules: `app` (Litestar app, streaming), `handlers` (the memory path, streamed or not),
`exchange` (the memory hooks of one request, its round state), `tool_calls` (Loci's memory.*
calls run for the model), `search_block` (a search's READ-ONLY block), `turns` (landing the
turns, the pre-return catalog), `shown` (what the user sees), `dialects` (/api/chat vs /api/generate),
`openai_chat` (/v1/chat/completions), `upstream` (httpx client and errors), `identity`
(X-Loci-* headers), `memory_tools` (memory.* tool definitions), `reset` (`!reset`
summarising), `config` (ProxyConfig and flags), `server` (uvicorn).
"""

from online.proxy.app import create_proxy_app
from online.proxy.config import ProxyConfig
from online.proxy.server import serve_proxy

__all__ = ["ProxyConfig", "create_proxy_app", "serve_proxy"]
