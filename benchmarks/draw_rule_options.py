"""The draw rule's options (annotations/draw.py), shared by the issue-24 benchmarks so both read and
record one rule the same way."""

from __future__ import annotations

import argparse

from bbsard_audit.annotations import draw


def add(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--certain", type=float, default=draw.CERTAIN_SHARE,
                    help="share of each --next draw forced certain (annotations/draw.py CERTAIN_SHARE)")
    ap.add_argument("--tradeoff", type=float, default=draw.TRADEOFF,
                    help="μ of the trade-off rule (annotations/draw.py); a negative value: the linear rule π ∝ p")
    ap.add_argument("--floor-share", type=float, default=draw.FLOOR_SHARE,
                    help="floor inclusion probability as a share of the uniform rate (annotations/draw.py)")
    ap.add_argument("--p-floor", type=float, default=draw.P_FLOOR,
                    help="floor of every batch's prediction (annotations/draw.py P_FLOOR; 0: none, before 2026-12-02 06:10)")
    ap.add_argument("--recalibrate", action="store_true",
                    help="recalibrate each --next batch's prediction on earlier verdicts (annotations/recalibration.py; "
                         "the default from 2026-12-02 03:30 to 06:00, off since: it undercovered on the real split)")
    ap.add_argument("--sampling", default=draw.SAMPLING, choices=sorted(draw.SAMPLERS),
                    help="how a --next batch draws its pool (annotations/draw.py SAMPLING; poisson: before issue 32)")


def rule(args: argparse.Namespace) -> draw.DrawRule:
    return draw.DrawRule(args.certain, None if args.tradeoff < 0 else args.tradeoff, args.floor_share,
                         args.recalibrate, args.p_floor, args.sampling)
