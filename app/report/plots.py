"""Report figures: matplotlib rendered to PNG bytes, colour-blind-safe (Okabe-Ito), labelled axes."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import pandas as pd  # noqa: E402

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
STYLE = {"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "axes.spines.top": False,
         "axes.spines.right": False, "figure.dpi": 100, "savefig.dpi": 110,
         "figure.constrained_layout.use": True}


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})  # constrained layout: one draw, not two
    plt.close(fig)
    return buf.getvalue()


def risk_histogram(risk: pd.Series, flagged: pd.Series) -> bytes:
    """Distribution of audit risk, flagged pairs stacked on unflagged ones."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6, 2.8))
        bins = np.linspace(0, 1, 21)
        ax.hist([risk[~flagged], risk[flagged]], bins=bins, stacked=True,
                color=[OKABE_ITO[0], OKABE_ITO[3]], label=["not flagged", "flagged"],
                edgecolor="white", linewidth=0.5)
        ax.set_xlabel("audit risk score (0 = looks fine, 1 = very suspect)")
        ax.set_ylabel("question pairs")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(0, 1)
        ax.legend(frameon=False)
        return _png(fig)


def horizontal_bars(labels: list[str], values: list[float], xlabel: str, *, xlim: tuple | None = None,
                    annotate: list[str] | None = None, integer: bool = False) -> bytes:
    """One bar per category, sorted as given (e.g. flags by type, selftest recall per error type)."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(5.2, 0.22 * len(labels) + 0.8))
        y = np.arange(len(labels))
        ax.barh(y, values, color=OKABE_ITO[0])
        ax.set_yticks(y, labels)
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        if xlim:
            ax.set_xlim(*xlim)
        if integer:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        for yi, v, text in zip(y, values, annotate or [f"{v:g}" for v in values]):
            ax.text(v, yi, f" {text}", va="center", fontsize=8)
        return _png(fig)


LABEL_GAP = 0.42
"""Vertical distance (in rank units) kept between two slope-chart labels on the same side."""


def spread(values, gap: float = LABEL_GAP) -> np.ndarray:
    """Label positions as close as possible to `values` with at least `gap` between neighbours.

    Labels whose ideal positions crowd (tied ranks) form a cluster centred on their mean, evenly
    spaced; clusters that then touch merge, so the result is ordered like `values` and never overlaps.
    """
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="stable")
    clusters: list[list[float]] = []  # [sum of ideal positions, size]
    for v in values[order]:
        clusters.append([v, 1])
        while len(clusters) > 1:
            (s1, n1), (s2, n2) = clusters[-2], clusters[-1]
            if (s2 / n2 - (n2 - 1) * gap / 2) - (s1 / n1 + (n1 - 1) * gap / 2) >= gap - 1e-9:
                break
            clusters[-2:] = [[s1 + s2, n1 + n2]]
    placed = np.concatenate([s / n + (np.arange(n) - (n - 1) / 2) * gap for s, n in clusters])
    out = np.empty_like(values)
    out[order] = placed
    return out


def slope_chart(ranks: pd.DataFrame, subset_a: str, subset_b: str) -> bytes:
    """System ranks on `subset_a` (left) and `subset_b` (right), one panel per metric.

    `ranks` has columns metric, system, rank_a, rank_b (1 = best).
    """
    with plt.rc_context(STYLE):  # savefig reads the style's dpi too
        return _png(slope_figure(ranks, subset_a, subset_b))


def slope_figure(ranks: pd.DataFrame, subset_a: str, subset_b: str):
    """The slope chart as a matplotlib figure: labels of tied ranks are spread apart (`spread`)."""
    metrics = list(dict.fromkeys(ranks["metric"]))
    systems = sorted(set(ranks["system"]))
    colour = {s: OKABE_ITO[i % len(OKABE_ITO)] for i, s in enumerate(systems)}
    marker = {s: MARKERS[i // len(OKABE_ITO) % len(MARKERS)] for i, s in enumerate(systems)}
    ncols = min(3, len(metrics))
    nrows = -(-len(metrics) // ncols)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, (0.4 * len(systems) + 1.3) * nrows),
                                 squeeze=False)
        for ax, metric in zip(axes.flat, metrics):
            part = ranks[ranks["metric"] == metric].reset_index(drop=True)
            left, right = spread(part["rank_a"]), spread(part["rank_b"])
            for i, row in part.iterrows():
                ax.plot([0, 1], [row.rank_a, row.rank_b], color=colour[row.system],
                        marker=marker[row.system], linewidth=2 if row.rank_a != row.rank_b else 1)
                ax.text(-0.08, left[i], row.system, ha="right", va="center", fontsize=7, color=colour[row.system])
                ax.text(1.08, right[i], row.system, ha="left", va="center", fontsize=7, color=colour[row.system])
            ax.set_title(metric)
            ax.set_xticks([0, 1], [subset_a, subset_b])
            labels = np.concatenate([left, right, [1.0]])  # a spread tie may reach past ranks 1 and N
            ax.set_ylim(max(len(systems) + 0.5, labels.max() + LABEL_GAP / 2), min(0.5, labels.min() - LABEL_GAP / 2))
            ax.set_yticks(range(1, len(systems) + 1))
            ax.set_ylabel("rank (1 = best)")
        for ax in list(axes.flat)[len(metrics):]:
            ax.set_visible(False)
        _fit_labels(fig, list(axes.flat)[:len(metrics)], pad=0.08)
        return fig


def _fit_labels(fig, axes, pad: float) -> None:
    """Widen each panel's x range so its system labels (at -pad, 1 + pad) fit inside the panel,
    clear of the rank tick labels: with label widths l, r and panel width W (pixels), a range S
    leaves them room when S * (1 - (l + r) / W - 2 * 2%) = 1 + 2 * pad."""
    for _ in range(3):  # the layout moves the panels once the limits change: settle it
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in axes:
            width = ax.get_window_extent(renderer).width
            left = max((t.get_window_extent(renderer).width for t in ax.texts if t.get_ha() == "right"), default=0)
            right = max((t.get_window_extent(renderer).width for t in ax.texts if t.get_ha() == "left"), default=0)
            span = (1 + 2 * pad) / max(1 - (left + right) / width - 0.04, 0.1)
            ax.set_xlim(-pad - (left / width + 0.02) * span, 1 + pad + (right / width + 0.02) * span)


def forest_plot(metrics: pd.DataFrame) -> bytes:
    """Metric value with its 95% CI per system, one colour per subset, one panel per metric."""
    names = list(dict.fromkeys(metrics["metric"]))
    subsets = list(dict.fromkeys(metrics["subset"]))
    systems = sorted(set(metrics["system"]))
    ncols = min(3, len(names))
    nrows = -(-len(names) // ncols)
    offset = np.linspace(-0.25, 0.25, len(subsets)) if len(subsets) > 1 else np.zeros(1)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, (0.3 * len(systems) + 1.2) * nrows),
                                 squeeze=False)
        for ax, name in zip(axes.flat, names):
            part = metrics[metrics["metric"] == name]
            for j, subset in enumerate(subsets):
                rows = part[part["subset"] == subset].set_index("system").reindex(systems)
                y = np.arange(len(systems)) + offset[j]
                value = rows["value"].to_numpy(float)
                low = rows.get("ci_low", rows["value"]).to_numpy(float)
                high = rows.get("ci_high", rows["value"]).to_numpy(float)
                err = np.vstack([value - low, high - value])
                ax.errorbar(value, y, xerr=np.nan_to_num(err), fmt=MARKERS[j % len(MARKERS)],
                            color=OKABE_ITO[j % len(OKABE_ITO)], capsize=2, markersize=4,
                            label=subset)
            ax.set_yticks(np.arange(len(systems)), systems)
            ax.invert_yaxis()
            ax.set_title(name)
            ax.set_xlabel(f"{name} (95% CI)")
        for ax in list(axes.flat)[len(names):]:
            ax.set_visible(False)
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=len(subsets), frameon=False)
        return _png(fig)


def grouped_bars(frame: pd.DataFrame, group: str, series: str, value: str, ylabel: str,
                 low: str | None = None, high: str | None = None) -> bytes:
    """Bars of `value` per `group`, one colour per `series` (e.g. FR−NL gap per verdict, by system)."""
    groups = list(dict.fromkeys(frame[group].astype(str)))
    names = list(dict.fromkeys(frame[series].astype(str)))
    width = 0.8 / max(len(names), 1)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(max(4.5, 0.9 * len(groups) * max(1, len(names) / 2)), 3))
        x = np.arange(len(groups))
        for j, name in enumerate(names):
            part = frame[frame[series].astype(str) == name].copy()
            part[group] = part[group].astype(str)
            part = part.groupby(group, sort=False).first().reindex(groups)
            vals = part[value].to_numpy(float)
            err = None
            if low and high:
                err = np.nan_to_num(np.vstack([vals - part[low].to_numpy(float),
                                               part[high].to_numpy(float) - vals]))
            ax.bar(x + (j - (len(names) - 1) / 2) * width, vals, width, yerr=err, capsize=2,
                   color=OKABE_ITO[j % len(OKABE_ITO)], label=name, edgecolor="white")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(x, groups)
        ax.set_xlabel(group)
        ax.set_ylabel(ylabel)
        ax.legend(frameon=False, fontsize=8, ncol=min(len(names), 4))
        return _png(fig)
