"""The review ranking refitted from the verdicts so far, so a campaign's next batch goes where the
experts' own judgements say the errors are (docs/audit.md, "Refitted ranking").

A regularised logistic regression of "the expert judged the pair `legal`" on the audit's evidence:
the rule risk's logit (the noisy-OR of audit/risk.py), each flag, the continuous signals, the
glossary counts and the learned-rule hits. The prior is the audit itself: the rule-risk logit's
coefficient is shrunk towards 1 and every other coefficient towards 0 (Gaussian prior, precision
`PRIOR_PRECISION` on standardised features), so with few verdicts the ranking is the static one
and it moves only as far as the verdicts push it. Fitted by Newton's method (numpy); the Laplace
approximation (posterior covariance = inverse Hessian) gives each pair's uncertainty.

A batch is `explore` parts the pairs the model is least sure could be errors (highest upper bound
sigmoid(logit + EXPLORE_Z * sd) among the rest), the remainder the highest fitted probability:
without exploration a ranking never learns about the pairs it never shows the experts.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from bbsard_audit.base import languages
from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.learned import RankingModel
from bbsard_audit.base.languages import LanguagePair
from bbsard_audit.base.stats import penalised_logistic

from .registry import flag_specs

PRIOR_PRECISION = 100.0
"""Gaussian prior precision of each coefficient (worth ~100 verdicts), on standardised signals and
0/1 flags. Chosen on tuning oracles (benchmarks/bench_learning.md, seeds 200-201, never the
benchmark's): 30 found more in the first 100 reviews but fell up to 20 errors behind the static
ranking at 200, a few dozen verdicts swinging weights the static order had right."""
RULE_PRECISION = 100.0
"""... and of the rule-logit coefficient (prior mean 1): the audit's ranking moves only with evidence."""
LEARNED_HIT_PRIOR = 0.0
"""Prior mean of the learned-rule-hit coefficient. +1 logit pulled rule hits forward early but cost
up to 9 errors at 200 reviews on the tuning oracles (hits on correct pairs): the verdicts decide."""
INTERCEPT_PRECISION = 0.01
EXPLORE_SHARE = 0.1
EXPLORE_Z = 2.0
RISK_CLIP = 1e-3
SOURCE_PROB = tuple(dict.fromkeys(Layout(LanguagePair(s, t)).column("qa_{target}_{source_language}_prob")
                                   for s in languages.codes() for t in languages.codes() if s != t))
"""The untranslated check's P(source language) column as each pack pair's files name it
(`qa_nl_french_prob` for fr -> nl): an audit holds the one of its pair."""
NUMERIC = ("qa_len_z", "qa_sentence_gap", "qa_lex_mistranslated", *SOURCE_PROB, "gl_expected", "gl_matched", "gl_missing",
           "gl_rejected", "gl_non_belgian", "xling_z", "bt_chrf", "bt_cosine")
RULE_LOGIT, LEARNED_HITS = "rule_logit", "learned_rule_hits"


def feature_names(frame: pd.DataFrame) -> list[str]:
    """The features an audit frame offers: rule logit, every known flag, the numeric signal columns
    it has, and the learned-rule hits."""
    return [RULE_LOGIT, *(f"flag:{f}" for f in flag_specs()), *(c for c in NUMERIC if c in frame.columns),
            LEARNED_HITS]


def _raw(frame: pd.DataFrame, names: list[str], risk_column: str) -> np.ndarray:
    flags = frame["flags"].fillna("").astype(str).str.get_dummies(sep=";")
    columns = []
    for name in names:
        if name == RULE_LOGIT:
            risk = np.clip(pd.to_numeric(frame[risk_column]).to_numpy(float), RISK_CLIP, 1 - RISK_CLIP)
            columns.append(np.log(risk / (1 - risk)))
        elif name == LEARNED_HITS:
            columns.append(frame["reasons"].fillna("").astype(str).str.count(r"\[learned rule ").to_numpy(float))
        elif name.startswith("flag:"):
            columns.append(flags[name[5:]].to_numpy(float) if name[5:] in flags else np.zeros(len(frame)))
        elif name in frame.columns:
            columns.append(pd.to_numeric(frame[name], errors="coerce").to_numpy(float))
        else:  # a model fitted on an audit with a signal this one lacks: the feature is at its mean
            columns.append(np.full(len(frame), np.nan))
    return np.column_stack(columns) if columns else np.zeros((len(frame), 0))


def design(frame: pd.DataFrame, model: RankingModel) -> np.ndarray:
    """Standardised feature matrix (intercept first); a missing value sits at the feature's mean."""
    return _standardised(_raw(frame, model.features, model.risk_column), model)


def _standardised(raw: np.ndarray, model: RankingModel) -> np.ndarray:
    x = np.clip(np.nan_to_num((raw - np.array(model.means)) / np.array(model.scales), nan=0.0), -6.0, 6.0)
    return np.column_stack([np.ones(len(raw)), x])


def fit(frame: pd.DataFrame, verdicts: pd.DataFrame, *, explore: float = EXPLORE_SHARE) -> RankingModel:
    """Fit on the reviewed pairs of `frame` (verdicts: id, verdict); standardisation over all of `frame`.
    The rule risk is `rule_risk` when the frame was itself ranked by a model (`apply`), else `risk`."""
    risk_column = "rule_risk" if "rule_risk" in frame.columns else "risk"
    names = feature_names(frame)
    raw = _raw(frame, names, risk_column)
    with warnings.catch_warnings():  # an all-missing column (a signal that was not computed) has no mean
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nan_to_num(np.nanmean(raw, axis=0), nan=0.0) if len(raw) else np.zeros(len(names))
        scales = np.nan_to_num(np.nanstd(raw, axis=0), nan=1.0) if len(raw) else np.ones(len(names))
    is_logit = np.array([n == RULE_LOGIT for n in names])
    # the rule logit stays in logits (prior mean 1 = the audit); flags and rule hits stay 0/1 counts:
    # standardising a flag 1 pair in 40 raises would make it a 6-sd feature one verdict can swing
    raw_scale = is_logit | np.array([n.startswith("flag:") or n == LEARNED_HITS for n in names])
    means[raw_scale], scales[raw_scale] = 0.0, 1.0
    scales[scales < 1e-9] = 1.0
    model = RankingModel(features=names, means=means.tolist(), scales=scales.tolist(), coefficients=[],
                         covariance=[], risk_column=risk_column, explore_share=explore, explore_z=EXPLORE_Z,
                         prior_precision=PRIOR_PRECISION, n_verdicts=0, n_positive=0)
    label = verdicts.drop_duplicates("id").set_index("id")["verdict"].astype(str)
    rows = frame["id"].isin(label.index).to_numpy()
    x = _standardised(raw, model)[rows]  # the features computed above, standardised
    y = (label.reindex(frame.loc[rows, "id"]).to_numpy() == "legal").astype(float)
    prior = np.r_[0.0, is_logit.astype(float) + LEARNED_HIT_PRIOR * np.array([n == LEARNED_HITS for n in names])]
    precision = np.r_[INTERCEPT_PRECISION, np.where(is_logit, RULE_PRECISION, PRIOR_PRECISION)]
    w, cov = penalised_logistic(x, y, prior, precision)
    return RankingModel(**{**model.to_dict(), "coefficients": w.tolist(), "covariance": cov.tolist(),
                           "n_verdicts": int(rows.sum()), "n_positive": int(y.sum())})


def predict(frame: pd.DataFrame, model: RankingModel) -> tuple[np.ndarray, np.ndarray]:
    """(probability of a legal error, sd of its logit) per row. The sd leaves the intercept out: its
    uncertainty shifts every pair alike, so it says nothing about which pair the model is unsure of."""
    x = design(frame, model)
    logit = x @ np.array(model.coefficients)
    cov = np.array(model.covariance)[1:, 1:]
    sd = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", x[:, 1:], cov, x[:, 1:]), 0.0))
    return 1.0 / (1.0 + np.exp(-logit)), sd


def review_order(frame: pd.DataFrame, model: RankingModel,
                 predicted: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row positions of `frame` in review order, and whether each slot is an exploration pick
    (`predicted`: `predict(frame, model)` when the caller has it already).

    Slot k (1-based) explores when floor(k * share) > floor((k - 1) * share): any prefix of N slots,
    i.e. any next batch of N, holds round(N * share) exploration picks (+-1)."""
    p, sd = predict(frame, model) if predicted is None else predicted
    logit = np.log(np.clip(p, 1e-12, 1)) - np.log(np.clip(1 - p, 1e-12, 1))
    upper = logit + model.explore_z * sd
    ids = frame["id"].to_numpy()
    exploit = np.lexsort((ids, -p))
    explore = np.lexsort((ids, -upper))
    n = len(frame)
    k = np.arange(1, n + 1)
    slots = np.floor(k * model.explore_share) > np.floor((k - 1) * model.explore_share)
    order, taken = np.empty(n, dtype=int), np.zeros(n, dtype=bool)
    queues = {False: iter(exploit), True: iter(explore)}
    for slot, is_explore in enumerate(slots):
        row = next(i for i in queues[bool(is_explore)] if not taken[i])
        taken[row] = True
        order[slot] = row
    return order, slots


def priority(frame: pd.DataFrame, model: RankingModel) -> pd.DataFrame:
    """p_legal, p_legal_sd and `priority` (1 for the first pair to review, falling by 1/n per place)."""
    p, sd = predict(frame, model)
    order, _ = review_order(frame, model, (p, sd))
    rank = np.empty(len(frame))
    rank[order] = np.arange(len(frame))
    return pd.DataFrame({"p_legal": p, "p_legal_sd": sd, "priority": 1.0 - rank / max(len(frame), 1)},
                        index=frame.index)


def apply(frame: pd.DataFrame, model: RankingModel) -> pd.DataFrame:
    """An audit frame ranked by `model`: `risk` becomes the review priority (what `review_queue` and
    `annotate push --next` sort by), the noisy-OR risk moves to `rule_risk` (`flagged` and `severity`
    still come from it), plus `p_legal` and `p_legal_sd`."""
    rule = frame[model.risk_column] if model.risk_column in frame.columns else frame["risk"]
    ranked = priority(frame.assign(**{model.risk_column: rule}), model)
    return frame.assign(rule_risk=rule, p_legal=ranked["p_legal"], p_legal_sd=ranked["p_legal_sd"],
                        risk=ranked["priority"])
