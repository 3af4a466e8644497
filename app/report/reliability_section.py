"""The report's "Calibration of p_error" subsection of the Review campaign: is the audit's probability of an error right on the
pairs the experts reviewed? A reliability curve (pairs binned by predicted probability, each bin's
mean prediction against its observed share of `legal` verdicts, with counts) and the expected
calibration error, from audit.csv and verdicts.csv in the work folder (audit/perror.py `reliability`);
with calibration.json's refitted model, its held-out (5-fold) ECE beside it."""

from __future__ import annotations

import numpy as np

from bbsard_audit.audit.perror import reliability
from bbsard_audit.base.contracts.audit import error_score

from . import plots
from .document import Details, Figures, Plot, Report, Section, Table, Text
from .loaders import Workdir
from .sections import num


def add_reliability(report: Report, wd: Workdir) -> None:
    """Append the subsection to the report's Review campaign section (when both exist)."""
    review = next((s for s in report.sections if s.key == "review"), None)
    sub = reliability_section(wd) if review is not None else None
    if sub is not None:
        review.subsections.append(sub)


def reliability_section(wd: Workdir) -> Section | None:
    """None without both audit.csv and verdicts (a reliability curve needs reviewed pairs)."""
    audit, verdicts = wd.table("audit.csv"), wd.table("verdicts.csv")
    if audit is None or verdicts is None:
        return None
    final = verdicts[verdicts["verdict"].astype(str) != ""]  # an unresolved disagreement is no verdict yet
    joined = final[["id", "verdict"]].merge(audit, on="id", how="inner")
    if joined.empty:
        return None
    score = error_score(joined.columns)
    p, y = joined[score].to_numpy(float), joined["verdict"].astype(str).eq("legal").to_numpy()
    curve = reliability(p, y)
    sec = Section("review-reliability", "Calibration of p_error: reliability curve")
    items = [("expected calibration error (ECE)", num(curve["ece"])), ("reviewed pairs", f"{curve['n']:,}"),
             ("of which legal", f"{int(y.sum()):,}"), ("probability judged", score)]
    calibration = wd.document("calibration.json")
    refit = getattr(calibration, "reliability_refit", None)
    if refit is not None and refit.ece is not None:
        items.append(("ECE of the refitted model, held out (5-fold)", num(refit.ece)))
    sec.add(Figures(tuple(items)))
    sec.add(Text(f"Scope: the {curve['n']:,} audited pairs with an expert verdict; `legal` counts as an error. "
                 "A review queue over-samples risky pairs, so this checks the probabilities where pairs were "
                 "reviewed, not the error rate of the split. ECE = Σ (pairs in bin / pairs) × |mean predicted − "
                 "observed share|, over 10 equal-width bins of the predicted probability (empty bins left out)."
                 + (" This audit predates p_error: its risk is judged." if score == "risk" else "")))
    sec.add(Table(f"Reliability of {score}: pairs per bin, mean predicted probability and observed share of legal "
                  "verdicts", ("predicted in", "pairs", "mean predicted", "observed", "legal"),
                  tuple((f"[{b['lo']:.1f}, {b['hi']:.1f})", f"{b['n']:,}", num(b["predicted"]), num(b["observed"]),
                         f"{b['errors']:,}") for b in curve["bins"]), visible=0))  # the plot shows it; folded
    sec.add(Details(f"Figure: reliability curve of {score}", (Plot(
        f"Reliability curve of {score} on the reviewed pairs (marker area = pairs in the bin; on the "
        "diagonal = calibrated)", f"reliability curve of {score}", _curve_png(curve["bins"])),)))
    return sec


def _curve_png(bins: list[dict]) -> bytes:
    with plots.plt.rc_context(plots.STYLE):
        fig, ax = plots.plt.subplots(figsize=(4.2, 3.6))
        ax.plot([0, 1], [0, 1], color="#999999", linewidth=0.8, linestyle="--", label="calibrated")
        x = np.array([b["predicted"] for b in bins])
        ax.plot(x, [b["observed"] for b in bins], color=plots.OKABE_ITO[0], linewidth=1)
        ax.scatter(x, [b["observed"] for b in bins], s=[min(300, 12 + 2 * b["n"]) for b in bins],
                   color=plots.OKABE_ITO[0], label="bins", zorder=3)
        for b in bins:
            ax.annotate(f"{b['n']}", (b["predicted"], b["observed"]), textcoords="offset points", xytext=(5, -10),
                        fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("mean predicted probability of an error")
        ax.set_ylabel("observed share judged legal")
        ax.legend(frameon=False, loc="upper left")
        return plots._png(fig)
