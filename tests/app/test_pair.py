"""Issue 16, item 1: the language pair flows from the dataset through every stage, and string ids
(BEIR's `PLAIN-2`, `MED-10`) are accepted end to end, on small English -> Dutch and French -> German
BEIR benchmarks the tests write (two BEIR folders + a manifest)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import need
from benchmark_files import EN_NL, beir_pair, jsonl
from pair_fixtures import en_nl, run_audit  # noqa: F401 (en_nl: the fixture)
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import LanguagePair

runner = CliRunner()


def test_en_nl_string_ids_validate_audit_eval_release(en_nl, tmp_path):
    manifest, bt = en_nl
    ds = load_dataset(str(manifest))
    assert ds.pair == LanguagePair("en", "nl") and ds.string_ids
    assert [p.id for p in ds.pairs] == [r[0] for r in EN_NL] and ds.pairs[1].article_ids == ("MED-2", "MED-3")
    res = runner.invoke(app, ["validate", "--dataset", str(manifest)])
    assert res.exit_code == 0 and "en: 6 questions  nl: 6 questions" in res.output, res.output

    # audit: the pair's codes in every language-coded name, string ids kept, the pair in the sidecar
    out = tmp_path / "audit"
    frame = run_audit(manifest, bt, out, "--review-budget", "2", "--control", "2")
    header = (out / "audit.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[:5] == ["id", "split", "category", "question_en", "question_nl"]
    assert {"qa_numbers_en", "qa_numbers_nl", "qa_neg_en", "qa_nl_english_prob"} <= set(header)
    assert not [c for c in header if c.endswith("_fr") or "french" in c]
    meta = json.loads((out / "audit.meta.json").read_text(encoding="utf-8"))
    assert meta["languages"] == {"source": "en", "target": "nl"} and meta["ids"] == "string"
    assert meta["backtranslation"]["status"] == "used" and isinstance(meta["checks_unavailable"], list)
    assert Layout.of(out) == Layout(LanguagePair("en", "nl"), True)
    assert frame["id"].tolist() == [r[0] for r in EN_NL]
    row = frame.set_index("id").loc["PLAIN-2"]
    assert "number_mismatch" in row["flags"] and row["flagged"]
    sides = {s["side"] for spans in frame["spans"] for s in spans}
    assert sides and sides <= {"en", "nl"}
    number = [s for s in row["spans"] if s["flag"] == "number_mismatch"]
    assert {(s["side"], s["text"]) for s in number} == {("en", "3"), ("nl", "5")}
    queue = Layout.of(out / "review_queue.csv").queue.read(out / "review_queue.csv")
    assert "PLAIN-2" in set(queue["id"]) and json.loads((out / "review_queue.meta.json").read_text())["ids"] == "string"

    # eval: qrels from the manifest, runs joined on string ids, X_en / X_nl paired for the gap
    runs = tmp_path / "runs"
    runs.mkdir()
    for lang, miss in (("en", set()), ("nl", {"PLAIN-2"})):
        lines = [f"{q} Q0 {gold[0] if q not in miss else 'MED-4'} 1 2.0 bm25_{lang}\n"
                 f"{q} Q0 MED-3 2 1.0 bm25_{lang}" for q, *_, gold in EN_NL]
        (runs / f"bm25_{lang}.trec").write_text("\n".join(lines) + "\n", encoding="utf-8")
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text("id,verdict,corrected_nl\nPLAIN-1,correct,\n"
                        "PLAIN-2,legal,Wat is de opzegtermijn voor een huurder met 3 kinderen?\n", encoding="utf-8")
    res = runner.invoke(app, ["eval", "--dataset", str(manifest), "--split", "test", "--run",
                              f"bm25_en={runs / 'bm25_en.trec'}", "--run", f"bm25_nl={runs / 'bm25_nl.trec'}",
                              "--audit", str(out / "audit.csv"), "--verdicts", str(verdicts), "--out", str(tmp_path / "ev"),
                              "--resamples", "1000", "--null-draws", "10"])
    assert res.exit_code == 0, res.output
    metrics = pd.read_csv(tmp_path / "ev" / "metrics.csv")
    verified = metrics[metrics.subset == "verified"]
    assert set(verified["n_queries"]) == {1} and {"full", "flagged", "unflagged"} <= set(metrics.subset)
    full = metrics[metrics.subset == "full"].pivot(index="metric", columns="system", values="value")
    assert (full["bm25_en"] >= full["bm25_nl"]).all() and (full["bm25_en"] > full["bm25_nl"]).any()
    gap = pd.read_csv(tmp_path / "ev" / "fr_nl_gap.csv", dtype={"group": str})
    per_q = gap[(gap.level == "question") & (gap.system == "bm25")]
    assert set(per_q["group"]) == {r[0] for r in EN_NL}
    assert per_q[per_q.group == "PLAIN-2"]["verdict"].iloc[0] == "legal"
    assert json.loads((tmp_path / "ev" / "eval.meta.json").read_text())["languages"] == {"source": "en", "target": "nl"}

    # release: question files named with the pair's codes, the correction shipped, string ids kept
    rel = tmp_path / "release"
    res = runner.invoke(app, ["release", "--dataset", str(manifest), "--verdicts", str(verdicts), "--audit",
                              str(out / "audit.csv"), "--out", str(rel)])
    assert res.exit_code == 0, res.output
    nl = pd.read_csv(rel / "questions_nl_test.csv", dtype=str).set_index("id")
    en = pd.read_csv(rel / "questions_en_test.csv", dtype=str).set_index("id")
    assert list(en.index) == list(nl.index) == [r[0] for r in EN_NL]
    assert nl.loc["PLAIN-2", "question"].endswith("met 3 kinderen?") and nl.loc["PLAIN-2", "verification"] == "corrected"
    assert en.loc["PLAIN-2", "article_ids"] == "MED-2,MED-3" and nl.loc["PLAIN-1", "verification"] == "verified"
    changes = pd.read_csv(rel / "CHANGELOG.csv", dtype=str)
    assert changes["id"].tolist() == ["PLAIN-2"] and changes["old_nl"].iloc[0].endswith("met 5 kinderen?")
    assert (rel / "articles_en.csv").is_file() and "language:\n- en\n- nl" in (rel / "README.md").read_text()

    # report: the work folder's audit (en/nl columns, string ids) and its review, read by the audit's layout
    (out / "verdicts.csv").write_bytes(verdicts.read_bytes())
    res = runner.invoke(app, ["report", "--workdir", str(out), "--out", str(tmp_path / "report")])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "| id | split | risk | severity | English | Dutch | back-translation | reasons |" in md
    assert f"| PLAIN-2 | test | {frame.set_index('id').loc['PLAIN-2', 'risk']:.3f} | " in md and EN_NL[1][2] in md


def test_en_nl_corrected_subset_keeps_the_source_language_run(en_nl, tmp_path):
    """The corrected subset re-retrieves the target (Dutch) questions and keeps a source-language run
    as it is: `bm25_en` (the pair's source), not only a run named `_fr`."""
    manifest, _ = en_nl
    run = tmp_path / "bm25_en.trec"
    run.write_text("".join(f"{q} Q0 {gold[0]} 1 2.0 bm25_en\n" for q, *_, gold in EN_NL), encoding="utf-8")
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text("id,verdict,corrected_nl\nPLAIN-1,correct,\n"
                        "PLAIN-2,legal,Wat is de opzegtermijn voor een huurder met 3 kinderen?\n", encoding="utf-8")
    res = runner.invoke(app, ["eval", "--dataset", str(manifest), "--split", "test", "--run", f"bm25_en={run}",
                              "--retriever", "bm25", "--lang", "nl", "--verdicts", str(verdicts), "--corrected",
                              "--out", str(tmp_path / "ev"), "--resamples", "1000", "--null-draws", "10"])
    assert res.exit_code == 0, res.output
    assert "left out" not in res.output
    metrics = pd.read_csv(tmp_path / "ev" / "metrics.csv")
    assert set(metrics[metrics.subset == "corrected"]["system"]) == {"bm25_en", "bm25_nl"}


def test_a_string_id_verdict_for_an_unknown_question_is_one_line(en_nl, tmp_path):
    manifest, bt = en_nl
    run_audit(manifest, bt, tmp_path / "audit")
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text("id,verdict\nPLAIN-1,correct\nPLAIN-99,legal\n", encoding="utf-8")
    res = runner.invoke(app, ["release", "--dataset", str(manifest), "--verdicts", str(verdicts), "--out",
                              str(tmp_path / "rel")])
    assert res.exit_code == 2 and "verdicts.csv, row 3, id PLAIN-99: verdict for a question that is not in" in res.output
    assert not (tmp_path / "rel").exists()


def test_fr_nl_files_keep_integer_ids_and_their_names(tmp_path):
    """bBSARD's layout is unchanged: integer ids, question_fr/question_nl, no `languages` in the task data."""
    rows = [(str(i), q, n, b, ["7"]) for i, (q, n, b) in enumerate([
        ("Quel est le délai de préavis pour 3 mois ?", "Wat is de opzegtermijn voor 3 maanden?",
         "Quel est le délai de préavis pour 3 mois ?"),
        ("Qui paie la réparation du toit ?", "Wie betaalt de herstelling van het dak?", "Qui paie la réparation du toit ?"),
    ], start=1)]
    manifest = beir_pair(tmp_path, rows, "fr", "nl", docs={"7": ("Article 7.", "Artikel 7.")})
    bt = tmp_path / "bt.jsonl"
    jsonl(bt, [{"id": int(r[0]), "backtranslation": r[3]} for r in rows])
    frame = run_audit(manifest, bt, tmp_path / "out")
    assert frame["id"].tolist() == [1, 2] and frame["id"].dtype == "int64"
    assert Layout.of(tmp_path / "out") == Layout()
    from bbsard_audit.annotations.tasks import build_tasks, label_config

    task = build_tasks(frame, model_version="m", layout=Layout.of(tmp_path / "out"))[0]
    assert task["data"]["question_id"] == 1 and "languages" not in task["data"] and "ids" not in task["data"]
    assert {"question_fr", "question_nl"} <= set(task["data"])
    config = label_config(Layout())  # the role template filled for bBSARD: the names Label Studio projects hold
    assert "@" not in config.replace("$question", "") and 'name="fr_spans" toName="question_fr"' in config
    assert 'name="corrected_nl" toName="question_nl"' in config and "faithful to the French question" in config


def test_an_old_sidecar_reads_back_as_bbsards_pair(tmp_path):
    """A sidecar written before pairs (no `languages`, `pair` or dataset languages) is bBSARD's fr -> nl;
    each later shape reads back as the same one object; a bad record is one line naming the file."""
    old = {"output": "audit.csv", "tool": "bbsard-audit", "tool_version": "0.3.0", "created": "2025-01-01T00:00:00Z",
           "dataset": {"source": "sample", "revision": None, "files_sha256": {}}}
    (tmp_path / "audit.csv").write_text("id\n", encoding="utf-8")
    (tmp_path / "audit.meta.json").write_text(json.dumps(old), encoding="utf-8")
    assert LanguagePair.from_sidecar(old) == LanguagePair("fr", "nl")
    assert Layout.of(tmp_path).pair == LanguagePair("fr", "nl") and isinstance(Layout.of(tmp_path).pair, LanguagePair)
    en_nl = LanguagePair("en", "nl")
    for meta in ({"languages": {"source": "en", "target": "nl"}}, {"pair": "en->nl"},
                 {"dataset": {"languages": {"source": "en", "target": "nl"}}}, {"languages": en_nl.record()}):
        assert LanguagePair.from_sidecar(meta) == en_nl
    assert LanguagePair.parse(str(en_nl)) == LanguagePair.parse("en-nl") == en_nl
    with pytest.raises(InputError, match=r"^x.meta.json: the recorded language pair: target: unknown language 'xx'"):
        LanguagePair.from_sidecar({"languages": {"source": "en", "target": "xx"}}, file="x.meta.json")


FR_DE = [
    ("1", "Mon bailleur peut-il augmenter le loyer deux fois en 12 mois ?",
     "Darf mein Vermieter die Miete zweimal in 12 Monaten erhöhen?", ["10"]),
    ("2", "Quel est le délai de préavis pour un locataire avec 3 enfants ?",
     "Wie lang ist die Kündigungsfrist für einen Mieter mit 5 Kindern?", ["11"]),
    ("3", "Qui paie la réparation du toit ?", "Wer bezahlt die Reparatur des Daches?", ["12"]),
    ("4", "Puis-je résilier mon bail après un an ?", "Kann ich meinen Mietvertrag nach einem Jahr kündigen?", ["10"]),
]


def test_fr_de_audits_with_german_codes(tmp_path):
    rows = [(q, fr, de, "", gold) for q, fr, de, gold in FR_DE]
    docs = {d: (f"Article {d}.", f"Artikel {d}.") for d in ("10", "11", "12")}
    manifest = beir_pair(tmp_path, rows, "fr", "de", docs=docs, name="toy-fr-de")
    res = runner.invoke(app, ["audit", "--dataset", str(manifest), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    meta = json.loads((tmp_path / "out" / "audit.meta.json").read_text(encoding="utf-8"))
    assert meta["languages"] == {"source": "fr", "target": "de"} and meta["ids"] == "integer"
    frame = Layout.of(tmp_path / "out").audit.read(tmp_path / "out" / "audit.csv")
    assert {"question_fr", "question_de", "qa_numbers_fr", "qa_numbers_de", "qa_de_french_prob"} <= set(frame.columns)
    assert frame["id"].tolist() == [1, 2, 3, 4]
    row = frame.set_index("id").loc[2]
    assert "number_mismatch" in row["flags"]
    assert {(s["side"], s["text"]) for s in row["spans"] if s["flag"] == "number_mismatch"} == {("fr", "3"), ("de", "5")}
    assert not frame.set_index("id").loc[1, "flagged"] or "number_mismatch" not in frame.set_index("id").loc[1, "flags"]



def test_fr_de_corrections_keep_their_german_columns_in_release_and_report(tmp_path):
    """The frames call the correction `corrected_target`; the files keep the pair's codes: a verdicts.csv's
    `corrected_de` becomes the release's `old_de`/`new_de` and the report counts it."""
    rows = [(q, fr, de, "", gold) for q, fr, de, gold in FR_DE]
    docs = {d: (f"Article {d}.", f"Artikel {d}.") for d in ("10", "11", "12")}
    manifest = beir_pair(tmp_path, rows, "fr", "de", docs=docs, name="toy-fr-de")
    out = tmp_path / "out"
    assert runner.invoke(app, ["audit", "--dataset", str(manifest), "--out", str(out)]).exit_code == 0
    fixed = "Wie lang ist die Kündigungsfrist für einen Mieter mit 3 Kindern?"
    (out / "verdicts.csv").write_text(f"id,verdict,corrected_de\n1,correct,\n2,legal,{fixed}\n", encoding="utf-8")
    res = runner.invoke(app, ["release", "--dataset", str(manifest), "--verdicts", str(out / "verdicts.csv"),
                              "--audit", str(out / "audit.csv"), "--out", str(tmp_path / "release")])
    assert res.exit_code == 0, res.output
    changes = pd.read_csv(tmp_path / "release" / "CHANGELOG.csv", dtype=str)
    assert list(changes.columns[:4]) == ["id", "split", "old_de", "new_de"]
    assert changes[["id", "old_de", "new_de"]].values.tolist() == [["2", FR_DE[1][2], fixed]]
    res = runner.invoke(app, ["report", "--workdir", str(out), "--out", str(tmp_path / "report")])
    assert res.exit_code == 0, res.output
    assert "- **with a corrected German text**: 1\n" in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")

@pytest.mark.label_studio
@pytest.mark.timeout(900)
def test_en_nl_through_a_real_label_studio(en_nl, ls_env, tmp_path):
    """push -> a reviewer's spans and correction -> pull, on a real server: the tasks carry question_en /
    question_nl and the string ids, the config labels en/nl spans, pull writes side en/nl and corrected_nl."""
    from bbsard_audit.annotations.connection import Connection
    from bbsard_audit.annotations.project import ReviewProject, config_controls
    from bbsard_audit.annotations.simulate import annotation_result, ensure_reviewer

    manifest, bt = en_nl
    out = tmp_path / "audit"
    run_audit(manifest, bt, out, "--review-budget", "3", "--control", "2")
    res = runner.invoke(app, ["annotate", "push", "--audit", str(out / "audit.csv"), "--queue",
                              str(out / "review_queue.csv"), "--project", "pair-en-nl", "--dataset", str(manifest)])
    assert res.exit_code == 0, res.output
    layout = Layout.of(out / "audit.csv")
    project = ReviewProject.open(Connection(ls_env.url, ls_env.token), "pair-en-nl", layout=layout)
    project.check_config()  # the server holds the en/nl config
    controls = config_controls(project.client.projects.get(project.id).label_config)
    assert {"en_spans", "nl_spans", "en_note", "nl_note", "corrected_nl", "verdict"} <= set(controls)
    tasks = {t["data"]["question_id"]: t for t in project.export()}
    queued = Layout.of(out / "review_queue.csv").queue.read(out / "review_queue.csv")
    assert set(tasks) == set(queued["id"]) and "PLAIN-2" in tasks
    data = tasks["PLAIN-2"]["data"]
    assert data["question_en"] == EN_NL[1][1] and data["question_nl"] == EN_NL[1][2]
    assert data["languages"] == "en-nl" and data["ids"] == "string" and data["gold_articles"] == "MED-2\nMED-3"
    assert project.question_ids().keys() == set(queued["id"])

    nl_text, en_text = EN_NL[1][2], EN_NL[1][1]
    spans = [{"side": "nl", "start": nl_text.index("5"), "end": nl_text.index("5") + 1, "category": "number",
              "note": "3, not 5"},
             {"side": "en", "start": en_text.index("3"), "end": en_text.index("3") + 1, "category": "number"}]
    fixed = nl_text.replace("5", "3")
    user = ensure_reviewer(project, "reviewer@example.org")
    result = annotation_result("legal", fixed, "yes", spans=spans, texts={"en": en_text, "nl": nl_text}, layout=layout)
    project.client.annotations.create(tasks["PLAIN-2"]["id"], result=result, completed_by=user, project=project.id)
    ok = annotation_result("correct", layout=layout)
    project.client.annotations.create(tasks["PLAIN-1"]["id"] if "PLAIN-1" in tasks else next(
        t["id"] for q, t in tasks.items() if q != "PLAIN-2"), result=ok, completed_by=user, project=project.id)

    verdicts = tmp_path / "camp" / "verdicts.csv"
    verdicts.parent.mkdir()
    res = runner.invoke(app, ["annotate", "pull", "--project", "pair-en-nl", "--out", str(verdicts)])
    assert res.exit_code == 0, res.output
    table = pd.read_csv(verdicts, dtype=str, keep_default_na=False).set_index("id")
    assert table.loc["PLAIN-2", "verdict"] == "legal" and table.loc["PLAIN-2", "corrected_nl"] == fixed
    assert len(table) == 2
    spans_out = pd.read_csv(verdicts.with_name("error_spans.csv"), dtype=str, keep_default_na=False)
    assert sorted(zip(spans_out["id"], spans_out["side"], spans_out["text"], spans_out["note"])) == [
        ("PLAIN-2", "en", "3", ""), ("PLAIN-2", "nl", "5", "3, not 5")]
    raw = pd.read_csv(verdicts.with_name("annotations_raw.csv"), dtype=str, keep_default_na=False)
    assert set(raw["id"]) == set(table.index) and "corrected_nl" in raw.columns
    assert json.loads(verdicts.with_name("verdicts.meta.json").read_text())["languages"] == {"source": "en", "target": "nl"}
    res = runner.invoke(app, ["annotate", "pull", "--project", "pair-en-nl", "--out", str(verdicts)])  # additive
    assert res.exit_code == 0 and len(pd.read_csv(verdicts)) == 2, res.output
    res = runner.invoke(app, ["annotate", "agreement", "--raw", str(verdicts.with_name("annotations_raw.csv")),
                              "--out", str(verdicts.parent)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["annotate", "estimate", "--audit", str(out / "audit.csv"), "--queue",
                              str(out / "review_queue.csv"), "--verdicts", str(verdicts), "--out",
                              str(verdicts.with_name("estimate.json"))])
    assert res.exit_code == 0, res.output
    assert json.loads(verdicts.with_name("estimate.json").read_text())["found_legal"] == 1
    res = runner.invoke(app, ["release", "--dataset", str(manifest), "--verdicts", str(verdicts), "--out",
                              str(tmp_path / "rel")])
    assert res.exit_code == 0, res.output
    nl = pd.read_csv(tmp_path / "rel" / "questions_nl_test.csv", dtype=str).set_index("id")
    assert nl.loc["PLAIN-2", "question"] == fixed


def test_en_nl_campaign_simulation_runs_static_and_refuses_learning_in_one_line(en_nl, tmp_path):
    manifest, bt = en_nl
    oracle = tmp_path / "oracle.csv"
    oracle.write_text("id,verdict,corrected_nl\n" + "".join(
        f"{q},{'legal' if q == 'PLAIN-2' else 'correct'},\n" for q, *_ in EN_NL), encoding="utf-8")
    base = ["campaign", "simulate", "--dataset", str(manifest), "--split", "test", "--backtranslations", str(bt),
            "--oracle", str(oracle), "--batch", "2", "--budget", "4", "--control", "2", "--seed", "0"]
    res = runner.invoke(app, [*base, "--no-learning", "--out", str(tmp_path / "static")])
    assert res.exit_code == 0, res.output
    order = pd.read_csv(tmp_path / "static" / "review_order.csv", dtype={"id": str})
    assert len(order) == 4 and set(order["id"]) <= {q for q, *_ in EN_NL}
    assert "PLAIN-2" in set(order.loc[order["queue"] == "risk", "id"])  # the riskiest pair is reviewed first
    curve = pd.read_csv(tmp_path / "static" / "campaign_curve.csv")
    assert curve["found_legal"].iloc[-1] == 1
    meta = json.loads((tmp_path / "static" / "campaign_curve.meta.json").read_text())
    assert meta["languages"] == {"source": "en", "target": "nl"} and meta["ids"] == "string"
    res = runner.invoke(app, [*base, "--out", str(tmp_path / "learning")])
    assert res.exit_code == 2 and "a learning campaign learns fr->nl term rules; this dataset is en->nl" in res.output
    assert not (tmp_path / "learning").exists()


@pytest.mark.ml
def test_opus_mt_back_translates_target_to_source_for_the_pair(en_nl, tmp_path, monkeypatch):
    """`--translator opus-mt` is the pair's target -> source model (nl -> en here); offline, loading it
    fails in one line naming that model, nothing written."""
    need("transformers", "the ml extra")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    manifest, _ = en_nl
    res = runner.invoke(app, ["audit", "--dataset", str(manifest), "--translator", "opus-mt", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "cannot load translation model 'Helsinki-NLP/opus-mt-nl-en'" in res.output, res.output
    assert not (tmp_path / "o").exists()
