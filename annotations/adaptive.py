"""An adaptive review campaign: a design frozen at the start, then batches of the riskiest pairs.

The campaign folder holds `campaign.json`, the cumulative `review_queue.csv` (every pair ever
pushed) and, by convention, the `verdicts.csv` / `annotations_raw.csv` that pull writes. The
first push records the design; the control sample is never redrawn.

Format 3 (every batch a probability draw, annotations/draw.py): the start queue as format 2, and
each batch — the start push and every `--next N` — records its pool, the prediction p of each pool
pair (`p_error` when the audit has it, else `risk`) and its inclusion probability π; `--next N`
is a Poisson draw of expected size N with π growing with p (the queue lists certain pairs first,
then by p). The estimator is the prediction-powered one (annotations/draw.py).

Format 2 (a review queue with inclusion probabilities): the strata of the start queue over the
whole population — `risk_queue` (the start risk queue, a census) and each split's risk bands,
every pair in exactly one — and the control sample in them. `--next N` queues the N riskiest
pairs of an audit re-run that were never queued, reviewed or pushed. The estimator
(annotations/estimate.py) counts every reviewed pair exactly and the unreviewed pairs of each
band from its control pairs only: a batch, queued or reviewed, is never a sample.

Format 1 (an older queue): `risk_queue` = every pair pushed to the risk queue, `flagged` = the
start's flagged pairs no batch reached, `unflagged:<stratum>` = start-unflagged pairs minus those
a batch took, sampled by the start control pairs (read as before, see `legacy_design`).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.campaign_design import check_campaign_folder, check_record, check_seal, seal
from bbsard_audit.base.contracts.jsonfile import read_json
from bbsard_audit.base.contracts.table import as_id, id_order
from bbsard_audit.base.contracts.verdicts import read_raw, read_verdicts
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import digest_of, guard_outputs, sidecar_path, write_json, write_sidecar

import numpy as np

from . import draw, recalibration
from .estimate import CENSUS, Design, queue_design
from .pull import RAW_FILE
from .tasks import QUEUE_COLUMNS, read_audit

CAMPAIGN_FILE = "campaign.json"
QUEUE_FILE = "review_queue.csv"
VERDICTS_FILE = "verdicts.csv"
FILES = (QUEUE_FILE, sidecar_path(QUEUE_FILE).name, CAMPAIGN_FILE, sidecar_path(CAMPAIGN_FILE).name)
"""What `save` writes, as one transaction: a push killed between the queue and campaign.json left a
campaign that refused every later push (or queued pairs no batch records)."""
STRATA = ("split", "category")  # the audit stage's control strata (review_queue.csv.meta.json `strata`)


def _ids(values) -> list:
    """Ids as campaign.json lists them: integers or string ids (as_id), in id order."""
    return sorted((as_id(i) for i in values), key=id_order)


def _control_strata(audit: pd.DataFrame, queue: pd.DataFrame, unflagged: pd.Series) -> tuple[dict[str, list], str]:
    """Start-unflagged pair ids of each control stratum, and how they were found.

    By the audit's own strata columns when their sizes match the queue's `stratum_size`; else,
    with a single control stratum covering every unflagged pair, that stratum; else one pooled
    `unflagged` stratum (the control sample read as a simple random sample).
    """
    control = queue[queue["queue"] == "control"]
    sizes = pd.to_numeric(control.groupby("stratum")["stratum_size"].max(), errors="coerce") \
        if "stratum_size" in control.columns else pd.Series(dtype=float)
    pool = audit[unflagged.to_numpy()]
    if all(c in audit.columns for c in STRATA):
        label = pool[list(STRATA)].astype(str).agg("/".join, axis=1)
        members = {h: _ids(pool.loc[label == h, "id"]) for h in sizes.index}
        if len(sizes) and all(len(members[h]) == sizes[h] for h in sizes.index):
            return members, "strata"
    ids = _ids(pool["id"])
    if len(sizes) == 1 and sizes.iloc[0] == len(ids):
        return {str(sizes.index[0]): ids}, "single"
    return {"unflagged": ids}, "pooled"


def prediction_column(audit: pd.DataFrame, source: str = "audit.csv") -> str:
    """`p_error` (the calibrated error probability) when the audit has it, else `risk` (older audits).
    An audit ranked by `learned_ranking.json` (`rule_risk` beside `risk`) is drawn by its `risk`: the
    probability refitted from the campaign's verdicts, which p_error without `--calibration` is not."""
    if "p_error" not in audit.columns or "rule_risk" in audit.columns:
        return "risk"
    values = pd.to_numeric(audit["p_error"], errors="coerce")
    bad = ~values.between(0, 1)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(f"p_error {audit['p_error'].iloc[row]} is not a probability in [0, 1]", file=source,
                         row=row + 2, id=as_id(audit["id"].iloc[row]))
    return "p_error"


def _floats(values) -> list[float]:
    return [round(float(v), 12) for v in values]


def _id_kind(queue_path: Path) -> dict:
    """campaign.json's `ids` key: written for string ids only (an integer campaign stays byte-identical)."""
    return {"ids": "string"} if Layout.of(queue_path).string_ids else {}


@dataclass
class Campaign:
    folder: Path
    record: dict
    queue: pd.DataFrame  # every pair pushed, its audit columns + queue, stratum, batch
    layout: Layout
    """The start audit's pair: the campaign's review_queue.csv keeps its language-coded columns."""
    loaded: dict[str, str] = field(default_factory=dict)
    """sha256 of the campaign's files as `load` read and checked them: `save` may replace exactly those."""

    @classmethod
    def exists(cls, folder: Path) -> bool:
        return (Path(folder) / CAMPAIGN_FILE).exists()

    @classmethod
    def load(cls, folder: str | Path) -> "Campaign":
        folder = Path(folder)
        check_campaign_folder(folder)
        path = folder / CAMPAIGN_FILE
        record = read_json(path)  # strict: a NaN, a key twice or a truncated file is one line
        layout = Layout.of(folder / QUEUE_FILE)
        check_record(record, str(path), layout.string_ids)  # every key and type, ids of the audit's kind
        if record["format"] == 3:
            _check_inclusion(record, str(path))
            _check_drawn(record, str(path))
        queue = read_audit(folder / QUEUE_FILE, QUEUE_COLUMNS + ["batch"])
        if "batch" not in queue.columns:
            raise InputError("missing column 'batch'", file=str(folder / QUEUE_FILE))
        loaded = {name: digest_of(folder / name) for name in FILES if (folder / name).is_file()}
        return cls(folder, record, queue.assign(batch=pd.to_numeric(queue["batch"]).astype(int)), layout, loaded)

    @classmethod
    def start(cls, folder: str | Path, *, project: str, audit: pd.DataFrame, audit_path: Path,
              queue: pd.DataFrame, queue_path: Path, seed: int = 0) -> "Campaign":
        """The design of the start audit + queue (nothing written until `save`)."""
        missing = set(queue["id"]) - set(audit["id"])
        if missing:
            raise InputError(f"{len(missing)} queued id(s) are not in the audit (e.g. {min(missing)})",
                             file=str(queue_path))
        if "stratum_risk_min" in queue.columns and (queue["queue"] == "control").any():
            return cls._start_sampled(folder, project, audit, audit_path, queue, queue_path, seed)
        risk = set(queue.loc[queue["queue"] == "risk", "id"])
        unflagged = ~audit["flagged"] & ~audit["id"].isin(risk)
        members, how = _control_strata(audit, queue, unflagged)
        control = queue[queue["queue"] == "control"]
        if how == "pooled":
            control = control.assign(stratum="unflagged")
        queue = pd.concat([queue[queue["queue"] == "risk"], control], ignore_index=True).assign(batch=0)
        audit_sha = digest_of(Path(audit_path))
        record = {
            "format": 1, **_id_kind(queue_path), "project": project,
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "design": {"audit_sha256": audit_sha, "queue_sha256": digest_of(Path(queue_path)),
                       "flagged": _ids(audit.loc[audit["flagged"] | audit["id"].isin(risk), "id"]),
                       "unflagged_strata": members, "strata_from": how},
            "batches": [{"batch": 0, "kind": "start", "audit_sha256": audit_sha,
                         "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                         "risk": _ids(risk), "control": _ids(control["id"])}],
        }
        return cls(Path(folder), record, queue, Layout.of(queue_path))

    @classmethod
    def _start_sampled(cls, folder, project, audit, audit_path, queue, queue_path, seed=0) -> "Campaign":
        """Format 3: the queue's strata over every pair of the start audit, recorded as id lists; the
        start batch a draw (risk queue π = 1, control π = n_h / N_h) with the audit's prediction."""
        design = queue_design(audit, queue, str(queue_path))
        strata = {str(h): _ids(ids) for h, ids in design.stratum.groupby(design.stratum).groups.items()}
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        control = _ids(design.control)
        audit_sha = digest_of(Path(audit_path))
        column = prediction_column(audit, str(audit_path))
        census = [CENSUS] if CENSUS in strata else []
        order = audit["id"].map(as_id)
        pi = draw.start_inclusion(design.stratum.loc[audit["id"].to_numpy()], design.control, set(census))
        record = {
            "format": 3, **_id_kind(queue_path), "project": project, "started": now,
            "design": {"audit_sha256": audit_sha, "queue_sha256": digest_of(Path(queue_path)),
                       "strata": strata, "census": census, "control": control},
            "batches": [{"batch": 0, "kind": "start", "audit_sha256": audit_sha, "created": now,
                         "risk": strata.get(CENSUS, []), "control": control, "pool": order.tolist(),
                         "p": _floats(audit[column]), "pi": _floats(pi), "prediction": column, "seed": seed,
                         "scale": None, "floor": None, "certain": None, "p_floor": draw.P_FLOOR}],
        }
        record["batches"][0]["sealed"] = seal(record["batches"][0])
        return cls(Path(folder), record, queue.assign(batch=0), Layout.of(queue_path))

    @property
    def sampled(self) -> bool:
        """A format-2 design (strata over the whole population, inclusion probabilities)."""
        return self.record["format"] in (2, 3)

    @property
    def drawn(self) -> bool:
        """A format-3 design: every batch a probability draw (the prediction-powered estimate)."""
        return self.record["format"] == 3

    @property
    def population(self) -> set[int | str]:
        design = self.record["design"]
        if self.sampled:
            return {i for ids in design["strata"].values() for i in ids}
        return set(design["flagged"]) | {i for ids in design["unflagged_strata"].values() for i in ids} \
            | set(self.queue["id"])

    def design(self) -> Design:
        """The estimator's design (format 2): the start strata and control sample. Batches change
        nothing in it: their reviewed pairs count exactly, their queued pairs stay unreviewed."""
        design = self.record["design"]
        stratum = pd.Series({i: h for h, ids in design["strata"].items() for i in ids}, dtype=object)
        return Design(stratum, set(design["control"]), census=set(design["census"]))

    def check_predictions(self, audit: pd.DataFrame, audit_path: Path) -> None:
        """Each batch drawn from this very audit (same sha256) recorded its prediction as the audit has it:
        an edited `p` (a start batch's above all: its π is the design's, so nothing else re-derives it) is one
        line naming the batch and the pair."""
        sha = digest_of(Path(audit_path))
        for b in self.record["batches"]:
            column = b.get("prediction")
            if b["audit_sha256"] != sha or column not in audit.columns or b.get("p") is None:
                continue
            values = dict(zip(audit["id"].map(as_id), pd.to_numeric(audit[column], errors="coerce")))
            for j, (i, p) in enumerate(zip(b["pool"], b["p"])):
                if i in values and not math.isclose(p, round(float(values[i]), 12), rel_tol=0, abs_tol=1e-9):
                    raise InputError(f"batches[{b['batch']}].p[{j}] = {p!r} is not the {column} {values[i]:.6g} of "
                                     f"the audit it was drawn from (edited?)", file=str(self.folder / CAMPAIGN_FILE),
                                     id=i)

    def check_start_queue(self, queue_path: Path) -> None:
        if digest_of(Path(queue_path)) != self.record["design"]["queue_sha256"]:
            raise InputError(f"campaign {self.folder} was started with another review queue: add pairs with "
                             "--next N (no --queue), or start a new campaign in another folder",
                             file=str(queue_path))

    def reviewed(self) -> set[int | str]:
        """Question ids with a verdict or an annotation in the campaign folder."""
        ids: set[int | str] = set()
        for name, read in ((VERDICTS_FILE, read_verdicts), (RAW_FILE, read_raw)):
            if (self.folder / name).exists():
                ids |= set(read(self.folder / name, layout=self.layout)["id"])
        return ids

    def add_batch(self, audit: pd.DataFrame, audit_path: Path, n: int, exclude: set[int | str],
                  rule: draw.DrawRule = draw.DrawRule()) -> pd.DataFrame:
        """Queue the `n` riskiest pairs of `audit` never queued, reviewed or in `exclude` (on the server);
        format 3: a draw of expected size `n` from the pairs never queued or reviewed, on the server or not
        (`_draw_batch`; push imports only the drawn pairs not there yet)."""
        if n < 1:
            raise InputError("--next must be >= 1")
        outside = set(audit["id"]) - self.population
        if outside:
            raise InputError(f"{len(outside)} id(s) are not in the campaign's population (e.g. {min(outside)}): "
                             "re-run the audit on the campaign's split", file=str(audit_path))
        taken = set(self.queue["id"]) | self.reviewed()
        if self.drawn:  # a pair on the server that no batch drew and nobody reviewed stays in the pool: left
            # out, it would be a pair outside the pool without a verdict, and the batch could never enter the
            # estimate (a pilot push of every pair: "0 unreviewed pair(s) left", the batch pending for ever)
            rows = self._draw_batch(audit, audit_path, n, taken, rule)
            self.record["batches"][-1]["sealed"] = seal(self.record["batches"][-1])
            return rows
        taken |= exclude
        pool = audit[~audit["id"].isin(taken)].sort_values(["risk", "id"], ascending=[False, True])
        k = len(self.record["batches"])
        rows = pool.head(n).assign(queue="risk", stratum=f"batch{k}", batch=k)
        self.record["batches"].append({
            "batch": k, "kind": "next", "audit_sha256": digest_of(Path(audit_path)),
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "risk": _ids(rows["id"]), "control": []})
        self.queue = pd.concat([self.queue, rows], ignore_index=True)
        return rows

    def _draw_batch(self, audit: pd.DataFrame, audit_path: Path, n: int, taken: set,
                    rule: draw.DrawRule) -> pd.DataFrame:
        """A Poisson draw of expected size `n` from the pairs never queued or reviewed, π growing with
        the audit's prediction (`rule`); queued in prediction order, so the certain pairs come first."""
        self._check_covers(audit, audit_path, taken)
        column = prediction_column(audit, str(audit_path))
        pool = audit[~audit["id"].isin(taken)].sort_values([column, "id"], ascending=[False, True], kind="mergesort")
        k = len(self.record["batches"])
        p = pool[column].to_numpy(float)
        if not 0 <= rule.certain <= 1:
            raise InputError(f"--certain must be a share in [0, 1], not {rule.certain:g}")
        draw.check_informative(p, rule.p_floor, "the batch's pool", str(audit_path))
        fitted = self._recalibration(audit, column) if rule.recalibrate else None
        pi, scale, floor, certain = rule.inclusion(rule.prediction(p, fitted), n)
        picked = rule.draw(pi, self.record["batches"][0]["seed"], k)
        rows = pool[picked].assign(queue="risk", stratum=f"batch{k}", batch=k)
        self.record["batches"].append({
            "batch": k, "kind": "next", "audit_sha256": digest_of(Path(audit_path)),
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "risk": [as_id(i) for i in rows["id"]], "control": [], "pool": [as_id(i) for i in pool["id"]],
            "p": _floats(p), "pi": _floats(pi), "prediction": column, "seed": self.record["batches"][0]["seed"],
            "scale": None if np.isinf(scale) else float(scale), "floor": float(floor), "certain": certain,
            "p_floor": float(rule.p_floor), "sampling": rule.sampling,
            **({} if rule.tradeoff is None else {"tradeoff": float(rule.tradeoff)}),
            **({} if fitted is None else {"recalibration": fitted.record()})})
        self.queue = pd.concat([self.queue, rows], ignore_index=True)
        return rows

    def _check_covers(self, audit: pd.DataFrame, audit_path: Path, taken: set) -> None:
        """A draw's pool is every pair no batch drew and nobody reviewed: the estimator counts a pair outside a
        batch's pool as known, so a pool without some of them (an audit re-run on one split only) makes a
        batch that never enters the estimate of the whole population. Refused before anything is drawn."""
        left = sorted(self.population - taken - set(audit["id"].map(as_id)), key=id_order)
        if left:
            raise InputError(f"this audit leaves out {len(left)} of the campaign's pairs that no batch drew and nobody "
                             f"reviewed (e.g. id {left[0]}): a batch draws from all of them, else it could never enter "
                             "the estimate; re-run the audit on the campaign's whole population (every split the start "
                             "audit had)", file=str(audit_path), id=left[0])

    def blocked(self, ids: set, known: set) -> list[tuple[int, int]]:
        """(batch, pairs) of the batches whose pool left out unreviewed pairs of `ids` (drawn from an audit of
        part of the population, before `_check_covers`): they cannot enter an estimate over `ids`."""
        drawn_before: set = set()
        out = []
        for b in self.record["batches"]:
            outside = ids - set(b["pool"]) - known - drawn_before
            if b["kind"] != "start" and outside:
                out.append((b["batch"], len(outside)))
            drawn_before |= {*b["risk"], *b["control"]}
        return out

    def _recalibration(self, audit: pd.DataFrame, column: str) -> recalibration.Recalibration:
        """The next batch's recalibration: fitted on this audit's prediction of the pairs earlier batches drew
        that have a final verdict now (never a pair reviewed outside the design)."""
        drawn = {i for b in self.record["batches"] for i in [*b["risk"], *b["control"]]}
        legal: dict = {}
        if (self.folder / VERDICTS_FILE).exists():
            final = read_verdicts(self.folder / VERDICTS_FILE, layout=self.layout)
            final = final[(final["verdict"] != "") & final["id"].isin(drawn)]
            legal = dict(zip(final["id"].map(as_id), final["verdict"] == "legal"))
        return recalibration.fit_known(audit["id"].map(as_id).tolist(), audit[column].to_numpy(float), legal)

    def batch_draws(self, ids) -> list[draw.BatchDraw]:
        """Every batch's draw over the population `ids` (arrays in that order); p the prediction the batch
        used (its recorded recalibration applied to the recorded raw p)."""
        index = {i: j for j, i in enumerate(ids)}
        out = []
        for b in self.record["batches"]:
            pool = np.zeros(len(index), bool)
            pi, p, drawn = np.zeros(len(index)), np.zeros(len(index)), np.zeros(len(index), bool)
            at = np.array([index.get(i, -1) for i in b["pool"]], dtype=int)
            keep = at >= 0
            pool[at[keep]] = True
            pi[at[keep]] = np.asarray(b["pi"], float)[keep]
            p[at[keep]] = _prediction(b)[keep]
            picked = [index[i] for i in [*b["risk"], *b["control"]] if i in index]
            drawn[picked] = True
            out.append(draw.BatchDraw(b["batch"], pool, pi, p, drawn, fixed=b.get("sampling") == "brewer"))
        return out

    def design_queue(self) -> pd.DataFrame:
        """The cumulative queue; batch rows count themselves. Format 1: each control stratum's size =
        its start-unflagged pairs no batch took (format 2 keeps the start draw as it was)."""
        queue = self.queue.copy()
        for column in ("stratum_size", "stratum_sampled"):
            queue[column] = pd.to_numeric(queue[column], errors="coerce") if column in queue else float("nan")
        control = queue["queue"] == "control"
        if not self.sampled:
            risk = set(queue.loc[queue["queue"] == "risk", "id"])
            members = self.record["design"]["unflagged_strata"]
            sampled = queue[control].groupby("stratum")["id"].size()
            sizes = {h: len(set(ids) - risk) for h, ids in members.items()}
            queue.loc[control, "stratum_size"] = queue.loc[control, "stratum"].map(sizes)
            queue.loc[control, "stratum_sampled"] = queue.loc[control, "stratum"].map(sampled)
        later = ~control & (queue["batch"] > 0)
        counts = queue[later].groupby("batch")["id"].transform("size")
        queue.loc[later, "stratum_size"] = counts
        queue.loc[later, "stratum_sampled"] = counts
        queue["sample_weight"] = queue["stratum_size"] / queue["stratum_sampled"]
        return queue

    def design_population(self, audit: pd.DataFrame, audit_path: Path) -> pd.DataFrame:
        """`audit` with the start audit's flags: the estimate's strata are the design's, not today's flags."""
        outside = set(audit["id"]) - self.population
        if outside:
            raise InputError(f"{len(outside)} id(s) are not in the campaign's population (e.g. {min(outside)})",
                             file=str(audit_path))
        if self.sampled:
            return audit
        return audit.assign(flagged=audit["id"].isin(self.record["design"]["flagged"]))

    def save(self) -> None:
        """campaign.json and the cumulative review_queue.csv (+ sidecars), as one transaction: a kill
        at any instant leaves the previous campaign or the new one (the next reader settles it)."""
        queue = self.design_queue()
        with guard_outputs(self.folder, command="annotate push", names=FILES, adopt=self.loaded):
            self.layout.queue.write(self.folder / QUEUE_FILE, queue, campaign=CAMPAIGN_FILE,
                                    batches=len(self.record["batches"]), n_risk=int((queue["queue"] == "risk").sum()),
                                    n_control=int((queue["queue"] == "control").sum()), **self.layout.meta())
            write_json(self.folder / CAMPAIGN_FILE, self.record)
            write_sidecar(self.folder / CAMPAIGN_FILE, project=self.record["project"])


def _prediction(batch: dict) -> np.ndarray:
    """The prediction a batch drew and is estimated with: its raw p, recalibrated when it records a fit,
    floored at its `p_floor` (absent: a batch from before the floor, p as it was)."""
    fitted = batch.get("recalibration")
    p = recalibration.Recalibration(**fitted).apply(batch["p"]) if fitted else np.asarray(batch["p"], float)
    return draw.floored(p, batch.get("p_floor"))


def _check_inclusion(record: dict, source: str) -> None:
    """An edited inclusion probability is one line naming the pair: the start batch's π must be the
    design's (1 in the census, n_h / N_h in a band), a `--next` batch's the draw rule's."""
    stratum = pd.Series({i: h for h, ids in record["design"]["strata"].items() for i in ids}, dtype=object)
    for b in record["batches"]:
        pool, pi = b["pool"], np.asarray(b["pi"], float)
        if b["kind"] == "start":
            want = draw.start_inclusion(stratum.loc[pool], set(record["design"]["control"]),
                                        set(record["design"]["census"]))
            bad = ~np.isclose(pi, want, rtol=0, atol=1e-9)
        else:
            want = draw.expected_pi(_prediction(b), math.inf if b["scale"] is None else b["scale"], b["floor"] or 0.0,
                                    b.get("tradeoff"))
            bad = ~np.isclose(pi, want, rtol=0, atol=1e-9) & ~((pi == 1) & (np.arange(len(pi)) < (b["certain"] or 0)))
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise InputError(f"batches[{b['batch']}].pi[{j}] = {float(pi[j])!r} is not the design's inclusion probability "
                             f"{want[j]:.6g} (edited?)", file=source, id=pool[j])


def _redrawn(b: dict, seed: int, k: int) -> np.ndarray:
    """The pool pairs a `--next` batch draws from its recorded π with the campaign's seed, by the sampling it
    records (absent: Poisson, every batch before fixed-size draws): the draw itself, re-run."""
    sampling = b.get("sampling") or "poisson"
    pi = np.asarray(b["pi"], dtype=float)
    return draw.poisson_draw(pi, seed, k) if sampling == "poisson" else draw.draw_pool(pi, seed, k, sampling)


def _check_drawn(record: dict, source: str) -> None:
    """The pairs each batch drew, re-derived before any estimate: the start batch's are the design's (its
    census risk queue, its control sample), a `--next` batch's what its recorded π, seed and sampling draw;
    a sealed batch (`seal`) still is as drawn (its p, p_floor and pool, which no seed re-derives). An edit is
    one line naming the batch (and the pair where one is named)."""
    design = record["design"]
    seed = record["batches"][0]["seed"]
    for k, b in enumerate(record["batches"]):
        key = f"batches[{b['batch']}]"
        if b["kind"] == "start":
            census = {i for h in design["census"] for i in design["strata"].get(h, [])}
            wanted = (("risk", b["risk"], census, "the design's census risk queue"),
                      ("control", b["control"], set(design["control"]), "the design's control sample"))
        else:
            picked = np.asarray(b["pool"], dtype=object)[_redrawn(b, seed, k)]
            wanted = (("risk", [*b["risk"], *b["control"]], set(picked), f"the pairs its draw (seed {seed}, batch {k}) "
                                                                         "gives"),)
        for name, ids, want, what in wanted:
            extra, missing = sorted(set(ids) - want, key=id_order), sorted(want - set(ids), key=id_order)
            if extra or missing:
                i = (extra or missing)[0]
                raise InputError(f"{key}.{name} {'holds' if extra else 'lacks'} pair {i}, "
                                 f"{'not among' if extra else 'one of'} {what} (edited?)", file=source, id=i)
        check_seal(b, source)  # what no seed re-derives
