"""Inter-annotator agreement: Cohen's kappa and Krippendorff's alpha (nominal) with bootstrap CIs.

Label Studio's free edition has no agreement metrics, so they are computed here from the raw
annotations. Both statistics are sums of per-item contributions (a contingency cell for kappa,
a coincidence matrix for alpha), so a bootstrap over items is one matrix product: a
(resamples x items) count matrix times the per-item contributions. Resamples are seeded.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from bbsard_audit.base.contracts.agreement import Agreement, Score
from bbsard_audit.base.contracts.verdicts import VERDICTS, check_known


@dataclass
class RatingMatrix:
    """Items x annotators table of category codes (-1 = not rated by that annotator)."""

    items: np.ndarray
    annotators: tuple[str, ...]
    codes: np.ndarray
    categories: tuple[str, ...]

    @classmethod
    def from_raw(cls, raw: pd.DataFrame, categories=VERDICTS, binary_legal: bool = False) -> "RatingMatrix":
        """From annotations_raw rows (`id, annotator, verdict`); one (latest) verdict per pair.
        A verdict outside the vocabulary is an error, never a dropped rating."""
        check_known(raw["verdict"])
        labels = raw["verdict"]
        if binary_legal:
            labels = np.where(labels == "legal", "legal", "not_legal")
            categories = ("not_legal", "legal")
        table = (pd.DataFrame({"id": raw["id"].to_numpy(), "annotator": raw["annotator"].to_numpy(),
                               "code": pd.Categorical(labels, categories=categories).codes})
                 .drop_duplicates(["id", "annotator"], keep="last")
                 .pivot(index="id", columns="annotator", values="code"))
        return cls(items=table.index.to_numpy(), annotators=tuple(table.columns),
                   codes=table.fillna(-1).to_numpy(dtype=int), categories=tuple(categories))

    def counts(self) -> np.ndarray:
        """Items x categories: how many annotators put each item in each category."""
        k = len(self.categories)
        onehot = (self.codes[:, :, None] == np.arange(k)[None, None, :])
        return onehot.sum(axis=1)


def _bootstrap_weights(n_items: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot x n_items) multiplicities of each item in each resample of the items."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=n_boot).astype(float)


def _ci(samples: np.ndarray, level: float) -> tuple[float, float]:
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return float("nan"), float("nan")
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def _kappa_from_tables(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa for a stack of k x k contingency tables (... x k x k)."""
    n = tables.sum(axis=(-2, -1))
    observed = np.trace(tables, axis1=-2, axis2=-1) / n
    expected = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1) / n**2
    with np.errstate(invalid="ignore", divide="ignore"):
        return (observed - expected) / (1 - expected)


def cohen_kappa(a: np.ndarray, b: np.ndarray, n_categories: int, *, n_boot: int = 1000,
                seed: int = 0, level: float = 0.95, name: str = "cohen_kappa",
                annotators: tuple[str, ...] = ()) -> Score:
    """Kappa of two annotators' codes on the same items (codes 0..k-1)."""
    k = n_categories
    cells = np.zeros((len(a), k * k))
    cells[np.arange(len(a)), a * k + b] = 1.0
    value = float(_kappa_from_tables(cells.sum(axis=0).reshape(k, k)))
    boot = _kappa_from_tables((_bootstrap_weights(len(a), n_boot, seed) @ cells).reshape(n_boot, k, k))
    low, high = _ci(boot, level)
    return Score(name, value, low, high, len(a), _signature("kappa", n_boot, seed, level), annotators)


def _alpha_from_coincidences(coincidences: np.ndarray) -> np.ndarray:
    """Nominal alpha from a stack of coincidence matrices (... x k x k)."""
    n_c = coincidences.sum(axis=-1)
    n = n_c.sum(axis=-1)
    disagree_obs = n - np.trace(coincidences, axis1=-2, axis2=-1)
    disagree_exp = n**2 - (n_c**2).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1 - (n - 1) * disagree_obs / disagree_exp


def krippendorff_alpha(counts: np.ndarray, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                       name: str = "krippendorff_alpha", annotators: tuple[str, ...] = ()) -> Score:
    """Nominal alpha from items x categories counts; items with < 2 ratings are not pairable."""
    counts = counts[counts.sum(axis=1) >= 2].astype(float)
    m = counts.sum(axis=1)
    k = counts.shape[1]
    # per-item coincidences: (n_uc n_uk - [c == k] n_uc) / (m_u - 1)
    per_item = (counts[:, :, None] * counts[:, None, :]
                - counts[:, :, None] * np.eye(k)[None]) / (m - 1)[:, None, None]
    flat = per_item.reshape(len(counts), k * k)
    value = float(_alpha_from_coincidences(flat.sum(axis=0).reshape(k, k)))
    boot = _alpha_from_coincidences(
        (_bootstrap_weights(len(counts), n_boot, seed) @ flat).reshape(n_boot, k, k))
    low, high = _ci(boot, level)
    return Score(name, value, low, high, len(counts), _signature("alpha-nominal", n_boot, seed, level),
                 annotators)


def _signature(stat: str, n_boot: int, seed: int, level: float) -> str:
    return f"{stat}|bootstrap:items|n:{n_boot}|seed:{seed}|level:{level}"


def agreement(raw: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
              min_shared: int = 2) -> Agreement:
    report = Agreement()
    for scheme, binary in (("verdict", False), ("legal_vs_not", True)):
        matrix = RatingMatrix.from_raw(raw, binary_legal=binary)
        k = len(matrix.categories)
        counts = matrix.counts()
        report.n_items_with_2plus_annotations = int((counts.sum(axis=1) >= 2).sum())
        if report.n_items_with_2plus_annotations:
            report.scores.append(krippendorff_alpha(
                counts, n_boot=n_boot, seed=seed, level=level,
                name=f"krippendorff_alpha[{scheme}]", annotators=matrix.annotators))
        for i, j in combinations(range(len(matrix.annotators)), 2):
            both = (matrix.codes[:, i] >= 0) & (matrix.codes[:, j] >= 0)
            if both.sum() >= min_shared:
                pair = (matrix.annotators[i], matrix.annotators[j])
                report.scores.append(cohen_kappa(
                    matrix.codes[both, i], matrix.codes[both, j], k, n_boot=n_boot, seed=seed,
                    level=level, name=f"cohen_kappa[{scheme}]", annotators=pair))
    return report
