"""STM clustering: HDBSCAN over embeddings, per owner partition and type family.

Short-term memory is clustered coarse first (by owner and type), then fine (by vector
distance):

- coarse: items are grouped by owner partition (`Scope.partition_key()`, so nothing ever
  merges across owners) and by type family (`TYPE_FAMILIES`: a `message` never merges with
  a `decision`). Tags are not a hard split: model-proposed tags are noisy (two proposals of
  the same fact often carry different tags); tag agreement counts in the merge confidence
  (Jaccard overlap, `pipelines.merging.merge_confidence`) instead.
- fine: `cluster_vectors` — HDBSCAN on L2-normalised vectors with the euclidean metric
  (on unit vectors |a-b|^2 = 2 - 2 cos, so this is cosine order).

Choices, measured on 2 cores (MiniLM vectors of LoCoMo turns and summaries, 384 dims, plus
injected near-duplicates at cosine 0.82-0.95 to score pair precision/recall):
- `min_samples=1`: a near-duplicate pair is the typical cluster; at 2, HDBSCAN absorbed
  pairs into loose groups (adjusted Rand index 0.85 -> 0.15 on planted groups of 4).
- `cluster_selection_method="leaf"`: small homogeneous clusters (at most 8-11 members vs
  27-76 with "eom"; pair precision 0.61 vs 0.39 at equal recall). A cluster becomes ONE
  memory, so tight beats broad. `cluster_selection_epsilon` stays 0: 0.2-0.35 only glued
  unrelated leaves together (precision 0.08) and recovered no duplicates.
- HDBSCAN is density-relative and cannot tell "all items are one group" from "no item
  belongs with another": with fewer than two separable groups the leaf selection returns
  all noise (3 duplicates among 3 unrelated items: all noise), and "eom" with
  `allow_single_cluster=True` happily clusters 2 unrelated items. So: leaf first; when it
  finds nothing, eom with a single cluster allowed and `cluster_selection_epsilon` set to
  the floor's distance (without it HDBSCAN labels only the last pair standing of a single
  cluster); then every cluster is checked against an absolute floor in the original
  space — members are split into the connected components of "cosine >= min_similarity"
  (default 0.7, looser than a cluster distance of 0.15-0.20, i.e. cosine 0.8-0.85, so the
  floor only removes what is clearly unrelated) and parts smaller than `min_cluster_size`
  become noise. Two unrelated items never merge just because they are alone in their
  partition. On LoCoMo turns, pairs at cosine 0.5-0.7 were related chatter, not
  restatements; the floor raised pair precision from 0.61 to 0.65-0.74 at unchanged recall.
- Algorithm and dimension rule: a block of up to `EXACT_MAX_N` (2048) vectors runs
  HDBSCAN's exact pairwise ("generic") path on the full vectors: fastest measured below
  that size (0.65 s at 2048 x 384; PCA + Prim's k-d tree 1.0 s at 3200, Boruvka 14.7 s),
  and memory grows as n^2 x 16 bytes (+50 MB at 2048, +270 MB at 4096), so it stops there.
  No PCA below it: it would cost time and fidelity for nothing.
- Larger partitions: PCA (covariance eigh, fixed random_state) to `reduce_dim` dimensions,
  used to split the partition (`_blocks`, with 5% overlap at each cut) into blocks of at
  most `max_block` (default 2048) vectors, each clustered exactly as above; clusters
  sharing an overlap row are joined. One HDBSCAN over 10k points was slower in every
  variant tried: Prim's on a k-d tree after PCA 3.7 s on MiniLM vectors but 15.7 s on
  random ones (trees degrade in 32 dims), Boruvka 13 s, full-dimension Prim's 63 s; 50k
  took 97 s (quadratic). Blocks keep the cost linear in n whatever the data: 0.06 s for
  1k x 384, 0.9-1.6 s for 10k, 5-8 s for 50k, MiniLM-like or random (2 busy cores). Price: pair recall 0.969
  vs 0.971 unsplit on 4.8k vectors (0.94 without the overlap). A larger `max_block` is
  allowed; blocks above 2048 then use PCA + Prim's k-d tree.
- BLAS runs single-threaded inside `cluster_vectors` (see there).

Everything is deterministic: fixed seeds, inputs ordered by item id, labels numbered by
their first member.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipelines.records import MemoryItem, stable_id

EXACT_MAX_N = 2048  # up to here: exact pairwise HDBSCAN on full vectors, no PCA
DEFAULT_MIN_SIMILARITY = 0.7  # absolute cosine floor inside a cluster (single linkage)
_GUARD_CHUNK = 2048  # rows per block when checking large clusters against the floor
OVERLAP = 0.05  # share of a split block's rows, on each side of the cut, given to both halves

# Coarse grouping: items merge only within a family. Knowledge kinds can restate each other
# (the same fact proposed once as "fact", once as "note"); commitments (decision,
# constraint) are kept apart from knowledge; raw chat turns only merge with chat turns.
TYPE_FAMILIES: dict[str, str] = {
    "fact": "knowledge",
    "definition": "knowledge",
    "note": "knowledge",
    "pattern": "knowledge",
    "summary": "knowledge",
    "decision": "commitment",
    "constraint": "commitment",
    "preference": "preference",
    "todo": "todo",
    "pointer": "pointer",
    "message": "message",
}


class ClusteringError(ValueError):
    """Unusable input: wrong shapes, non-finite values, bad parameters, duplicate ids."""


@dataclass(frozen=True, slots=True)
class Cluster:
    """Items (>= min_cluster_size, ids sorted) that should become one memory. `label` is
    unique within `partition` (0, 1, ... ordered by family, then first item id)."""

    partition: str
    label: int
    item_ids: tuple[str, ...]
    family: str = ""

    @property
    def cluster_id(self) -> str:
        return stable_id("clu", self.partition, *self.item_ids)


def type_family(item_type: str, families: Mapping[str, str] | None = None) -> str:
    """The coarse group of an item type (an unknown type is its own family)."""
    return (families or TYPE_FAMILIES).get(item_type, item_type)


# -- fine: vectors -> labels ---------------------------------------------------------------


def cluster_vectors(
    vectors: np.ndarray,
    *,
    min_cluster_size: int = 2,
    reduce_dim: int = 32,
    seed: int = 0,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    max_block: int = EXACT_MAX_N,
) -> np.ndarray:
    """HDBSCAN labels for the rows of `vectors` (-1 = noise), numbered 0.. in order of each
    cluster's first row. `reduce_dim=0` disables PCA. Raises ClusteringError for bad
    input."""
    x = _checked_matrix(vectors)
    _check_params(min_cluster_size, reduce_dim, min_similarity, max_block)
    n, dim = x.shape
    if n < min_cluster_size:
        return np.full(n, -1, dtype=np.int64)
    from threadpoolctl import threadpool_limits  # installed with scikit-learn

    # One BLAS thread: the products here are small, and multi-threaded OpenBLAS stalls on
    # them when the cores are busy (10k vectors: 6.3 s with 2 threads on a loaded 2-core
    # machine, 1.1 s with 1; no loss when idle — HDBSCAN's MST is single-threaded anyway).
    with threadpool_limits(limits=1, user_api="blas"):
        return _cluster_unit(_normalise(x), min_cluster_size, reduce_dim, seed, min_similarity, max_block)


def _cluster_unit(unit: np.ndarray, min_cluster_size: int, reduce_dim: int, seed: int,
                  min_similarity: float, max_block: int) -> np.ndarray:
    n, dim = unit.shape
    space = unit
    if n > min(max_block, EXACT_MAX_N) and 0 < reduce_dim < dim:
        space = _pca(unit, reduce_dim, seed)
    # On unit vectors cosine >= s  <=>  euclidean <= sqrt(2 - 2 s).
    floor_distance = max(float(np.sqrt(max(0.0, 2.0 - 2.0 * min_similarity))), 1e-9)
    found: list[np.ndarray] = []
    for block in _blocks(space, np.arange(n), max_block):
        if len(block) <= EXACT_MAX_N:
            raw = _hdbscan_block(unit[block], min_cluster_size, "generic", floor_distance)
        else:
            raw = _hdbscan_block(space[block], min_cluster_size, "prims_kdtree", floor_distance)
        for members in _groups(_apply_floor(unit[block], raw, min_similarity)):
            if len(members) >= min_cluster_size:
                found.append(block[members])
    return _join_overlapping(found, n)


def _join_overlapping(clusters: list[np.ndarray], n: int) -> np.ndarray:
    """Labels from clusters found in overlapping blocks: clusters that share a row are one
    cluster (they are each connected above the similarity floor, so their union is too)."""
    labels = np.full(n, -1, dtype=np.int64)
    if not clusters:
        return labels
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    rows = np.concatenate(clusters)
    cols = np.concatenate([np.full(len(c), n + k) for k, c in enumerate(clusters)])
    size = n + len(clusters)
    graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(size, size))
    _, comp = connected_components(graph, directed=False)
    in_cluster = np.zeros(n, dtype=bool)
    in_cluster[rows] = True
    labels[in_cluster] = comp[:n][in_cluster]
    return _renumber(labels)


def _checked_matrix(vectors: Any) -> np.ndarray:
    try:
        x = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ClusteringError(f"vectors must be a numeric 2-D array: {exc}") from None
    if x.ndim != 2:
        raise ClusteringError(f"vectors must be 2-D (n, dim), got shape {x.shape}")
    if x.shape[0] and x.shape[1] == 0:
        raise ClusteringError("vectors have zero dimensions")
    if not np.isfinite(x).all():
        raise ClusteringError("vectors contain NaN or infinite values")
    return x


def _check_params(min_cluster_size: Any, reduce_dim: Any, min_similarity: Any, max_block: Any) -> None:
    if isinstance(min_cluster_size, bool) or not isinstance(min_cluster_size, (int, np.integer)) \
            or min_cluster_size < 2:
        raise ClusteringError(f"min_cluster_size must be an int >= 2, got {min_cluster_size!r}")
    if isinstance(reduce_dim, bool) or not isinstance(reduce_dim, (int, np.integer)) or reduce_dim < 0:
        raise ClusteringError(f"reduce_dim must be an int >= 0 (0 = no PCA), got {reduce_dim!r}")
    if isinstance(min_similarity, bool) or not isinstance(min_similarity, (int, float)) \
            or not -1.0 <= float(min_similarity) <= 1.0:
        raise ClusteringError(f"min_similarity must be a cosine in [-1, 1], got {min_similarity!r}")
    if isinstance(max_block, bool) or not isinstance(max_block, (int, np.integer)) \
            or max_block < 2 * min_cluster_size:
        raise ClusteringError(f"max_block must be an int >= 2 * min_cluster_size, got {max_block!r}")


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    # A zero vector stays zero (distance 1 from every unit vector): it clusters with nothing
    # but other zero vectors, which the similarity floor then rejects.
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _pca(unit: np.ndarray, dim: int, seed: int) -> np.ndarray:
    from sklearn.decomposition import PCA

    # covariance_eigh: one dim x dim eigendecomposition, deterministic and ~4x faster than
    # the randomized solver for n >> dim.
    reduced = PCA(n_components=dim, svd_solver="covariance_eigh", random_state=seed).fit_transform(unit)
    return np.ascontiguousarray(reduced, dtype=np.float64)


def _blocks(space: np.ndarray, idx: np.ndarray, max_block: int) -> list[np.ndarray]:
    """Split `idx` recursively until every block has at most `max_block` rows: project on
    the block's first principal axis and cut at the widest gap between 30% and 70% of the
    sorted projections (near-duplicates sit close together, so a wide gap rarely separates
    them). The `OVERLAP` share of rows on each side of the cut goes to both halves, so a
    group the cut crosses is usually still whole in one of them (`_join_overlapping`
    unites the pieces)."""
    if len(idx) <= max_block:
        return [idx]
    pts = space[idx]
    centred = pts - pts.mean(axis=0)
    _, vecs = np.linalg.eigh(centred.T @ centred)
    proj = centred @ vecs[:, -1]
    order = np.argsort(proj, kind="stable")
    sorted_proj = proj[order]
    lo, hi = int(len(idx) * 0.3), int(len(idx) * 0.7)
    cut = lo + int(np.argmax(sorted_proj[lo + 1 : hi + 1] - sorted_proj[lo:hi])) + 1
    margin = int(len(idx) * OVERLAP)
    left = np.sort(idx[order[: cut + margin]])
    right = np.sort(idx[order[cut - margin :]])
    return _blocks(space, left, max_block) + _blocks(space, right, max_block)


def _hdbscan_block(points: np.ndarray, min_cluster_size: int, algorithm: str, floor_distance: float) -> np.ndarray:
    n = points.shape[0]
    if n < min_cluster_size:
        return np.full(n, -1, dtype=np.int64)
    labels = _run_hdbscan(points, min_cluster_size, algorithm, "leaf", single=False)
    if (labels < 0).all():
        # No split into two groups: the leaf selection cannot pick the root (see module
        # docstring). eom may take the root as the one cluster; with an epsilon, HDBSCAN
        # labels the root's members that join it within that distance (else only the last
        # pair standing), so the epsilon is the similarity floor's distance.
        labels = _run_hdbscan(points, min_cluster_size, algorithm, "eom", single=True, epsilon=floor_distance)
    return labels


def _run_hdbscan(points: np.ndarray, min_cluster_size: int, algorithm: str, method: str, *, single: bool,
                 epsilon: float = 0.0) -> np.ndarray:
    import hdbscan

    model = hdbscan.HDBSCAN(
        min_cluster_size=int(min_cluster_size),
        min_samples=1,
        metric="euclidean",
        algorithm=algorithm,
        cluster_selection_method=method,
        allow_single_cluster=single,
        cluster_selection_epsilon=float(epsilon),
        core_dist_n_jobs=1,
    )
    return np.asarray(model.fit_predict(points), dtype=np.int64)


def _groups(labels: np.ndarray) -> list[np.ndarray]:
    """Row indices of each non-noise label, in label order."""
    return [np.flatnonzero(labels == k) for k in np.unique(labels[labels >= 0])]


def _apply_floor(unit: np.ndarray, labels: np.ndarray, min_similarity: float) -> np.ndarray:
    """Split every cluster into the connected components of "cosine >= min_similarity"
    between its members (single linkage); returns component labels (noise stays -1). One
    sparse graph per block: per-cluster graph calls cost ~2 ms each, 5 s for 2,500 pairs."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = unit.shape[0]
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    for members in _groups(labels):
        pts = unit[members]
        for start in range(0, len(members), _GUARD_CHUNK):
            r, c = np.nonzero(pts[start : start + _GUARD_CHUNK] @ pts.T >= min_similarity - 1e-9)
            rows.append(members[r + start])
            cols.append(members[c])
    out = np.full(n, -1, dtype=np.int64)
    if not rows:
        return out
    r, c = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(n, n)).tocsr()
    _, comp = connected_components(graph, directed=False)
    clustered = labels >= 0
    out[clustered] = comp[clustered]
    return out


def _renumber(labels: np.ndarray) -> np.ndarray:
    out = np.full_like(labels, -1)
    mapping: dict[int, int] = {}
    for i, lab in enumerate(labels.tolist()):
        if lab >= 0:
            out[i] = mapping.setdefault(lab, len(mapping))
    return out


# -- coarse: items -> clusters -------------------------------------------------------------


def cluster_items(items: Sequence[MemoryItem], vectors: np.ndarray, **options: Any) -> list[Cluster]:
    """Clusters of `items` (row i of `vectors` is item i's embedding), never across owner
    partitions or type families; noise stays unclustered. The result does not depend on
    the order of `items`. Sorted by (partition, label). `options`: those of `cluster_keyed`."""
    items = list(items)
    for item in items:
        if not isinstance(item, MemoryItem):
            raise ClusteringError(f"items must be MemoryItem records, not {type(item).__name__}")
    return cluster_keyed(
        [i.id for i in items], [i.scope.partition_key() for i in items], [i.type for i in items], vectors, **options)


def cluster_keyed(
    ids: Sequence[str],
    partitions: Sequence[str],
    types: Sequence[str],
    vectors: np.ndarray,
    *,
    families: Mapping[str, str] | None = None,
    **options: Any,
) -> list[Cluster]:
    """`cluster_items` from what it reads of an item: its id, owner partition
    (`Scope.partition_key`) and type, one of each per row of `vectors` (a store's short-term
    items need not be decoded to be clustered). `options`: those of `cluster_vectors`, for
    each (partition, type family) group."""
    x = _checked_matrix(vectors)
    ids = [str(i) for i in ids]
    if not len(ids) == len(partitions) == len(types) == x.shape[0]:
        raise ClusteringError(f"{len(ids)} items ({len(partitions)} partitions, {len(types)} types) "
                              f"but {x.shape[0]} vectors")
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ClusteringError(f"duplicate item id {dup!r}")

    groups: dict[tuple[str, str], list[int]] = {}
    for row, (partition, item_type) in enumerate(zip(partitions, types)):
        key = (partition, type_family(item_type, families))
        groups.setdefault(key, []).append(row)

    found: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for (partition, family), rows in sorted(groups.items()):
        rows = sorted(rows, key=lambda r: ids[r])  # order-independent input
        labels = cluster_vectors(x[rows], **options)
        for members in _groups(labels):
            member_ids = tuple(sorted(ids[rows[m]] for m in members))
            found.setdefault(partition, []).append((family, member_ids))

    out: list[Cluster] = []
    for partition in sorted(found):
        for label, (family, member_ids) in enumerate(sorted(found[partition])):
            out.append(Cluster(partition, label, member_ids, family))
    return out
