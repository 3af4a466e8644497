"""Library API of the eval stage: `evaluate(EvalConfig) -> EvalResult`, `write_outputs(result, DIR)`.

Per-query values are computed once per system on the full question set; every subset, CI, test,
ranking shift, null draw and FR-NL gap is an index into (or a product with) those matrices.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from bbsard_audit.base.errors import InputError
from bbsard_audit.base.contracts.estimate import Estimate
from bbsard_audit.base.contracts.eval_tables import (CLEANED, CLEANED_PAIRS, FR_NL_GAP, FRAGILITY, METRICS, PAIRWISE,
                                                     RANK_SETS, RANKING_SHIFT)
from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.table import SAFE_CELLS, FileRecord, id_order
from bbsard_audit.base.io import file_ref, write_csv, write_sidecar

from . import cleaned
from .bootstrap import Bootstrap, holm, paired_randomisation
from .fragility import expected_unverified_errors, removal_fragility
from .metrics import SIGNATURE, hit_matrix, parse_metrics, per_query_matrix
from .options import EvalConfig
from .ranking_shift import Shift, kendall_tau_b, null_means, position, tau_ap
from .runs import Qrels, Run
from .subsets import Verdicts, build_subsets, language_pairs, question_groups, read_flags

OUTPUTS = ("metrics", "ranking_shift", "pairwise", "per_query", "null_model", "fr_nl_gap", "fragility")
CAMPAIGN_OUTPUTS = ("cleaned", "rank_sets", "cleaned_pairs")
"""Written only with a campaign (`--campaign`): eval without one writes what it always wrote."""
FRAGILITY_COLUMNS = ["metric", "system_a", "system_b", "delta", "n_queries", "removal_fragility", "p_value",
                     "expected_errors_unverified", "expected_errors_unverified_high", "robust"]
REMOVAL_SUBSETS = ("verified", "flagged", "unflagged")
_NEEDS_CORPUS = "--retriever needs --dataset SRC with the article corpus (articles_{fr,nl}.csv)"


@dataclass
class EvalResult:
    tables: dict[str, pd.DataFrame]
    runs: dict[str, Run]
    """Built-in retriever runs (and `NAME.corrected` re-runs) to write as TREC files."""
    meta: dict
    warnings: list[str]


@dataclass
class _System:
    name: str
    values: np.ndarray  # (metrics x queries of the full set)
    missing: np.ndarray  # (queries,)


def evaluate(config: EvalConfig, progress: Callable[[str], None] = lambda step: None) -> EvalResult:
    started = time.perf_counter()
    metrics = _checked_metrics(config)
    progress("loading qrels and runs")
    inputs = _read_inputs(config)
    dataset, qrels, runs, layout, warnings = inputs.dataset, inputs.qrels, inputs.runs, inputs.layout, inputs.warnings
    verdicts, flags = inputs.verdicts, inputs.flags
    full = qrels.qids

    built, corrected_runs, retriever_params = _builtin_runs(config, dataset, qrels, verdicts, runs, progress, layout)
    runs.update(built)
    if not runs:
        raise InputError("no system to evaluate: give --run NAME=PATH or --retriever")
    warnings += _input_warnings(runs, full, qrels, verdicts, flags)

    run_depth = _run_depth(runs, metrics, len(dataset.corpus.ids) if dataset is not None and dataset.corpus else None)
    warnings += [f"run {name}: ranks at most {d['depth']} document(s) per query, so {', '.join(d['beyond_depth'])} "
                 f"cut deeper than the run and equal the metric at depth {d['depth']} (run_depth in eval.meta.json)"
                 for name, d in run_depth.items() if d["beyond_depth"]]

    tables, subsets, exposure, campaign_meta = _tables(config, inputs, corrected_runs, metrics, progress)

    meta = {
        "inputs": _inputs(config, runs, qrels, dataset),
        **layout.meta(),
        "metrics": [m.name for m in metrics],
        "k_values": sorted({m.k for m in metrics}),
        "signature": SIGNATURE,
        "seed": config.seed,
        "resamples": config.resamples,
        "null_draws": config.null_draws,
        "alpha": config.alpha,
        "ci": "95% percentile bootstrap over queries (systems and metrics share the resamples)",
        "pairwise_test": "two-sided paired sign-flip randomisation test, Holm-corrected per (metric, subset)",
        "keep": list(config.keep),
        "corrected": config.corrected,
        "subsets": {n: len(ids) for n, ids in subsets.items()},
        "fragility": exposure,
        "retrievers": retriever_params,
        "run_depth": run_depth,
        **campaign_meta,
        "warnings": warnings,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return EvalResult(tables, {**built, **{f"{n}.corrected": r for n, r in corrected_runs.items()}}, meta, warnings)


def _checked_metrics(config: EvalConfig) -> list:
    """The metrics to compute, or one line on the first option out of range, before anything is read."""
    metrics = parse_metrics(config.metrics)
    if not metrics:
        raise InputError("no metric given")
    if config.resamples < 1000 or config.null_draws < 1:
        raise InputError("--resamples must be >= 1000 and --null-draws >= 1")
    if config.corrected and config.verdicts is None:
        raise InputError("--corrected needs --verdicts FILE (its corrected_<target> column, corrected_nl for bBSARD)")
    if config.retrievers and config.dataset is None:
        raise InputError(_NEEDS_CORPUS)
    return metrics


@dataclass
class _Inputs:
    """What `evaluate` reads before it scores, read in this order (the first bad file is the one named);
    `warnings` collects every warning of the run from here on."""

    dataset: object | None
    qrels: Qrels
    runs: dict[str, Run]
    layout: Layout
    verdicts: Verdicts | None
    flags: dict[str, bool] | None
    estimate: Estimate | None
    warnings: list[str]


def _read_inputs(config: EvalConfig) -> _Inputs:
    warnings: list[str] = []
    dataset = None
    if config.dataset is not None and (config.qrels is None or config.retrievers):
        from bbsard_audit.base.dataset import load_dataset

        dataset = load_dataset(config.dataset, with_corpus=bool(config.retrievers))
    if config.qrels is not None:
        qrels = Qrels.read(config.qrels)
    elif dataset is not None:
        qrels = Qrels.from_dict(dataset.qrels(config.split), source=f"{config.dataset} ({config.split})")
    else:
        raise InputError("give --qrels FILE or --dataset SRC")
    warnings += qrels.warnings

    runs: dict[str, Run] = {}
    for name, path in config.runs.items():
        runs[name] = Run.read(path, name)
        runs[name].check_ids(qrels)
    layout = _layout(config, dataset)
    verdicts = Verdicts.read(config.verdicts, layout=layout) if config.verdicts is not None else None
    flags = read_flags(config.audit) if config.audit is not None else None
    estimate_path = _estimate_path(config)
    estimate = Estimate.read(estimate_path) if estimate_path is not None else None
    if estimate is not None and verdicts is not None and estimate.stale(verdicts.fingerprint):
        warnings.append(f"{estimate_path.name} is stale: computed from {estimate.verdicts.final:,} final verdict(s), "
                        f"{Path(config.verdicts).name} holds {verdicts.fingerprint[0]:,} other ones; the fragility's "
                        "expected errors are the stale estimate's (re-run `annotate estimate`)")
    return _Inputs(dataset, qrels, runs, layout, verdicts, flags, estimate, warnings)


def _input_warnings(runs: Mapping[str, Run], full: list[str], qrels: Qrels, verdicts: Verdicts | None,
                    flags: dict[str, bool] | None) -> list[str]:
    """What the runs, verdicts and audit hold that the evaluated set does not, and the reverse."""
    warnings: list[str] = []
    for run in runs.values():
        warnings += run.warnings
        extra = set(run.ranking) - set(qrels.relevant)
        if extra:
            warnings.append(f"run {run.name}: {len(extra)} query(ies) absent from the qrels ignored "
                            f"(e.g. {', '.join(sorted(extra)[:5])})")
        absent = [q for q in full if q not in run.ranking]
        if absent:
            warnings.append(f"run {run.name}: {len(absent)} judged query(ies) missing from the run score 0 "
                            f"(e.g. {', '.join(absent[:5])})")
    for label, known in (("verdicts", verdicts.verdict if verdicts else {}), ("audit", flags or {})):
        unknown = set(known) - set(full)
        if unknown:
            warnings.append(f"{label}: {len(unknown)} question id(s) not in the evaluated set ignored")
    return warnings


def _tables(config: EvalConfig, inputs: _Inputs, corrected_runs: dict[str, Run], metrics: list,
            progress: Callable[[str], None]) -> tuple[dict[str, pd.DataFrame], dict, dict, dict]:
    """Every output table, from the per-query values computed once per system: (tables, subsets,
    fragility exposure, campaign meta); warnings go to `inputs.warnings`."""
    qrels, verdicts, flags, warnings = inputs.qrels, inputs.verdicts, inputs.flags, inputs.warnings
    full = qrels.qids
    progress("scoring")
    depth = max(m.k for m in metrics)
    systems = {n: _score(r, qrels, full, metrics, depth) for n, r in inputs.runs.items()}
    subsets = build_subsets(full, verdicts, config.keep, flags, corrected=config.corrected)
    for name, ids in subsets.items():
        if not ids:
            warnings.append(f"subset {name} is empty and is not evaluated")
    values = _subset_values(systems, subsets, corrected_runs, qrels, metrics, depth, warnings, inputs.layout.pair)

    progress("bootstrap, paired tests, ranking shift")
    metrics_df, pairwise_df = _metrics_and_pairs(values, subsets, metrics, config)
    shift_df = _ranking_shift(values, metrics, pairwise_df, config.alpha)
    progress("null model")
    null_df = _null_model(values, subsets, metrics, config)
    progress("FR-NL gap")
    gap_df = _side_gap(systems, full, metrics, verdicts, flags, config, inputs.layout.pair)
    per_query_df = _per_query(values, subsets, metrics, verdicts, flags)
    campaign_tables, campaign_meta, left = {}, {}, None
    if config.campaign is not None:
        progress("cleaned benchmark")
        corrected_systems = {n: values["corrected"][n] for n in corrected_runs if n in values.get("corrected", {})}
        campaign_tables, campaign_meta, left = _cleaned(config, systems, corrected_systems, full, metrics, verdicts,
                                                        warnings)
    fragility_df, exposure = _fragility(values, full, metrics, pairwise_df, verdicts, flags, inputs.estimate, left)
    tables = {"metrics": metrics_df, "ranking_shift": shift_df, "pairwise": pairwise_df,
              "per_query": per_query_df, "null_model": null_df, "fr_nl_gap": gap_df,
              "fragility": fragility_df, **campaign_tables}
    return tables, subsets, exposure, campaign_meta


CONTRACTS = {"metrics": METRICS, "ranking_shift": RANKING_SHIFT, "pairwise": PAIRWISE, "fragility": FRAGILITY,
             "fr_nl_gap": FR_NL_GAP, "cleaned": CLEANED, "rank_sets": RANK_SETS, "cleaned_pairs": CLEANED_PAIRS}


def write_outputs(result: EvalResult, out: str | Path) -> list[Path]:
    """Every table as DIR/NAME.csv + NAME.meta.json, built-in runs as DIR/runs/NAME.trec, and eval.meta.json."""
    out = Path(out)
    written = []
    for name, run in result.runs.items():
        path = run.write_trec(out / "runs" / f"{name}.trec")
        written.append(path)
    for name in (*OUTPUTS, *(n for n in CAMPAIGN_OUTPUTS if n in result.tables)):
        path, table = out / f"{name}.csv", result.tables[name]
        if name in CONTRACTS:
            record = CONTRACTS[name].write_file(path, table)
        else:
            record = FileRecord.of(write_csv(path, table), len(table), SAFE_CELLS)
        write_sidecar(path, files=[record], table=name, **result.meta)
        written.append(path)
    written.append(write_sidecar(out / "eval", outputs=[p.name for p in written], **result.meta))
    return written


# ---------------------------------------------------------------- steps

def _layout(config, dataset) -> Layout | None:
    """The pair and id kind: the audit's (its sidecar), else the dataset's; None: the verdicts file's own
    sidecar says (none: fr -> nl, integer ids)."""
    if config.audit is not None:
        return Layout.of(config.audit)
    if dataset is not None:
        return Layout(dataset.pair, dataset.string_ids)
    return Layout.of(config.verdicts) if config.verdicts is not None else Layout()


def _builtin_runs(config, dataset, qrels, verdicts, runs, progress, layout):
    """Run the built-in retrievers on the judged questions; re-run only the corrected Dutch ones."""
    built, corrected, params = {}, {}, {}
    if not config.retrievers:
        return built, corrected, params
    if dataset is None or dataset.corpus is None:
        raise InputError(_NEEDS_CORPUS)
    from .retrievers import make_retriever

    pairs = {str(p.id): p for p in dataset.select(config.split) if str(p.id) in qrels.relevant}
    missing = set(qrels.relevant) - set(pairs)
    if missing:
        raise InputError(f"{len(missing)} judged question(s) have no text in {config.dataset} "
                         f"({config.split}), e.g. {', '.join(sorted(missing)[:5])}")
    for spec in config.retrievers:
        for lang in config.langs or layout.pair:
            retriever = make_retriever(spec, lang, config.normaliser)
            if retriever.name in runs or retriever.name in built:
                raise InputError(f"system name {retriever.name!r} is given twice")
            progress(f"indexing {retriever.name}")
            retriever.index(dataset.corpus.ids, dataset.corpus.texts(lang))
            if lang not in layout.pair:
                raise InputError(f"--lang {lang}: the dataset's questions are in {' and '.join(layout.pair)}")
            questions = {q: p.source if lang == layout.pair.source else p.target for q, p in pairs.items()}
            progress(f"retrieving {retriever.name}")
            run = built[retriever.name] = retriever.search(questions, config.depth)
            params[retriever.name] = {**retriever.params, "depth": config.depth}
            if config.corrected and lang == layout.pair.target:
                changed = {q: text for q, text in verdicts.corrected_target.items()
                           if q in questions and text.strip() != questions[q].strip()}
                corrected[retriever.name] = run.replace(retriever.search(changed, config.depth)) if changed else run
                params[retriever.name]["corrected_queries_rerun"] = sorted(changed, key=id_order)
    return built, corrected, params


def _run_depth(runs: Mapping[str, Run], metrics, corpus_size: int | None) -> dict[str, dict]:
    """Per run: its depth (most documents ranked for a query) and the metrics cut deeper than it. A run
    that ranks the whole corpus (`corpus_size`, when known) is complete at any cut-off."""
    out = {}
    for name, run in runs.items():
        depth = run.depth()
        complete = corpus_size is not None and depth >= corpus_size
        out[name] = {"depth": depth, "beyond_depth": [] if complete else [m.name for m in metrics if m.k > depth]}
    return out


def _score(run: Run, qrels: Qrels, qids, metrics, depth) -> _System:
    hits = hit_matrix(run, qrels, qids, depth)
    return _System(run.name, per_query_matrix(hits, metrics), hits.missing)


def _subset_values(systems, subsets, corrected_runs, qrels, metrics, depth, warnings, pair):
    """subset -> {system: _System restricted to the subset's queries}."""
    index = {q: i for i, q in enumerate(subsets["full"])}
    out = {}
    for name, ids in subsets.items():
        if not ids:
            continue
        if name == "corrected":
            out[name] = _corrected_values(systems, corrected_runs, qrels, ids, metrics, depth, warnings, pair)
            continue
        cols = np.fromiter((index[q] for q in ids), dtype=np.int64, count=len(ids))
        out[name] = {s: _System(s, v.values[:, cols], v.missing[cols]) for s, v in systems.items()}
    return out


def _corrected_values(systems, corrected_runs, qrels, ids, metrics, depth, warnings, pair):
    """Target-language (Dutch) built-in runs re-retrieved on corrected questions; source-language
    (French) runs are unchanged by the corrections; a target (or unlabelled) run from a file cannot be
    re-run and is left out."""
    french = ({src for src, _ in language_pairs(list(systems), pair).values()}
              | {s for s in systems if s.lower().endswith(f"_{pair.source}")})
    values, left_out = {}, []
    for name, system in systems.items():
        if name in corrected_runs:
            values[name] = _score(corrected_runs[name], qrels, ids, metrics, depth)
        elif name in french:
            values[name] = system
        else:
            left_out.append(name)
    if left_out:
        warnings.append(f"subset corrected: {', '.join(left_out)} left out (a run file cannot be re-retrieved "
                        "on the corrected Dutch questions; use --retriever)")
    return values


def _metrics_and_pairs(values, subsets, metrics, config):
    metric_rows, pair_rows = [], []
    for subset, by_system in values.items():
        names = list(by_system)
        stack = np.stack([by_system[s].values for s in names])  # (systems x metrics x n)
        n = stack.shape[2]
        boot = Bootstrap(n, config.resamples, config.seed)
        low, high = boot.ci(stack.reshape(-1, n))
        low, high = low.reshape(stack.shape[:2]), high.reshape(stack.shape[:2])
        means = stack.mean(axis=2)
        for i, s in enumerate(names):
            n_missing = int(by_system[s].missing.sum())
            for j, m in enumerate(metrics):
                metric_rows.append({"system": s, "subset": subset, "metric": m.name, "value": means[i, j],
                                    "ci_low": low[i, j], "ci_high": high[i, j], "n_queries": n,
                                    "n_missing": n_missing, "signature": m.signature})
        a, b = np.triu_indices(len(names), k=1)
        if not len(a):
            continue
        diffs = stack[a] - stack[b]  # (pairs x metrics x n)
        pvalues = paired_randomisation(diffs.reshape(-1, n), config.resamples, config.seed + 1)
        pvalues = pvalues.reshape(len(a), len(metrics))
        for j, m in enumerate(metrics):
            adjusted = holm(pvalues[:, j])
            for p in range(len(a)):
                pair_rows.append({"metric": m.name, "subset": subset, "system_a": names[a[p]],
                                  "system_b": names[b[p]], "value_a": means[a[p], j], "value_b": means[b[p], j],
                                  "diff": means[a[p], j] - means[b[p], j], "p_value": pvalues[p, j],
                                  "p_holm": adjusted[p], "significant": bool(adjusted[p] < config.alpha),
                                  "n_queries": n})
    pairwise = pd.DataFrame(pair_rows, columns=["metric", "subset", "system_a", "system_b", "value_a", "value_b",
                                                "diff", "p_value", "p_holm", "significant", "n_queries"])
    if len(pairwise):
        full = pairwise[pairwise.subset == "full"].set_index(["metric", "system_a", "system_b"])["diff"]
        key = pd.MultiIndex.from_frame(pairwise[["metric", "system_a", "system_b"]])
        full_diff = full.reindex(key).to_numpy()
        pairwise["flips_vs_full"] = (np.sign(full_diff) * np.sign(pairwise["diff"].to_numpy())) < 0
    return pd.DataFrame(metric_rows), pairwise


def _ranking_shift(values, metrics, pairwise, alpha):
    rows = []
    full = values.get("full", {})
    for subset, by_system in values.items():
        if subset == "full":
            continue
        names = [s for s in full if s in by_system]
        for j, m in enumerate(metrics):
            a = np.array([full[s].values[j].mean() for s in names])
            b = np.array([by_system[s].values[j].mean() for s in names])
            shift = Shift(tuple(names), a, b)
            flips = shift.flips()
            sig = pairwise[(pairwise.metric == m.name) & (pairwise.subset == subset) & pairwise.significant]
            sig_pairs = {frozenset(p) for p in zip(sig.system_a, sig.system_b)}
            real = [f for f in flips if frozenset(f) in sig_pairs]
            ranks_a, ranks_b = shift.ranks(a), shift.ranks(b)
            rows.append({"metric": m.name, "subset_a": "full", "subset_b": subset,
                         "kendall_tau": shift.kendall_tau if len(names) > 1 else np.nan,
                         "tau_ap": shift.tau_ap if len(names) > 1 else np.nan,
                         "n_flips": len(flips), "n_flips_significant": len(real), "n_systems": len(names),
                         "n_queries_a": full[names[0]].values.shape[1] if names else 0,
                         "n_queries_b": by_system[names[0]].values.shape[1] if names else 0,
                         "order_a": " > ".join(sorted(names, key=ranks_a.get)),
                         "order_b": " > ".join(sorted(names, key=ranks_b.get)),
                         "rank_changes": ";".join(f"{s}:{c:+d}" for s, c in shift.rank_changes().items() if c),
                         "flips": ";".join(f"{x}>{y}" + ("*" if (x, y) in real else "") for x, y in flips)})
    return pd.DataFrame(rows, columns=["metric", "subset_a", "subset_b", "kendall_tau", "tau_ap", "n_flips",
                                       "n_flips_significant", "n_systems", "n_queries_a", "n_queries_b",
                                       "order_a", "order_b", "rank_changes", "flips"])


def _null_model(values, subsets, metrics, config):
    """Remove as many questions as the subset removes, at random, `null_draws` times."""
    rows = []
    full = values.get("full", {})
    names = list(full)
    n_full = len(subsets["full"])
    for subset in REMOVAL_SUBSETS:
        if subset not in values or not 0 < len(subsets[subset]) < n_full:
            continue
        size = len(subsets[subset])
        for j, m in enumerate(metrics):
            per_query = np.stack([full[s].values[j] for s in names])
            base = per_query.mean(axis=1)
            observed = np.array([values[subset][s].values[j].mean() for s in names])
            draws = null_means(per_query, size, config.null_draws, config.seed + 2)
            common = {"metric": m.name, "subset": subset, "n_kept": size, "n_removed": n_full - size,
                      "draws": config.null_draws}
            stats = [(s, "delta", observed[i] - base[i], draws.means[:, i] - base[i], True)
                     for i, s in enumerate(names)]
            if len(names) > 1:
                repeated = np.broadcast_to(base, draws.means.shape)
                stats.append(("*", "kendall_tau", kendall_tau_b(base, observed)[0],
                              kendall_tau_b(repeated, draws.means), False))
                stats.append(("*", "tau_ap", tau_ap(base, observed, names)[0],
                              tau_ap(repeated, draws.means, names), False))
            for system, statistic, obs, null, two_sided in stats:
                pct, p = position(float(obs), null, two_sided)
                finite = null[np.isfinite(null)]
                rows.append({**common, "system": system, "statistic": statistic, "observed": obs,
                             "null_mean": finite.mean() if len(finite) else np.nan,
                             "null_low": np.percentile(finite, 2.5) if len(finite) else np.nan,
                             "null_high": np.percentile(finite, 97.5) if len(finite) else np.nan,
                             "percentile": pct, "p_value": p})
    return pd.DataFrame(rows, columns=["metric", "subset", "system", "statistic", "observed", "null_mean",
                                       "null_low", "null_high", "percentile", "p_value", "n_kept",
                                       "n_removed", "draws"])


def _side_gap(systems, full, metrics, verdicts, flags, config, pair):
    """Per system pair (X_<source>, X_<target>: X_fr, X_nl for bBSARD) and metric: mean source - target
    overall, by verdict, by flag, per question (the table's `fr` / `nl` columns hold source / target)."""
    rows = []
    index = {q: i for i, q in enumerate(full)}
    groups = question_groups(full, verdicts, flags)
    for base, (src, tgt) in language_pairs(list(systems), pair).items():
        gap = systems[src].values - systems[tgt].values  # (metrics x n)
        for level, by_group in groups.items():
            for group, ids in by_group.items():
                cols = np.fromiter((index[q] for q in ids), dtype=np.int64, count=len(ids))
                low, high = Bootstrap(len(cols), config.resamples, config.seed + 3).ci(gap[:, cols])
                for j, m in enumerate(metrics):
                    rows.append({"system": base, "system_fr": src, "system_nl": tgt, "metric": m.name,
                                 "level": level, "group": group, "n_queries": len(cols),
                                 "fr": systems[src].values[j, cols].mean(), "nl": systems[tgt].values[j, cols].mean(),
                                 "gap": gap[j, cols].mean(), "ci_low": low[j], "ci_high": high[j]})
        for i, q in enumerate(full):
            for j, m in enumerate(metrics):
                rows.append({"system": base, "system_fr": src, "system_nl": tgt, "metric": m.name,
                             "level": "question", "group": q, "n_queries": 1,
                             "fr": systems[src].values[j, i], "nl": systems[tgt].values[j, i], "gap": gap[j, i],
                             "ci_low": np.nan, "ci_high": np.nan,
                             "verdict": verdicts.verdict.get(q, "") if verdicts else "",
                             "flagged": _flag(flags, q)})
    columns = ["system", "system_fr", "system_nl", "metric", "level", "group", "n_queries", "fr", "nl", "gap",
               "ci_low", "ci_high", "verdict", "flagged"]
    return pd.DataFrame(rows, columns=columns)


def _estimate_path(config) -> Path | None:
    if config.estimate is not None:
        return Path(config.estimate)
    if config.verdicts is not None and (Path(config.verdicts).parent / "estimate.json").is_file():
        return Path(config.verdicts).parent / "estimate.json"
    return None


def _fragility(values, full, metrics, pairwise, verdicts, flags, estimate, left=None):
    """fragility.csv: every (metric, a, b) with a's full-set mean above b's, and how many judged
    queries that conclusion rests on, against the legal errors expected among unverified queries: from
    the campaign's estimate behind cleaned.csv when one is given (`left`: unreviewed, expected, upper
    bound), else from estimate.json scaled by the audit's flags."""
    systems = values.get("full", {})
    names = list(systems)
    exposure: dict = {"definition": "removal_fragility = smallest k such that the k largest per-query "
                                    "differences a - b sum to at least the total difference (docs/metrics.md)"}
    expected = high = np.nan
    if left is not None:
        unreviewed, expected, high = left
        exposure |= {"unverified_judged_queries": unreviewed, "expected_errors_unverified": expected,
                     "expected_errors_unverified_high": high, "method": cleaned.ERRORS_LEFT_METHOD}
    elif estimate is not None:
        unverified = [q for q in full if verdicts is None or q not in verdicts.verdict]
        flagged = sum(1 for q in unverified if flags is not None and flags.get(q) is True)
        unflagged = sum(1 for q in unverified if flags is not None and flags.get(q) is False)
        errors = expected_unverified_errors(estimate, flagged, unflagged, len(unverified) - flagged - unflagged)
        expected, high = errors.expected, errors.high
        exposure |= {"unverified_judged_queries": len(unverified), "unverified_flagged": flagged,
                     "unverified_unflagged": unflagged, "expected_errors_unverified": expected,
                     "expected_errors_unverified_high": high, "method": errors.method}
    p_full = pairwise[pairwise.subset == "full"].set_index(["metric", "system_a", "system_b"])["p_value"] \
        if len(pairwise) else pd.Series(dtype=float)
    rows = []
    a, b = np.triu_indices(len(names), k=1)
    for j, m in enumerate(metrics):
        stack = np.stack([systems[s].values[j] for s in names])
        diffs = stack[a] - stack[b]
        winner_first = np.where(diffs.sum(axis=1, keepdims=True) >= 0, diffs, -diffs)
        fragility = removal_fragility(winner_first)
        for p in range(len(a)):
            delta = float(diffs[p].mean())
            if fragility[p] == 0:  # a tie on the full set: no conclusion to undo
                continue
            x, y = (names[a[p]], names[b[p]]) if delta > 0 else (names[b[p]], names[a[p]])
            rows.append({"metric": m.name, "system_a": x, "system_b": y, "delta": abs(delta),
                         "n_queries": diffs.shape[1], "removal_fragility": int(fragility[p]),
                         "p_value": p_full.get((m.name, names[a[p]], names[b[p]]), np.nan),
                         "expected_errors_unverified": expected, "expected_errors_unverified_high": high,
                         "robust": bool(fragility[p] > high) if estimate is not None or left is not None else pd.NA})
    frame = pd.DataFrame(rows, columns=FRAGILITY_COLUMNS)
    return frame.sort_values("removal_fragility", kind="stable", ignore_index=True), exposure


def _cleaned(config, systems, corrected, full, metrics, verdicts, warnings):
    """cleaned.csv, rank_sets.csv and cleaned_pairs.csv from the campaign's draws (eval/cleaned.py), what
    the sidecars say of them (method, assumptions, how many questions were reviewed) and the legal errors
    left among the judged questions without a verdict (unreviewed, expected, upper bound: the fragility's
    bound); `corrected`: the built-in runs re-retrieved on the corrected questions (`--corrected`), added as
    `NAME.corrected` rows."""
    from bbsard_audit.base.contracts.campaign_design import read_draws

    started = time.perf_counter()
    campaign = read_draws(config.campaign)
    folder_verdicts = Path(campaign.source).parent / "verdicts.csv"
    if verdicts is None and folder_verdicts.is_file():
        verdicts = Verdicts.read(folder_verdicts)
    verdict = verdicts.verdict if verdicts is not None else {}
    y = np.fromiter((verdict.get(q) == "legal" for q in full), dtype=float, count=len(full))
    known = np.fromiter((q in verdict for q in full), dtype=bool, count=len(full))
    w = cleaned.weights(cleaned.align(campaign, full), y, known)
    warnings += w.notes
    names = list(systems)
    est = cleaned.estimate(names, np.stack([systems[s].values for s in names]), w, seed=config.seed)
    labels = [m.name for m in metrics]
    table = cleaned.cleaned_table(est, labels, w)
    if corrected:
        fixed = list(corrected)
        table = pd.concat([table, cleaned.corrected_table(
            fixed, np.stack([systems[s].values for s in fixed]), np.stack([corrected[s].values for s in fixed]),
            y, w, labels)], ignore_index=True)
    tables = {"cleaned": table, "rank_sets": cleaned.rank_sets(est, labels), "cleaned_pairs": cleaned.pairs_table(est, labels)}
    meta = {"cleaned": {
        "definition": "cleaned benchmark = the judged questions whose translation is not a legal error (verdict "
                      "`legal`), every one of them, reviewed or not; `verified` = the questions reviewed with a "
                      "verdict in --keep, a subset the draws chose by risk (not the cleaned benchmark)",
        "method": cleaned.METHOD, "assumptions": [*cleaned.ASSUMPTIONS, *w.notes,
                                                   *([cleaned.CORRECTED] if corrected else [])],
        "campaign": {**file_ref(campaign.source), "format": campaign.format, "batches": len(campaign.draws),
                     "batches_used": w.batches_used},
        "verdicts": file_ref(verdicts.source) if verdicts is not None and Path(verdicts.source).is_file() else None,
        "evaluated_questions": len(full), "reviewed": w.reviewed, "unreviewed": w.unreviewed,
        "campaign_pairs_not_evaluated": len(campaign.population) - len(full),
        "level": cleaned.LEVEL, "critical_values": dict(zip(labels, map(float, est.critical))),
        "seconds": round(time.perf_counter() - started, 3)}}
    return tables, meta, (w.unreviewed, *cleaned.errors_left(w, y, known))


def _per_query(values, subsets, metrics, verdicts, flags):
    """One row per (system, qid) on the full set (and on `corrected`, whose runs differ)."""
    frames = []
    for subset in ("full", "corrected"):
        if subset not in values:
            continue
        ids = list(subsets[subset])
        for name, system in values[subset].items():
            frame = pd.DataFrame({"system": name, "subset": subset, "qid": ids,
                                  "verdict": [verdicts.verdict.get(q, "") if verdicts else "" for q in ids],
                                  "flagged": [_flag(flags, q) for q in ids],
                                  "missing": system.missing})
            for j, m in enumerate(metrics):
                frame[m.name] = system.values[j]
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _flag(flags, qid) -> str:
    if flags is None or qid not in flags:
        return ""
    return "true" if flags[qid] else "false"


def _inputs(config, runs, qrels, dataset) -> dict:
    files = {}
    for name, path in config.runs.items():
        files[f"run:{name}"] = {**file_ref(runs[name].source), "queries": len(runs[name].ranking)}  # FILE.json#PART: FILE
    for label in ("qrels", "verdicts", "audit", "estimate"):
        path = _estimate_path(config) if label == "estimate" else getattr(config, label)
        if path is not None:
            files[label] = file_ref(path)
    if dataset is not None:
        files["dataset"] = {**dataset.provenance(), "split": config.split}
    files["qrels_queries"] = len(qrels)
    return files

