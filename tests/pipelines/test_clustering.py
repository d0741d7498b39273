"""HDBSCAN clustering: near-duplicates group, noise stays alone, owners and type families
never mix, results do not depend on input order."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pipelines.clustering as clustering
from pipelines.clustering import (
    Cluster,
    ClusteringError,
    cluster_items,
    cluster_keyed,
    cluster_vectors,
    type_family,
)
from pipelines.records import MemoryItem, Scope

DIM = 64


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def planted(sizes: list[int], n_noise: int, *, seed: int = 0, cos: float = 0.95, dim: int = DIM):
    """Groups of near-duplicates (cosine ~`cos` to their centre) plus unrelated vectors.
    Returns vectors and the true group of each row (-1 for the unrelated ones)."""
    rng = np.random.default_rng(seed)
    rows, truth = [], []
    for g, size in enumerate(sizes):
        centre = unit(rng.standard_normal(dim))
        for _ in range(size):
            noise = rng.standard_normal(dim)
            noise = unit(noise - (noise @ centre) * centre)
            rows.append(cos * centre + np.sqrt(1 - cos**2) * noise)
            truth.append(g)
    for _ in range(n_noise):
        rows.append(unit(rng.standard_normal(dim)))
        truth.append(-1)
    return np.array(rows), np.array(truth)


def same_partition(labels: np.ndarray, truth: np.ndarray) -> bool:
    """Every planted group is exactly one cluster and every unrelated row is noise."""
    for g in set(truth.tolist()):
        rows = truth == g
        if g == -1:
            if (labels[rows] != -1).any():
                return False
        elif len(set(labels[rows].tolist())) != 1 or labels[rows][0] == -1 or (labels[~rows] == labels[rows][0]).any():
            return False
    return True


def pairs(labels: np.ndarray) -> set[tuple[int, int]]:
    out: set[tuple[int, int]] = set()
    for k in set(labels.tolist()) - {-1}:
        out.update(itertools.combinations(np.flatnonzero(labels == k).tolist(), 2))
    return out


def item(item_id: str, *, type: str = "fact", project: str = "p1", kind: str = "project") -> MemoryItem:
    return MemoryItem(id=item_id, tier="stm", type=type, title=item_id, content=f"content of {item_id}",
                      scope=Scope(kind=kind, project_id=project))  # type: ignore[arg-type]


# -- cluster_vectors -----------------------------------------------------------------------


def test_planted_near_duplicates_form_clusters_and_unrelated_rows_are_noise():
    vectors, truth = planted([2, 3, 4, 2, 3], n_noise=12)
    labels = cluster_vectors(vectors)
    assert labels.dtype.kind == "i" and labels.shape == (len(vectors),)
    assert same_partition(labels, truth)
    # numbered 0.. in order of each cluster's first row
    firsts = [int(labels[np.flatnonzero(labels == k)[0]]) for k in sorted(set(labels.tolist()) - {-1},
              key=lambda k: np.flatnonzero(labels == k)[0])]
    assert firsts == list(range(len(firsts)))


def test_fewer_rows_than_min_cluster_size_are_all_noise():
    vectors, _ = planted([2], n_noise=0)
    assert cluster_vectors(vectors[:1]).tolist() == [-1]
    assert cluster_vectors(vectors, min_cluster_size=3).tolist() == [-1, -1]
    assert cluster_vectors(np.zeros((0, DIM))).tolist() == []


def test_one_group_alone_in_a_small_partition_is_still_found():
    # HDBSCAN's leaf selection finds nothing when there is only one group; the fallback must.
    vectors, truth = planted([3], n_noise=3, seed=3)
    assert same_partition(cluster_vectors(vectors), truth)
    pair, _ = planted([2], n_noise=0, seed=4)
    assert cluster_vectors(pair).tolist() == [0, 0]


def test_unrelated_items_never_cluster_even_when_alone():
    vectors, _ = planted([], n_noise=2, seed=5)
    assert cluster_vectors(vectors).tolist() == [-1, -1]
    vectors, _ = planted([], n_noise=7, seed=6)
    assert (cluster_vectors(vectors) == -1).all()


def test_similarity_floor_decides_for_moderately_similar_pairs():
    a = unit(np.eye(DIM)[0] + 0.0)
    b = unit(np.eye(DIM)[0] + np.eye(DIM)[1] * 1.2)  # cosine ~0.64
    cos = float(a @ b)
    assert 0.55 < cos < 0.7
    assert cluster_vectors(np.stack([a, b])).tolist() == [-1, -1]
    assert cluster_vectors(np.stack([a, b]), min_similarity=0.5).tolist() == [0, 0]


def test_result_is_deterministic_and_independent_of_row_order():
    vectors, truth = planted([2, 3, 2, 4], n_noise=15, seed=7)
    first = cluster_vectors(vectors)
    assert np.array_equal(first, cluster_vectors(vectors.copy()))
    perm = np.random.default_rng(1).permutation(len(vectors))
    shuffled = cluster_vectors(vectors[perm])
    back = np.empty_like(shuffled)
    back[perm] = shuffled
    assert pairs(back) == pairs(first)


def test_scale_is_ignored_and_zero_vectors_do_not_crash():
    vectors, truth = planted([2, 3], n_noise=4, seed=8)
    scaled = vectors * np.random.default_rng(2).uniform(0.1, 50, size=(len(vectors), 1))
    assert same_partition(cluster_vectors(scaled), truth)
    with_zeros = np.vstack([vectors, np.zeros((2, DIM))])
    labels = cluster_vectors(with_zeros)
    assert labels[-2:].tolist() == [-1, -1]
    assert same_partition(labels[:-2], truth)


def test_large_partition_is_reduced_with_pca_and_split_into_blocks(monkeypatch):
    calls = {"pca": 0, "blocks": 0}
    real_pca, real_block = clustering._pca, clustering._hdbscan_block

    def spy_pca(*a, **k):
        calls["pca"] += 1
        return real_pca(*a, **k)

    def spy_block(points, *a, **k):
        calls["blocks"] += 1
        assert len(points) <= clustering.EXACT_MAX_N
        return real_block(points, *a, **k)

    monkeypatch.setattr(clustering, "_pca", spy_pca)
    monkeypatch.setattr(clustering, "_hdbscan_block", spy_block)
    sizes = [2, 3, 4] * 250  # 2,250 rows in groups
    vectors, truth = planted(sizes, n_noise=300, seed=9)
    labels = cluster_vectors(vectors, reduce_dim=16)
    assert calls["pca"] == 1 and calls["blocks"] >= 2
    found, planted_pairs = pairs(labels), pairs(truth)
    assert found <= planted_pairs  # nothing unrelated merged
    assert len(found) >= 0.9 * len(planted_pairs)
    # the overlapping blocks lose (almost) nothing against one HDBSCAN over everything
    monkeypatch.undo()
    whole = pairs(cluster_vectors(vectors, reduce_dim=16, max_block=100_000))
    assert len(found) >= len(whole) - 0.02 * len(planted_pairs)


def test_small_partition_uses_no_pca(monkeypatch):
    monkeypatch.setattr(clustering, "_pca", lambda *a, **k: pytest.fail("PCA on a small partition"))
    vectors, truth = planted([2, 2], n_noise=5, seed=10)
    assert same_partition(cluster_vectors(vectors, reduce_dim=8), truth)


@pytest.mark.parametrize(
    "vectors, kwargs, message",
    [
        (np.array([1.0, 2.0]), {}, "2-D"),
        (np.array([[1.0, np.nan], [1.0, 2.0]]), {}, "NaN"),
        (np.array([[1.0, np.inf], [1.0, 2.0]]), {}, "NaN or infinite"),
        ([["a", "b"]], {}, "numeric"),
        (np.ones((3, 4)), {"min_cluster_size": 1}, "min_cluster_size"),
        (np.ones((3, 4)), {"reduce_dim": -1}, "reduce_dim"),
        (np.ones((3, 4)), {"min_similarity": 2.0}, "min_similarity"),
        (np.ones((3, 4)), {"max_block": 3}, "max_block"),
    ],
)
def test_bad_input_raises_clustering_error(vectors, kwargs, message):
    with pytest.raises(ClusteringError, match=message):
        cluster_vectors(vectors, **kwargs)


# -- cluster_items -------------------------------------------------------------------------


def test_items_never_cluster_across_owner_partitions():
    vectors, _ = planted([2], n_noise=0, seed=11)
    twins = np.vstack([vectors, vectors])  # identical pairs in two projects
    items = [item("a1", project="p1"), item("a2", project="p1"), item("b1", project="p2"), item("b2", project="p2")]
    clusters = cluster_items(items, twins)
    assert [(c.partition, c.item_ids) for c in clusters] == [
        ("project:default/p1", ("a1", "a2")),
        ("project:default/p2", ("b1", "b2")),
    ]
    assert all(c.label == 0 for c in clusters)


def test_type_families_keep_messages_and_decisions_apart_but_join_fact_and_note():
    v = unit(np.random.default_rng(12).standard_normal(DIM))
    same = np.stack([v] * 4)
    items = [item("m1", type="message"), item("d1", type="decision"), item("f1", type="fact"), item("n1", type="note")]
    clusters = cluster_items(items, same)
    assert [c.item_ids for c in clusters] == [("f1", "n1")]
    assert clusters[0].family == type_family("fact") == type_family("note") == "knowledge"
    assert type_family("message") != type_family("decision")
    assert type_family("something-new") == "something-new"


def test_cluster_items_output_does_not_depend_on_input_order():
    vectors, truth = planted([2, 3, 2], n_noise=6, seed=13)
    items = [item(f"i{n:02d}", project="p1" if n % 5 else "p2") for n in range(len(vectors))]
    first = cluster_items(items, vectors)
    assert first, "expected some clusters"
    perm = np.random.default_rng(3).permutation(len(items))
    again = cluster_items([items[i] for i in perm], vectors[perm])
    assert again == first
    for c in first:
        assert isinstance(c, Cluster) and len(c.item_ids) >= 2 and list(c.item_ids) == sorted(c.item_ids)
        assert c.cluster_id.startswith("clu_")
    keys = [(c.partition, c.label) for c in first]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_cluster_keyed_is_cluster_items_from_ids_partitions_and_types():
    vectors, _ = planted([2, 3, 2], n_noise=6, seed=14)
    items = [item(f"i{n:02d}", project="p1" if n % 5 else "p2", type="fact" if n % 3 else "note")
             for n in range(len(vectors))]
    expected = cluster_items(items, vectors)
    assert expected
    got = cluster_keyed([i.id for i in items], [i.scope.partition_key() for i in items], [i.type for i in items],
                        vectors)
    assert got == expected
    with pytest.raises(ClusteringError, match="vectors"):
        cluster_keyed(["a", "b"], ["p", "p"], ["fact"], vectors[:2])


def test_cluster_items_rejects_mismatched_or_duplicate_input():
    vectors, _ = planted([2], n_noise=1)
    with pytest.raises(ClusteringError, match="3 vectors"):
        cluster_items([item("a"), item("b")], vectors)
    with pytest.raises(ClusteringError, match="duplicate item id 'a'"):
        cluster_items([item("a"), item("a"), item("b")], vectors)
    with pytest.raises(ClusteringError, match="MemoryItem"):
        cluster_items([item("a"), {"id": "b"}, item("c")], vectors)  # type: ignore[list-item]
