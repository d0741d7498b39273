"""What warming a snapshot's corpus computes, computed once per snapshot and code, read by
every other worker and replica.

`MemoryCorpus.warm` (BM25 index, claim table, partner flags, raw-turn flags, audience codes)
took ~430 s of one worker at 100k items on a loaded machine, and every worker of every
replica paid it again at each start and hot-swap. `WarmCache.warmed` keeps its result beside
the published versions (`<snapshots>/.warm/<version>-<code>.warm`, written atomically): the
first process to load a version computes it and writes it, holding a lock file meanwhile, so
a second worker starting at the same time waits for it and reads it instead of computing.

The file is the corpus's `warm_state` pickled with the items left out (each named by its row,
`persistent_id`: the reader has the same items from the snapshot) under a header with its
format, the snapshot version, the code fingerprint (`code_fingerprint`: the sources of the
modules warming runs, not all of `pipelines`) and a sha256 of the payload. Anything
that does not match (another code version, a truncated or corrupt file, an older format)
is ignored and rebuilt, so a snapshot without a cache file, or with a stale one, loads as
before. The file is trusted as the snapshot's own files are (the FAISS index is read from
the same folder): it lives in the shared snapshots folder only the consolidation and the
replicas write.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import io
import logging
import os
import pickle
import sys
import time
from collections.abc import Sequence
from contextlib import contextmanager
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from pipelines.recall.corpus import MemoryCorpus
from pipelines.records import MemoryItem
from pipelines.snapshot import list_versions

log = logging.getLogger("loci.online")

WARM_DIR = ".warm"
WARM_FORMAT = 1
MAGIC = b"LOCI-WARM"
CODE_ROOT = Path(__file__).resolve().parents[1]
# The code whose output the file holds: `MemoryCorpus.warm` and every module it imports,
# directly or not (`code_modules`), and this file (how the state is written and read). A
# change anywhere else in `pipelines` (the engine, the consolidation) keeps the file: it used
# to be keyed on all of `pipelines`, and every unrelated edit cost ~70 CPU-s per 100k items
# at the next start.
WARM_CODE = ("pipelines.recall.corpus", "online.warm_cache")
LIBRARIES = ("bm25s", "numpy", "scipy", "faiss-cpu", "PyStemmer", "simplemma", "msgspec")


def _module_file(name: str) -> Path | None:
    """The source of the project module `name` (a package: its `__init__.py`), or None for
    a module outside `CODE_ROOT` (a library: `LIBRARIES` versions it)."""
    base = CODE_ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imported(path: Path, name: str) -> set[str]:
    """The modules `path` (module `name`) imports anywhere in its body, function-level
    imports included; `from package import name` counts the submodule when there is one."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                source = f"{anchor}.{node.module}" if node.module else anchor
            else:
                source = node.module or ""
            found.add(source)
            found.update(f"{source}.{alias.name}" for alias in node.names)  # kept if a module
    return found


def code_modules(roots: Sequence[str] = WARM_CODE) -> dict[str, Path]:
    """The project modules `roots` import, transitively, by name (the roots included).
    Statically, from their `import` statements: a package's `__init__.py` counts where it is
    imported by name (`from pipelines.recall.conflicts import ...`), not as the parent of a
    module imported from it (the project's `__init__` files only re-export, and
    `pipelines/recall/__init__.py` imports the whole engine)."""
    seen: dict[str, Path] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:
            continue
        seen[name] = path
        pending.extend(_imported(path, name))
    return dict(sorted(seen.items()))


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the sources of the code the warm state is made and read by
    (`code_modules`), the versions of the libraries it is made with, the Python version and
    `WARM_FORMAT`: a file made by other code is not read."""
    digest = hashlib.sha256(f"{WARM_FORMAT}\x1f{sys.version_info[:2]}".encode())
    for name in LIBRARIES:
        try:
            digest.update(f"{name}={metadata.version(name)}\x1f".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name}=-\x1f".encode())
    for name, path in code_modules().items():
        digest.update(name.encode() + b"\x1f" + path.read_bytes() + b"\x1f")
    return digest.hexdigest()[:16]


def _faiss_index(data: np.ndarray) -> Any:
    return faiss.deserialize_index(data)


def _stemmer(language: str) -> Any:
    import Stemmer

    return Stemmer.Stemmer(language)


class _Pickler(pickle.Pickler):
    """Items by row (the reader has them), FAISS indexes and stemmers by value."""

    def __init__(self, file: io.BytesIO, rows: dict[int, int]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._rows = rows

    def persistent_id(self, obj: Any) -> int | None:
        return self._rows.get(id(obj)) if type(obj) is MemoryItem else None

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, faiss.Index):
            return _faiss_index, (faiss.serialize_index(obj),)
        if type(obj).__module__ == "Stemmer" and type(obj).__name__ == "Stemmer":
            return _stemmer, ("english",)
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, items: tuple[MemoryItem, ...]) -> None:
        super().__init__(file)
        self._items = items

    def persistent_load(self, pid: Any) -> MemoryItem:
        return self._items[int(pid)]


def dumps(corpus: MemoryCorpus) -> bytes:
    """`corpus.warm_state()` pickled, its items named by row."""
    buffer = io.BytesIO()
    _Pickler(buffer, {id(item): row for row, item in enumerate(corpus.items)}).dump(corpus.warm_state())
    return buffer.getvalue()


def loads(corpus: MemoryCorpus, payload: bytes) -> MemoryCorpus:
    return corpus.restore_warm(_Unpickler(io.BytesIO(payload), corpus.items).load())


class WarmCache:
    """The warm states of the versions under a snapshots root (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.folder = self.root / WARM_DIR

    def path(self, version: str) -> Path:
        return self.folder / f"{version}-{code_fingerprint()}.warm"

    def header(self, version: str, n: int, digest: str) -> bytes:
        return f"{MAGIC.decode()} {WARM_FORMAT} {version} {code_fingerprint()} {n} {digest}\n".encode()

    def warmed(self, corpus: MemoryCorpus, version: str) -> tuple[MemoryCorpus, str]:
        """`corpus` (the items of `version`) warmed, and how: "read" from the cache, or
        "computed" (then written for the others)."""
        path = self.path(version)
        if self._read(corpus, version, path):
            return corpus, "read"
        with self._lock(path):  # a worker computing it now: wait, then read its file
            if self._read(corpus, version, path):
                return corpus, "read"
            corpus.warm()
            self._write(corpus, version, path)
        return corpus, "computed"

    def _read(self, corpus: MemoryCorpus, version: str, path: Path) -> bool:
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return False
        except OSError as exc:
            log.warning("warm cache %s unreadable (%s); computing", path, exc)
            return False
        header, _, payload = blob.partition(b"\n")
        expected = self.header(version, corpus.n, hashlib.sha256(payload).hexdigest())
        if header + b"\n" != expected:
            log.warning("warm cache %s does not match snapshot %s (corrupt or other code); rebuilding",
                        path, version)
            return False
        try:
            loads(corpus, payload)
        except Exception as exc:  # noqa: BLE001 - a cache: anything wrong with it means compute instead
            log.warning("warm cache %s unreadable (%s); rebuilding", path, exc)
            return False
        return True

    def _write(self, corpus: MemoryCorpus, version: str, path: Path) -> None:
        try:
            payload = dumps(corpus)
            self.folder.mkdir(exist_ok=True)
            tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
            with open(tmp, "wb") as out:
                out.write(self.header(version, corpus.n, hashlib.sha256(payload).hexdigest()))
                out.write(payload)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
            self._prune()
        except Exception as exc:  # noqa: BLE001 - never fails a load: the next process computes it
            log.warning("could not write the warm cache %s: %s", path, exc)

    def _prune(self) -> None:
        """Drop the files of versions no longer published and of other code."""
        keep = {self.path(v).name for v in list_versions(self.root)}
        for old in [*self.folder.glob("*.warm"), *self.folder.glob("*.lock")]:
            if old.with_suffix(".warm").name not in keep:
                old.unlink(missing_ok=True)

    @contextmanager
    def _lock(self, path: Path):
        lock = None
        try:
            self.folder.mkdir(exist_ok=True)
            lock = open(path.with_suffix(".lock"), "a")
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError as exc:  # a read-only or lock-less folder: compute without sharing
            log.warning("warm cache lock %s unavailable (%s)", path, exc)
        started = time.monotonic()
        try:
            yield
        finally:
            if lock is not None:
                lock.close()  # releases the lock
            log.debug("warm cache %s held %.1f s", path, time.monotonic() - started)
