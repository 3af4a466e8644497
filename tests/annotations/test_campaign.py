"""The campaign simulator: learning beats the static ranking on a clustered synthetic oracle, it reads
only the oracle rows of reviewed pairs, and the CLI writes the documented files (or fails cleanly)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from bbsard_audit.app.simulation import CURVE_COLUMNS, ORACLE_COLUMNS, Oracle, SimulationOptions, clustered_oracle, simulate
from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import load_dataset

runner = CliRunner()
SETTINGS = dict(split="all", batch=2, budget=14, control=2, seed=0, design="ranked")  # the ranking's own tests


def _run(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def synthetic():
    """Three clusters of three sample questions sharing a French term and one wrong rendering, plus
    three scattered self-test corruptions; the base glossary does not know the clustered errors."""
    return clustered_oracle(load_dataset("sample", with_corpus=False), "all", clusters=3, per_cluster=3,
                            scattered=3, seed=0)


@pytest.fixture(scope="module")
def runs(synthetic, embedding_cache):
    return {learning: simulate(synthetic.dataset, oracle=synthetic.make_oracle(), options=SimulationOptions(
                glossary=synthetic.glossary, learning=learning, cache_dir=embedding_cache, **SETTINGS))
            for learning in (True, False)}


def test_the_builder_injects_clusters_the_glossary_does_not_know(synthetic):
    original = {p.id: p.target for p in load_dataset("sample", with_corpus=False).pairs}
    now = {p.id: p.target for p in synthetic.dataset.pairs}
    oracle = synthetic.oracle.set_index("id")
    # every pair has a verdict (a missing row is unknown): 3 x 3 clustered + 3 scattered are legal
    assert set(oracle.index) == set(original) and (oracle["verdict"] == "legal").sum() == 12
    for cluster in synthetic.clusters:
        for qid in cluster["ids"]:
            assert cluster["rejected"].lower() in now[qid].lower() and now[qid] != original[qid]
            assert oracle.loc[qid, "verdict"] == "legal" and oracle.loc[qid, "corrected_target"] == original[qid]
        entry = next(e for e in synthetic.glossary.entries if e.id == cluster["entry"])
        assert cluster["rejected"].lower() not in {r.term.lower() for r in entry.nl_rejected}
    assert all(now[q] == original[q] for q in original if oracle.loc[q, "verdict"] == "correct")


def test_learning_finds_more_errors_than_the_static_ranking(runs):
    learning, static = runs[True].curve, runs[False].curve
    assert list(learning.columns) == CURVE_COLUMNS
    assert learning["reviewed"].iloc[-1] == static["reviewed"].iloc[-1] == SETTINGS["budget"]
    assert learning["found_legal"].iloc[-1] > static["found_legal"].iloc[-1]
    assert (learning["reviewed_control"] == SETTINGS["control"]).all()
    later = learning[learning["round"] > 0]  # the estimator's point inside its own interval, every round
    assert later["estimate"].notna().all() and (later["ci_low"] <= later["estimate"]).all()
    assert (later["estimate"] <= later["ci_high"]).all()
    # every learned rule names its review; at least one flagged another member of its cluster
    rules = runs[True].rules
    assert rules["source"].str.fullmatch(r"expert review of question \d+ \(synthetic\)").all()
    assert rules["n_other_flagged"].max() >= 1
    assert runs[False].learned_entries is None and runs[False].rules.empty


def test_the_oracle_is_read_only_for_reviewed_pairs(synthetic, runs, embedding_cache):
    order = runs[True].order
    reviewed = synthetic.oracle[synthetic.oracle["id"].isin(order["id"])]
    assert len(reviewed) < len(synthetic.oracle)  # some oracle rows were never needed
    oracle = Oracle(reviewed.rename(columns={"annotators": "annotator"}), source="synthetic")
    again = simulate(synthetic.dataset, oracle=oracle, options=SimulationOptions(
        glossary=synthetic.glossary, cache_dir=embedding_cache, **SETTINGS))
    pd.testing.assert_frame_equal(again.curve, runs[True].curve)
    pd.testing.assert_frame_equal(again.order, order)
    assert oracle.revealed == order["id"].tolist()


def test_cli_writes_the_campaign_files(synthetic, tmp_path, embedding_cache):
    data, oracle, glossary = synthetic.write(tmp_path / "data", "test")
    synthetic.write(tmp_path / "data", "train")
    out = tmp_path / "campaign" / "learning"
    result = _run("campaign", "simulate", "--dataset", data, "--split", "all", "--oracle", oracle,
                  "--glossary", glossary, "--batch", 2, "--budget", 14, "--control", 2, "--seed", 0, "--design", "ranked",
                  "--cache-dir", embedding_cache, "--out", out)
    assert result.exit_code == 0, result.output
    curve = pd.read_csv(out / "campaign_curve.csv")
    assert list(curve.columns) == CURVE_COLUMNS and curve["reviewed"].is_monotonic_increasing
    order = pd.read_csv(out / "review_order.csv")
    assert list(order.columns) == ["round", "id", "queue"] and len(order) == 14 and order["id"].is_unique
    learned = yaml.safe_load((out / "learned_glossary.yaml").read_text(encoding="utf-8"))
    assert learned["entries"] and all(e["source"].startswith("expert review of question") for e in learned["entries"])
    meta = json.loads((out / "campaign_curve.meta.json").read_text(encoding="utf-8"))
    assert meta["learning"] is True and meta["budget"] == 14 and str(tmp_path) not in json.dumps(meta)


@pytest.mark.parametrize("row, message", [
    ({"id": 99999, "verdict": "legal", "corrected_nl": ""}, "not in the simulated dataset split"),
    ({"id": 1, "verdict": "awful", "corrected_nl": ""}, "is not one of correct, minor, legal"),
])
def test_bad_oracle_is_one_line_exit_2(tmp_path, row, message):
    oracle = tmp_path / "oracle.csv"
    pd.DataFrame([row]).to_csv(oracle, index=False)
    result = _run("campaign", "simulate", "--dataset", "sample", "--split", "all", "--oracle", oracle,
                  "--budget", 4, "--out", tmp_path / "o")
    assert result.exit_code == 2 and message in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_oracle_spans_out_of_bounds(tmp_path):
    oracle, spans = tmp_path / "oracle.csv", tmp_path / "spans.csv"
    pd.DataFrame([{"id": 1, "verdict": "legal", "corrected_nl": "x"}]).to_csv(oracle, index=False)
    pd.DataFrame([{"id": 1, "annotator": "a", "side": "fr", "start": 0, "end": 10_000, "text": "x",
                   "category": "other", "note": ""}]).to_csv(spans, index=False)
    result = _run("campaign", "simulate", "--dataset", "sample", "--split", "all", "--oracle", oracle,
                  "--oracle-spans", spans, "--budget", 4, "--out", tmp_path / "o")
    assert result.exit_code == 2 and "row 2" in result.output and "id 1" in result.output
    assert not (tmp_path / "o").exists()


def test_report_campaign_section_shows_both_runs_and_the_rules(runs, tmp_path):
    from bbsard_audit.app.simulation import write_simulation
    from bbsard_audit.app.report.simulation_section import simulation_section
    from bbsard_audit.app.report.document import Plot, Report, Table
    from bbsard_audit.app.report.html import render_html
    from bbsard_audit.app.report.markdown import render_markdown

    assert simulation_section(tmp_path) is None
    write_simulation(runs[True], tmp_path / "campaign" / "learning")
    write_simulation(runs[False], tmp_path / "campaign" / "static")
    section = simulation_section(tmp_path)
    plot = next(b for b in section.blocks if isinstance(b, Plot))
    assert plot.png.startswith(b"\x89PNG") and "learning:" in plot.alt and "static:" in plot.alt
    ended = next(b for b in section.blocks if isinstance(b, Table))
    found = {row[0]: int(row[3]) for row in ended.rows}
    assert found == {"learning": int(runs[True].curve["found_legal"].iloc[-1]),
                     "static": int(runs[False].curve["found_legal"].iloc[-1])}
    rules = section.subsections[0].blocks[0]
    assert len(rules.rows) == len(runs[True].rules) and "other pairs flagged" in rules.columns
    report = Report("t", "s", [section])
    assert "Rules learned (learning)" in render_markdown(report) and "<img" in render_html(report)

    from bbsard_audit.app.report import build_report

    files = build_report(tmp_path)  # the `report` command shows it for a folder holding only campaigns
    assert files.sections == ("Review campaign", "Provenance")  # one campaign section, the simulation in it
    shown = " ".join(_run("report", "--help").output.split())
    assert all(title in shown for title in ("Findings", "Audit", "Review campaign", "simulated campaign",
                                            "Evaluation", "Corpus", "Provenance")), shown
    assert "Simulated campaign" in files.markdown.read_text() and "Rules learned (learning)" in files.markdown.read_text()


def test_the_oracle_reveals_one_pair_once_and_only_its_spans():
    spans = pd.DataFrame([{"id": q, "annotator": "a", "side": "nl", "start": 0, "end": 1, "text": "W",
                           "category": "terminology", "note": ""} for q in (1, 2)])
    verdicts = pd.DataFrame([{"id": 1, "verdict": "legal", "corrected_nl": "X", "annotator": "a"}],
                            columns=ORACLE_COLUMNS)
    oracle = Oracle(verdicts, spans)
    assert oracle.revealed_spans().empty
    assert oracle.reveal(2) is None  # no row: unknown, never "correct"
    assert oracle.revealed_spans()["id"].tolist() == [2] and oracle.revealed == [2] and oracle.unknown == [2]
    with pytest.raises(ValueError):
        oracle.reveal(2)


def test_the_simulator_sidecar_never_replaces_an_adaptive_campaigns(runs, tmp_path):
    """One folder may hold an adaptive review (campaign.json + campaign.meta.json) and a simulation:
    the simulator's sidecar follows campaign_curve.csv, and the report reads that one."""
    from bbsard_audit.annotations.adaptive import CAMPAIGN_FILE
    from bbsard_audit.app.simulation import write_simulation
    from bbsard_audit.base.io import sidecar_path, write_json, write_sidecar
    from bbsard_audit.app.report.simulation_section import load_simulations

    write_json(tmp_path / CAMPAIGN_FILE, {"format": 1})
    adaptive = write_sidecar(tmp_path / CAMPAIGN_FILE, project=7)
    before = adaptive.read_bytes()
    written = write_simulation(runs[True], tmp_path)
    assert sidecar_path(tmp_path / "campaign_curve.csv") in written and adaptive.read_bytes() == before
    (tmp_path / "learned_rules.csv").unlink()  # the label now comes from the sidecar alone
    [run] = load_simulations(tmp_path)
    assert run.label == "learning" and run.meta["budget"] == SETTINGS["budget"]


def test_simulate_never_replaces_a_file_it_did_not_write(tmp_path):
    """campaign simulate runs under the output guard: e.g. `audit learn`'s learned_glossary.yaml stays."""
    oracle, out = tmp_path / "oracle.csv", tmp_path / "o"
    pd.DataFrame([{"id": 1, "verdict": "legal", "corrected_nl": "x"}]).to_csv(oracle, index=False)
    out.mkdir()
    (out / "learned_glossary.yaml").write_text("version: mine\nentries: []\n", encoding="utf-8")
    result = _run("campaign", "simulate", "--dataset", "sample", "--split", "all", "--oracle", oracle,
                  "--budget", 4, "--out", out)
    assert result.exit_code == 2 and "learned_glossary.yaml exists and was not written by bbsard-audit" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["learned_glossary.yaml"]


def test_an_oracle_without_the_reviewed_pairs_is_refused(synthetic, tmp_path, embedding_cache):
    """A pair the campaign reviews without an oracle row is unknown, never 'correct': one line naming
    the oracle and the missing ids, exit 2, nothing written."""
    data, oracle, glossary = synthetic.write(tmp_path / "data", "test")
    synthetic.write(tmp_path / "data", "train")
    frame = pd.read_csv(oracle)
    frame[frame["verdict"] == "legal"].to_csv(oracle, index=False)  # the errors only, as a 'verdicts.csv'
    args = ["campaign", "simulate", "--dataset", data, "--split", "all", "--oracle", oracle, "--glossary", glossary,
            "--batch", 2, "--budget", 14, "--control", 2, "--cache-dir", embedding_cache]
    result = _run(*args, "--out", tmp_path / "o")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "oracle.csv" in result.output and "no verdict for" in result.output and "--allow-partial-oracle" in result.output
    assert not (tmp_path / "o").exists()
    partial = _run(*args, "--allow-partial-oracle", "--out", tmp_path / "p")
    assert partial.exit_code == 0, partial.output
    meta = json.loads((tmp_path / "p" / "campaign_curve.meta.json").read_text(encoding="utf-8"))
    coverage = meta["oracle_coverage"]
    assert coverage["unknown"] > 0 and coverage["asked"] == coverage["unknown"] + meta["n_reviewed"]
    curve = pd.read_csv(tmp_path / "p" / "campaign_curve.csv")
    order = pd.read_csv(tmp_path / "p" / "review_order.csv")
    assert not set(order["id"]) & set(coverage["unknown_ids"])  # unknown pairs are never reviewed ...
    assert curve["unknown"].iloc[-1] == coverage["unknown"] and "partial oracle" in partial.output
    legal = set(frame.loc[frame["verdict"] == "legal", "id"])
    assert set(order["id"]) <= legal  # ... nor counted: every pair reviewed here is one the oracle knows


def test_duplicate_oracle_ids_are_one_line(tmp_path):
    oracle = tmp_path / "oracle.csv"
    pd.DataFrame([{"id": 1, "verdict": "legal", "corrected_nl": ""},
                  {"id": 1, "verdict": "correct", "corrected_nl": ""}]).to_csv(oracle, index=False)
    result = _run("campaign", "simulate", "--dataset", "sample", "--split", "all", "--oracle", oracle,
                  "--budget", 4, "--out", tmp_path / "o")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "oracle.csv" in result.output and "1" in result.output and "duplicate" in result.output.lower()
    assert not (tmp_path / "o").exists()


def test_several_seeds_give_a_mean_and_a_spread(synthetic, tmp_path, embedding_cache):
    from bbsard_audit.app.simulation import write_simulation
    from bbsard_audit.base.contracts.simulation import CAMPAIGN_SEEDS
    from bbsard_audit.app.report.simulation_section import simulation_section, load_simulations

    settings = {**SETTINGS, "control": 4}
    runs = {learning: simulate(synthetic.dataset, oracle=synthetic.make_oracle(), options=SimulationOptions(
                glossary=synthetic.glossary, learning=learning, seeds=3, cache_dir=embedding_cache, **settings))
            for learning in (True, False)}
    for learning, run in runs.items():
        seeds = run.seeds
        assert sorted(seeds["seed"].unique()) == [0, 1, 2]
        finals = seeds.groupby("seed")["found_legal"].last()
        assert run.meta["found_legal_final"]["mean"] == pytest.approx(finals.mean(), abs=1e-3)
        assert run.meta["found_legal_final"]["min"] == finals.min()
        write_simulation(run, tmp_path / "campaign" / ("learning" if learning else "static"))
    assert CAMPAIGN_SEEDS.read(tmp_path / "campaign" / "learning" / "campaign_seeds.csv")["seed"].nunique() == 3
    # learning finds at least as many as the static ranking at the same budget, on average over seeds
    assert runs[True].meta["found_legal_final"]["mean"] >= runs[False].meta["found_legal_final"]["mean"]
    assert all(r.n_seeds == 3 for r in load_simulations(tmp_path))
    section = simulation_section(tmp_path)
    ended = next(b for b in section.blocks if hasattr(b, "rows"))
    assert all("over 3 seeds" in row[3] and row[-1] == "0–2" for row in ended.rows)


def test_the_plot_keeps_two_coinciding_curves_visible(runs, tmp_path):
    """Learning and static curves that coincide used to be drawn one exactly over the other: the
    first vanished. Now (line style, hollow markers, a slight shift) most of it stays visible."""
    import io

    import matplotlib.image as mpimg
    import numpy as np

    from bbsard_audit.app.report.simulation_section import SimulationRun, found_curve
    from bbsard_audit.app.report.plots import OKABE_ITO
    from matplotlib.colors import to_rgb

    curve = runs[False].curve
    first = SimulationRun("learning", tmp_path, curve, {}, None)
    second = SimulationRun("static", tmp_path, curve.copy(), {}, None)

    def pixels(png: bytes, color: str) -> int:
        image = mpimg.imread(io.BytesIO(png))[..., :3]
        return int((np.abs(image - np.array(to_rgb(color))).max(axis=2) < 0.08).sum())

    alone = pixels(found_curve([first]), OKABE_ITO[0])
    together = pixels(found_curve([first, second]), OKABE_ITO[0])
    assert alone > 200 and together > 0.5 * alone, (alone, together)


def test_a_learning_draw_refits_p_error_once_audit_learn_would(synthetic, embedding_cache):
    """Design `draw`: once there are as many verdicts as `audit learn` needs to write error_model.json
    (>= 30, >= 5 legal), each round's inclusion probabilities come from p_error refitted on the verdicts
    so far (the model of the last draw fitted on every verdict before it); before that, and without
    learning, the audit's own prediction (a real campaign has no refit to re-audit with)."""
    def run(learning, budget):
        options = dict(SETTINGS, design="draw", batch=4, control=4, budget=budget)
        return simulate(synthetic.dataset, oracle=synthetic.make_oracle(), options=SimulationOptions(
            glossary=synthetic.glossary, learning=learning, cache_dir=embedding_cache, **options))
    learned, static, early = run(True, 36), run(False, 36), run(True, 28)
    assert learned.meta["prediction"] == "refitted p_error" and static.meta["prediction"] in ("p_error", "risk")
    before_last = learned.curve["reviewed"].iloc[-2]
    assert learned.meta["ranking"]["n_verdicts"] == before_last >= 30 and static.meta["ranking"] is None
    assert early.meta["prediction"] == "p_error" and early.meta["ranking"] is None
