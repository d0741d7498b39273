"""The warm-state file is keyed on the code that makes and reads it, not on all of
`pipelines`: an edit to the engine keeps a 100k store's file (~70 CPU-s to rebuild), an edit
to anything `MemoryCorpus.warm` runs does not."""

from __future__ import annotations

from pathlib import Path

from online import warm_cache
from online.warm_cache import code_modules


def test_the_key_covers_what_warming_runs_and_not_the_engine() -> None:
    modules = code_modules()
    for needed in ("pipelines.recall.corpus", "pipelines.recall.lexical", "pipelines.recall.conflicts.table",
                   "pipelines.message_context", "pipelines.records", "online.warm_cache"):
        assert needed in modules
    for other in ("pipelines.recall.engine", "pipelines.recall.qstar", "pipelines.embedders.minilm",
                  "pipelines.consolidate", "online.state"):
        assert other not in modules


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_imports_are_followed_relative_absolute_and_inside_functions(tmp_path, monkeypatch) -> None:
    _tree(tmp_path, {
        "pkg/__init__.py": "from .big import everything\n",
        "pkg/big.py": "",
        "pkg/sub/__init__.py": "",
        "pkg/sub/root.py": "import json\nfrom . import sibling\nfrom ..helpers import h\n"
                           "def later():\n    from pkg.lazy import x\n",
        "pkg/sub/sibling.py": "",
        "pkg/helpers.py": "from pkg.sub import deep\n",
        "pkg/sub/deep.py": "",
        "pkg/lazy.py": "",
        "pkg/unrelated.py": "",
    })
    monkeypatch.setattr(warm_cache, "CODE_ROOT", tmp_path)
    found = code_modules(("pkg.sub.root",))
    # `from pkg.sub import deep` counts pkg/sub/__init__.py (imported by name) and deep; the
    # parent `pkg/__init__.py` (and what it imports) is not followed
    assert set(found) == {"pkg.sub.root", "pkg.sub.sibling", "pkg.helpers", "pkg.sub", "pkg.sub.deep", "pkg.lazy"}
