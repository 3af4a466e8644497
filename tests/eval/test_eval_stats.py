"""Resampling and rank-correlation building blocks: seeded, correct on known cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from bbsard_audit.eval.bootstrap import Bootstrap, holm, paired_randomisation
from bbsard_audit.eval.ranking_shift import Shift, kendall_tau_b, random_subsets, tau_ap


def test_bootstrap_is_seeded_and_paths_agree():
    rng = np.random.default_rng(0)
    values = rng.random((5, 300))
    boot = Bootstrap(300, 2000, seed=5)
    many = boot.means(values)                              # one matmul over the count matrix
    one = np.stack([boot.means(v) for v in values])        # gather path
    assert np.allclose(many, one, atol=1e-12)
    low, high = boot.ci(values[0])
    assert low < values[0].mean() < high and high - low < 0.1
    assert np.array_equal(Bootstrap(300, 2000, seed=5).indices, boot.indices)
    assert not np.array_equal(Bootstrap(300, 2000, seed=6).indices, boot.indices)


def test_paired_randomisation_and_holm():
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 1, 200)
    p_same, p_shift = paired_randomisation(np.stack([noise * 0, noise * 0.01 + 0.5]), 2000, seed=3)
    assert p_same == 1.0 and p_shift == pytest.approx(1 / 2001)
    assert holm(np.array([0.01, 0.04, 0.03])).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert holm(np.array([0.5, 0.9, 0.2])).tolist() == pytest.approx([1.0, 1.0, 0.6])  # monotone step-down


def test_rank_correlations():
    rng = np.random.default_rng(2)
    x, y = rng.random((50, 6)), rng.random((50, 6))
    y[:, 2] = y[:, 3]  # ties
    expected = [kendalltau(a, b).statistic for a, b in zip(x, y)]
    assert kendall_tau_b(x, y) == pytest.approx(expected, abs=1e-12)
    names = list("abcdef")
    a = np.array([6, 5, 4, 3, 2, 1.0])
    assert tau_ap(a, a, names)[0] == pytest.approx(1.0)
    assert tau_ap(a, a[::-1], names)[0] == pytest.approx(-1.0)
    top_swap = np.array([5, 6, 4, 3, 2, 1.0])
    bottom_swap = np.array([6, 5, 4, 3, 1, 2.0])
    # both are one adjacent swap (same tau-b), but tau-AP punishes the swap at the top more
    assert kendall_tau_b(a, top_swap)[0] == pytest.approx(kendall_tau_b(a, bottom_swap)[0])
    assert tau_ap(top_swap, a, names)[0] < tau_ap(bottom_swap, a, names)[0]
    shift = Shift(tuple(names), a, top_swap)
    assert shift.flips() == [("a", "b")] and shift.rank_changes() == {"a": -1, "b": 1, "c": 0, "d": 0, "e": 0, "f": 0}


def test_random_subsets_have_the_exact_size():
    masks = random_subsets(203, 150, 500, seed=9)
    assert (masks.sum(axis=1) == 150).all()
    assert 0.6 < masks.mean(axis=0).min() and masks.mean(axis=0).max() < 0.9  # every query can go
