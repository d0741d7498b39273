"""bench.locomo_rerank: the fit's weights on the raw-input scale follow the labels."""

from __future__ import annotations

import numpy as np

from bench.locomo_rerank import Ranked, fit


def test_fit_gives_a_positive_weight_to_the_input_that_marks_evidence_and_ignores_unfit_rows():
    rng = np.random.default_rng(0)
    rows = []
    for i in range(40):
        x = rng.normal(size=(20, 3)) * [1.0, 10.0, 0.1]
        y = (x[:, 1] + rng.normal(scale=2.0, size=20) > 5).astype(np.int64)
        rows.append(Ranked("c", "1", f"q{i}", ["D1:1"], None, x, y, fit=True))
    # rows that must not be fitted on (a question that asks when, category 5): labels reversed
    rows += [Ranked("c", "5", "when", ["D1:1"], None, r.signals, 1 - r.labels, fit=False) for r in rows[:30]]
    weights = fit(rows, 1.0)
    assert len(weights) == 3
    per_sd = np.abs(weights) * [1.0, 10.0, 0.1]  # weights per standard deviation of each input
    assert weights[1] > 0 and per_sd[1] > 3 * max(per_sd[0], per_sd[2])
