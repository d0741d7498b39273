"""A version's files on disk: written durably (fsynced) and hashed on the way, read back
only after their size and sha256 match the manifest."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import faiss
import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.records import utcnow
from pipelines.snapshot.layout import (
    CURRENT_FILE,
    MANIFEST_FILE,
    READABLE_FORMATS,
    FileEntry,
    SnapshotError,
    SnapshotManifest,
    required_files,
)
from pipelines.snapshot.versions import new_version

IO_CHUNK = 1 << 22  # bytes per read/write call when an index is streamed through a hash


def sha256(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def write_durable(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def fsync_dir(path: Path) -> None:
    if os.name != "posix":  # directories cannot be fsynced on Windows
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def parquet_bytes(table: pa.Table, **options: Any) -> bytes:
    """`table` as a zstd-compressed Parquet file (`options`: `pq.write_table`'s)."""
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", **options)
    return buf.getvalue()


def write_index(index: Any, path: Path) -> FileEntry:
    """Write a FAISS index to `path` (fsynced), hashing it on the way: no serialized copy of
    a 200 MB index is made in memory, and the file is not read back to be hashed."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "wb") as fh:
        def sink(chunk: bytes) -> int:
            nonlocal size
            digest.update(chunk)
            fh.write(chunk)
            size += len(chunk)
            return len(chunk)

        writer = faiss.PyCallbackIOWriter(sink, IO_CHUNK)
        faiss.write_index(index, writer)
        del writer  # flushes its last chunk
        fh.flush()
        os.fsync(fh.fileno())
    return FileEntry(sha256=digest.hexdigest(), bytes=size)


def write_version(root: Path, indexes: dict[str, Any], blobs: dict[str, bytes],
                  links: dict[str, tuple[Path, FileEntry]], fields: dict[str, Any]) -> SnapshotManifest:
    """Write a new version folder (the `indexes`, `blobs`, hard links to the published files in
    `links`, then the manifest: `fields` plus version, time and files) under a temporary name,
    fsync it, rename it into place and make it CURRENT. The version name hashes every file's
    checksum, the embedder and the watermark. A file system without hard links gets copies."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".tmp-{uuid.uuid4().hex}"
    try:
        tmp.mkdir()
        files = {name: write_index(index, tmp / name) for name, index in indexes.items()}
        for name, data in blobs.items():
            write_durable(tmp / name, data)
            files[name] = FileEntry(sha256=sha256(data), bytes=len(data))
        for name, (source, entry) in links.items():
            try:
                os.link(source, tmp / name)
            except OSError:
                shutil.copyfile(source, tmp / name)
                with open(tmp / name, "rb+") as fh:
                    os.fsync(fh.fileno())
            files[name] = entry
        files = dict(sorted(files.items()))
        salt = f"{fields['embedder']}{fields['watermark']}"
        version = new_version(root, sha256(("".join(f"{n}{e.sha256}" for n, e in files.items()) + salt).encode()))
        manifest = SnapshotManifest(version=version, created_at=utcnow(), files=files, **fields)
        write_durable(tmp / MANIFEST_FILE, msgspec.json.format(msgspec.json.encode(manifest)))
        fsync_dir(tmp)
        os.rename(tmp, root / version)
        fsync_dir(root)
        pointer = root / f"{CURRENT_FILE}.tmp-{version}"
        write_durable(pointer, f"{version}\n".encode())
        os.replace(pointer, root / CURRENT_FILE)
        fsync_dir(root)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SnapshotError(f"could not publish a snapshot under {root}: {exc}") from exc
    return manifest


@contextlib.contextmanager
def _listed_file(path: Path, entry: FileEntry) -> Iterator[None]:
    """Checks `path`'s size against its manifest entry before the block reads it; a file
    missing or unreadable (here or in the block) is a SnapshotError."""
    try:
        size = path.stat().st_size
        if size != entry.bytes:
            state = "truncated" if size < entry.bytes else "oversized"
            raise SnapshotError(f"{path} {state}: {size} bytes, manifest says {entry.bytes}")
        yield
    except FileNotFoundError:
        raise SnapshotError(f"{path} missing") from None
    except OSError as exc:
        raise SnapshotError(f"{path} unreadable: {exc}") from exc


def _check_digest(path: Path, digest: str, entry: FileEntry) -> None:
    if digest != entry.sha256:
        raise SnapshotError(f"{path} checksum mismatch (corrupt): sha256 differs from manifest")


def read_index_checked(folder: Path, name: str, entry: FileEntry) -> Any:
    """A FAISS index read into memory (writable), hashed on the way and checked against the
    manifest: the file is read once. Raises SnapshotError."""
    path = folder / name
    digest = hashlib.sha256()
    with _listed_file(path, entry), open(path, "rb") as fh:
        def source(n: int) -> bytes:
            data = fh.read(n)
            digest.update(data)
            return data

        reader = faiss.PyCallbackIOReader(source, IO_CHUNK)
        try:
            index = faiss.read_index(reader)
        except RuntimeError as exc:
            raise SnapshotError(f"{path} corrupt: {exc}") from exc
        finally:
            del reader
        digest.update(fh.read())  # whatever the reader did not ask for still counts
    _check_digest(path, digest.hexdigest(), entry)
    return index


def checked_path(folder: Path, name: str, entry: FileEntry) -> Path:
    """`folder/name` after checking its size and sha256 against the manifest, streamed (the
    file is not copied into memory: it is memory-mapped next)."""
    path = folder / name
    with _listed_file(path, entry), path.open("rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    _check_digest(path, digest, entry)
    return path


def read_manifest(folder: Path, version: str) -> SnapshotManifest:
    path = folder / MANIFEST_FILE
    if not folder.is_dir():
        raise SnapshotError(f"snapshot {version} missing: no folder {folder}")
    try:
        manifest = msgspec.json.decode(path.read_bytes(), type=SnapshotManifest)
    except FileNotFoundError:
        raise SnapshotError(f"snapshot {version} has no {MANIFEST_FILE} (incomplete)") from None
    except (OSError, msgspec.DecodeError) as exc:
        raise SnapshotError(f"{path} corrupt: {exc}") from exc
    if manifest.version != version:
        raise SnapshotError(f"{path} names version {manifest.version!r}, folder is {version!r}")
    if manifest.format not in READABLE_FORMATS:
        raise SnapshotError(f"{path} has format {manifest.format}, this code reads {list(READABLE_FORMATS)}")
    for name in required_files(manifest):
        if name not in manifest.files:
            raise SnapshotError(f"{path} lists no checksum for {name}")
    return manifest
