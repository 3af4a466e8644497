"""Issue 34: `eval --campaign`, each system's metric on the cleaned benchmark (no legal error) from a campaign's
draws, with intervals, rank sets and pairwise conclusions; eval without a campaign unchanged; bad campaigns."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from campaign_fixtures import campaign  # noqa: F401 (the fixture)
from typer.testing import CliRunner

from bbsard_audit.annotations import draw
from bbsard_audit.annotations.adaptive import Campaign
from bbsard_audit.annotations.tasks import QUEUE_COLUMNS, read_audit
from bbsard_audit.app.cli import app
from bbsard_audit.base.contracts.campaign_design import read_draws
from bbsard_audit.base.contracts.eval_tables import CLEANED, CLEANED_PAIRS, RANK_SETS
from bbsard_audit.eval import cleaned
from bbsard_audit.eval.pipeline import OUTPUTS

runner = CliRunner()
JUDGED = 203  # the campaign holds 222 pairs, 203 of them judged (as bBSARD's test split)


def _trec(path, ranks: dict[int, int]) -> None:
    """A run ranking question q's one relevant document `rel{q}` at `ranks[q]` (filler documents above it)."""
    lines = []
    for q, r in ranks.items():
        docs = [f"x{j}" for j in range(1, r)] + [f"rel{q}"] + [f"y{j}" for j in range(3)]
        lines += [f"{q} Q0 {d} {i + 1} {100 - i} t" for i, d in enumerate(docs)]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def world(campaign, tmp_path):
    """test_ppi_design's 222-pair campaign (format 3; risk > 0.3 = legal error), qrels for 203 pairs and three
    runs: `nl` finds the relevant document first except on legal errors (rank 10), `fr` always second,
    `same` a copy of `fr`."""
    frame, audit, queue, camp, verdicts = campaign
    truth = dict(zip(frame["id"], frame["risk"] > 0.3))
    judged = sorted(frame["id"])[:JUDGED]
    (tmp_path / "qrels.trec").write_text("".join(f"{q} 0 rel{q} 1\n" for q in judged))
    _trec(tmp_path / "nl.trec", {q: 10 if truth[q] else 1 for q in judged})
    _trec(tmp_path / "fr.trec", {q: 2 for q in judged})
    _trec(tmp_path / "same.trec", {q: 2 for q in judged})

    def batch():
        state = Campaign.load(camp)
        rows = state.add_batch(read_audit(audit), audit, 14, set())
        state.save()
        return set(rows["id"])
    return tmp_path, camp, truth, judged, verdicts, batch, set(pd.read_csv(queue)["id"])


def _eval(folder, out, *extra):
    runs = [a for s in ("nl", "fr", "same") for a in ("--run", f"{s}={folder / f'{s}.trec'}")]
    return runner.invoke(app, ["eval", *runs, "--qrels", str(folder / "qrels.trec"), "--metric", "mrr@10,recall@5",
                               "--resamples", "1000", "--null-draws", "50", "--out", str(out), *map(str, extra)],
                         catch_exceptions=False)


def test_the_cleaned_interval_covers_the_truth_and_rank_sets_hold_the_true_ranks(world):
    folder, camp, truth, judged, verdicts, batch, start = world
    drawn = set(start)
    verdicts(drawn)
    for _ in range(4):
        drawn |= batch()
        verdicts(drawn)
    res = _eval(folder, folder / "out", "--campaign", camp)
    assert res.exit_code == 0, res.output
    table = CLEANED.read(folder / "out" / "cleaned.csv")
    clean = [q for q in judged if not truth[q]]
    nl = table[(table["system"] == "nl") & (table["metric"] == "mrr@10")].iloc[0]
    assert nl["full"] == pytest.approx(np.mean([0.1 if truth[q] else 1.0 for q in judged]))
    assert nl["ci_low"] <= 1.0 + 1e-9 and nl["cleaned"] > nl["full"]  # cleaned: every clean question at rank 1
    assert nl["change"] == pytest.approx(nl["cleaned"] - nl["full"])
    assert nl["change_low"] == pytest.approx(nl["ci_low"] - nl["full"])
    assert nl["reviewed"] == len(drawn & set(judged)) and nl["reviewed"] + nl["unreviewed"] == JUDGED
    fr = table[(table["system"] == "fr") & (table["metric"] == "mrr@10")].iloc[0]
    assert fr["cleaned"] == pytest.approx(0.5) and fr["ci_high"] - fr["ci_low"] == pytest.approx(0, abs=1e-9)
    assert len(clean) < JUDGED
    ranks = RANK_SETS.read(folder / "out" / "rank_sets.csv")
    mrr = ranks[ranks["metric"] == "mrr@10"].set_index("system")
    assert mrr.loc["nl", ["rank", "rank_low", "rank_high"]].tolist() == [1, 1, 1]
    assert mrr.loc["fr", "rank_low"] == 2 and mrr.loc["same", "rank_high"] == 3  # a tie spans both ranks
    pairs = CLEANED_PAIRS.read(folder / "out" / "cleaned_pairs.csv")
    assert set(pairs[pairs["metric"] == "mrr@10"]["conclusion"]) == {"holds"}  # nl ahead of both, on both sets
    meta = json.loads((folder / "out" / "cleaned.meta.json").read_text())
    assert "prediction-powered" in meta["cleaned"]["method"] and meta["cleaned"]["assumptions"]
    assert meta["cleaned"]["campaign_pairs_not_evaluated"] == 222 - JUDGED
    assert str(folder) not in json.dumps(meta["cleaned"])  # inputs named by name + hash, never a local path
    res = runner.invoke(app, ["report", "--workdir", str(folder / "out")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    text = (folder / "out" / "report.md").read_text()
    cleaned_at, fragile_at = text.index("### Conclusions on the cleaned benchmark"), text.index("### Fragile conclusions")
    assert cleaned_at < fragile_at  # the evaluation's conclusions open with the cleaned benchmark
    assert "it is not the cleaned benchmark" in text and f"{int(nl['reviewed'])} of {JUDGED} judged" in text
    assert "| mrr@10 | nl | 1 | 1 |" in text and "| mrr@10 | same | 3 | 2–3 |" in text  # rank, rank set
    # the fragility reads the same estimate: its bound is the campaign's errors left, not flag counts
    exposure = json.loads((folder / "out" / "fragility.meta.json").read_text())["fragility"]
    assert exposure["method"] == cleaned.ERRORS_LEFT_METHOD and "unverified_flagged" not in exposure
    qids = [str(q) for q in judged]
    y = np.array([float(truth[q]) if q in drawn else 0.0 for q in judged])
    known = np.array([q in drawn for q in judged])
    w = cleaned.weights(cleaned.align(read_draws(camp), qids), y, known)
    expected, high = cleaned.errors_left(w, y, known)
    frag = pd.read_csv(folder / "out" / "fragility.csv")
    assert frag["expected_errors_unverified"].iloc[0] == pytest.approx(expected)
    assert frag["expected_errors_unverified_high"].iloc[0] == pytest.approx(high) and expected < high
    assert (frag["robust"] == (frag["removal_fragility"] > high)).all()
    assert "(the campaign's estimate behind cleaned.csv, the same one as the cleaned benchmark's)" in text
    assert "| on the cleaned benchmark |" in text and "| holds |" in text
    findings = text[text.index("## Findings"):text.index("## ", text.index("## Findings") + 3)]
    assert findings.index("On the cleaned benchmark") < findings.index("pairwise conclusions (system a beats b")
    assert "of 4 full-set conclusions (every metric), 2 hold, 2 tied, 0 flip on the cleaned benchmark" in findings
    recall = table[(table["system"] == "nl") & (table["metric"] == "recall@5")].iloc[0]
    assert recall["ci_low"] <= recall["cleaned"] <= recall["ci_high"] <= 1.0  # the ratio's point kept in range


def test_eval_without_a_campaign_writes_the_same_tables_byte_for_byte(world):
    folder, camp, truth, judged, verdicts, batch, start = world
    verdicts(start)
    assert _eval(folder, folder / "a").exit_code == 0
    assert _eval(folder, folder / "b", "--campaign", camp).exit_code == 0
    for name in OUTPUTS:
        if name != "fragility":  # with a campaign, its bound is the campaign's estimate (the next test)
            assert (folder / "a" / f"{name}.csv").read_bytes() == (folder / "b" / f"{name}.csv").read_bytes(), name
    a, b = (pd.read_csv(folder / d / "fragility.csv") for d in "ab")
    same = ["metric", "system_a", "system_b", "delta", "n_queries", "removal_fragility", "p_value"]
    pd.testing.assert_frame_equal(a[same], b[same])
    assert a["robust"].isna().all() and b["robust"].notna().all()  # no estimate.json: only the campaign bounds it
    assert not (folder / "a" / "cleaned.csv").exists() and (folder / "b" / "cleaned.csv").exists()


def test_a_campaign_of_other_pairs_is_one_line_naming_how_many_differ(world):
    folder, camp, truth, judged, verdicts, batch, start = world
    (folder / "qrels.trec").write_text("".join(f"{q} 0 rel{q} 1\n" for q in [*judged[:200], 5001, 5002, 5003]))
    res = _eval(folder, folder / "out", "--campaign", camp)
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "3 of the 203 evaluated questions are not pairs of the campaign" in res.output
    assert sum("not pairs of the campaign" in line for line in res.output.splitlines()) == 1
    assert not (folder / "out" / "cleaned.csv").exists()
    # another split altogether: every evaluated question differs, still one line
    (folder / "qrels.trec").write_text("".join(f"{q} 0 rel{q} 1\n" for q in range(5001, 5001 + JUDGED)))
    res = _eval(folder, folder / "out", "--campaign", camp)
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "203 of the 203 evaluated questions are not pairs of the campaign" in res.output
    assert not (folder / "out" / "cleaned.csv").exists()


def test_a_campaign_without_a_verdict_rests_on_p_error_alone_and_says_so(world):
    folder, camp, truth, judged, verdicts, batch, start = world
    res = _eval(folder, folder / "out", "--campaign", camp)
    assert res.exit_code == 0, res.output
    assert "rests on p_error alone" in res.output
    meta = json.loads((folder / "out" / "cleaned.meta.json").read_text())
    assert any("p_error alone" in a for a in meta["cleaned"]["assumptions"])
    table = CLEANED.read(folder / "out" / "cleaned.csv")
    assert (table["reviewed"] == 0).all() and (table["ci_low"] <= table["cleaned"]).all()


def test_a_campaign_before_probability_draws_is_refused_in_one_line(world):
    folder, camp, *_ = world
    record = json.loads((camp / "campaign.json").read_text())
    record["format"] = 2
    for b in record["batches"]:
        for key in ("pool", "p", "pi", "prediction", "seed", "scale", "floor", "certain", "p_floor", "sealed"):
            b.pop(key, None)  # as a format-2 campaign was written: no draws, no seal
    (camp / "campaign.json").write_text(json.dumps(record))
    res = _eval(folder, folder / "out", "--campaign", camp)
    assert res.exit_code != 0 and "records no probability draws" in res.output and "Traceback" not in res.output


def test_every_question_reviewed_gives_the_exact_cleaned_value():
    y = np.array([1, 0, 0, 1, 0], float)
    d = cleaned.Aligned(0, np.ones(5, bool), np.full(5, 0.5), np.full(5, 0.2), np.array([1, 1, 0, 0, 1], bool))
    w = cleaned.weights([d], y, np.ones(5, bool))
    v = np.array([0.1, 0.9, 0.7, 0.3, 0.5])
    est = cleaned.estimate(["a"], v[None, None, :], w)
    assert est.value[0, 0] == pytest.approx((0.9 + 0.7 + 0.5) / 3) and est.se[0, 0] == 0


def test_one_batch_is_the_hand_computed_difference_estimate():
    y = np.array([1, 0, 0, 1], float)
    pi, p = np.array([0.5, 0.25, 1.0, 0.5]), np.array([0.6, 0.1, 0.3, 0.2])
    drawn = np.array([True, False, True, False])
    w = cleaned.weights([cleaned.Aligned(0, np.ones(4, bool), pi, p, drawn)], y, drawn)
    # (1 - p) everywhere, minus (y - p) / π on the drawn pairs
    assert w.coef == pytest.approx([0.4 - 0.4 / 0.5, 0.9, 0.7 + 0.3, 0.8])
    assert w.hat == pytest.approx([(1 - 0.5) / 0.25 * 0.16, 0, 0, 0])
    model = np.array([(1 - 0.5) / 0.5 * 0.24, (1 - 0.25) / 0.25 * 0.09, 0, (1 - 0.5) / 0.5 * 0.16])
    r = np.array([0.5, -1.0, 2.0, 1.0])
    assert w.variance(r) == pytest.approx((r**2 @ w.hat + r**2 @ model) / 2)  # the mean of the two, as draw.py


def test_with_no_batch_reviewed_the_variance_is_the_predictions_alone_not_halved():
    p = np.array([0.6, 0.1, 0.3, 0.2])
    d = cleaned.Aligned(0, np.ones(4, bool), np.full(4, 0.5), p, np.array([True, False, True, False]))
    w = cleaned.weights([d], np.zeros(4), np.zeros(4, bool))
    assert w.batches_used == 0 and cleaned.PREDICTION_ONLY in w.notes
    r = np.array([0.5, -1.0, 2.0, 1.0])
    assert w.variance(r) == pytest.approx(r**2 @ (p * (1 - p)))  # no design estimate to average with


def test_the_estimated_total_is_unbiased_over_repeated_draws_whatever_the_prediction():
    rng = np.random.default_rng(0)
    n = 200
    y = (rng.random(n) < 0.15).astype(float)
    v = rng.random(n)
    p = np.clip(rng.random(n) * 0.4, 0.01, 1)  # predictions that know nothing of y
    totals = []
    pi, _, _ = draw.inclusion(p, 30, tradeoff=draw.TRADEOFF)
    for seed in range(600):
        drawn = draw.poisson_draw(pi, seed, 1)
        w = cleaned.weights([cleaned.Aligned(0, np.ones(n, bool), pi, p, drawn)], y, drawn)
        totals.append(w.coef @ v)
    truth = ((1 - y) * v).sum()
    assert abs(np.mean(totals) - truth) < 3 * np.std(totals) / np.sqrt(len(totals))


def test_mteb_predictions_are_runs_ranked_by_score(tmp_path):
    from bbsard_audit.base.errors import InputError
    from bbsard_audit.eval.runs import Run

    preds = {"775": {"12": 0.2, "30": 0.9, "7": 0.9}, "776": {"5": 1.0}}
    (tmp_path / "BSARDRetrieval_default_predictions.json").write_text(json.dumps(preds))
    run = Run.read(tmp_path / "BSARDRetrieval_default_predictions.json", "m")
    assert run.ranking["775"] == ("30", "7", "12")  # score desc, a tie by docid
    v2 = {"mteb_model_meta": {"model_name": "m", "revision": "r"}, "fr": {"test": preds}, "nl": {"test": {"775": {"1": 1.0}}}}
    (tmp_path / "BSARD_predictions.json").write_text(json.dumps(v2))
    assert Run.read(f"{tmp_path / 'BSARD_predictions.json'}#nl/test", "m").ranking == {"775": ("1",)}
    with pytest.raises(InputError, match="several subsets/splits.*fr/test, nl/test"):
        Run.read(tmp_path / "BSARD_predictions.json", "m")
    with pytest.raises(InputError, match="not a finite number"):
        (tmp_path / "bad.json").write_text(json.dumps({"775": {"1": "high"}}))
        Run.read(tmp_path / "bad.json", "m")


def test_the_corrected_variant_is_exact_when_all_is_reviewed_and_unbiased_over_draws():
    rng = np.random.default_rng(1)
    n = 120
    y = (rng.random(n) < 0.2).astype(float)
    v, fixed = rng.random(n), rng.random(n)  # a run's values on the original and on the corrected questions
    p = np.clip(y * 0.3 + rng.random(n) * 0.2, 0.01, 1)
    truth = np.where(y == 1, fixed, v).mean()
    every = cleaned.weights([cleaned.Aligned(0, np.ones(n, bool), np.full(n, 0.5), p, np.ones(n, bool))], y,
                            np.ones(n, bool))
    exact = cleaned.corrected_table(["bm25_nl"], v[None, None], fixed[None, None], y, every, ["m"])
    assert exact["cleaned"].iloc[0] == pytest.approx(truth) and exact["ci_low"].iloc[0] == pytest.approx(truth)
    assert exact["system"].iloc[0] == "bm25_nl.corrected"
    pi, _, _ = draw.inclusion(p, 25, tradeoff=draw.TRADEOFF)
    values = []
    for seed in range(500):
        drawn = draw.poisson_draw(pi, seed, 1)
        w = cleaned.weights([cleaned.Aligned(0, np.ones(n, bool), pi, p, drawn)], y, drawn)
        values.append(v.mean() + w.ht @ (np.where(drawn, y, 0) * (fixed - v)) / n)
    assert abs(np.mean(values) - truth) < 3 * np.std(values) / np.sqrt(len(values))


def test_builtin_dutch_retrievers_get_a_corrected_row_re_retrieved_from_the_experts_corrections(tmp_path):
    res = runner.invoke(app, ["audit", "--dataset", "sample", "--split", "all", "--review-budget", "0", "--control", "8",
                              "--out", str(tmp_path / "run")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    audit, queue, camp = tmp_path / "run" / "audit.csv", tmp_path / "run" / "review_queue.csv", tmp_path / "camp"
    Campaign.start(camp, project="p", audit=read_audit(audit), audit_path=audit,
                   queue=read_audit(queue, QUEUE_COLUMNS), queue_path=queue, seed=1).save()
    state = Campaign.load(camp)
    state.add_batch(read_audit(audit), audit, 6, set())
    state.save()
    drawn = {i for b in json.loads((camp / "campaign.json").read_text())["batches"] for i in b["risk"] + b["control"]}
    sample = pd.read_csv(Path(__file__).resolve().parents[2] / "base" / "sample" / "verdicts.csv", dtype={"corrected_nl": str}).fillna("").set_index("id")
    rows = [(i, *(sample.loc[i, ["verdict", "corrected_nl"]] if i in sample.index else ("correct", ""))) for i in sorted(drawn)]
    pd.DataFrame(rows, columns=["id", "verdict", "corrected_nl"]).to_csv(camp / "verdicts.csv", index=False)
    assert any(v == "legal" and c for _, v, c in rows)  # a reviewed legal error with a correction
    res = runner.invoke(app, ["eval", "--dataset", "sample", "--split", "all", "--retriever", "bm25", "--corrected",
                              "--verdicts", str(camp / "verdicts.csv"), "--campaign", str(camp), "--metric", "ndcg@10",
                              "--resamples", "1000", "--null-draws", "50", "--out", str(tmp_path / "out")],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    table = CLEANED.read(tmp_path / "out" / "cleaned.csv").set_index("system")
    assert set(table.index) == {"bm25_fr", "bm25_nl", "bm25_nl.corrected"}  # French runs are not re-retrieved
    row = table.loc["bm25_nl.corrected"]
    assert row["full"] == table.loc["bm25_nl", "full"] and row["ci_low"] <= row["cleaned"] <= row["ci_high"]
    assert row["cleaned"] != row["full"]  # the corrections moved the Dutch run
