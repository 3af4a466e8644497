"""Release: corrections applied, verification statuses, CHANGELOG, card, and round trips through the
project's loader (CSV layout and hf: save_to_disk) and through `datasets` itself."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest
from conftest import audit_frame, need

from bbsard_audit.base.contracts.agreement import Agreement, Score
from bbsard_audit.base.contracts.estimate import Estimate
from bbsard_audit.base.dataset import QUESTION_COLUMNS, load_dataset
from bbsard_audit.base.errors import InputError
from bbsard_audit.app.release import ReleasePolicy, build_release

FR = {1: "Quel est le préavis du locataire ?", 2: "Comment divorcer ?", 3: "Qui paie le précompte immobilier ?",
      4: "Puis-je refuser une saisie ?", 5: "Quand expire un bail de courte durée ?", 6: "Qui hérite sans testament ?",
      7: "Combien coûte un avocat pro deo ?", 8: "Quel délai pour contester un licenciement ?"}
NL = {1: "Wat is de opzeggingstermijn van de huurder?", 2: "Hoe scheiden?", 3: "Wie betaalt de onroerende voorheffing?",
      4: "Kan ik een beslag weigeren?", 5: "Wanneer loopt een kortlopende huur af?", 6: "Wie erft zonder testament?",
      7: "Hoeveel kost een pro-Deoadvocaat?", 8: "Welke termijn om een ontslag aan te vechten?"}
SPLIT = {1: "test", 2: "test", 3: "test", 4: "test", 5: "test", 6: "train", 7: "train", 8: "train"}
GOLD = {1: "101,102", 2: "103", 3: "104", 4: "105,101", 5: "102", 6: "103", 7: "104", 8: "105"}
VERDICTS = [  # id, verdict, corrected_nl, gold_labels_apply
    (1, "correct", "", "yes"),
    (2, "minor", "", "yes"),
    (3, "minor", "Wie betaalt de onroerende voorheffing op een huurwoning?", "yes"),
    (4, "legal", "Kan ik me verzetten tegen een beslag?", "no"),
    (5, "legal", "", "no"),
    (6, "legal", "", "unsure"),
]


def make_dataset(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        for lang, texts in (("fr", FR), ("nl", NL)):
            with open(root / f"questions_{lang}_{split}.csv", "w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=list(QUESTION_COLUMNS))
                w.writeheader()
                for qid in (q for q in texts if SPLIT[q] == split):
                    w.writerow({"id": qid, "category": "Logement", "subcategory": "Bail", "question": texts[qid],
                                "extra_description": "Bail, préavis" if qid == 1 else "", "article_ids": GOLD[qid]})
    for lang, word in (("fr", "Article"), ("nl", "Artikel")):
        pd.DataFrame({"id": range(101, 106), "article": [f"{word} {i}." for i in range(101, 106)],
                      "code": "Code civil"}).to_csv(root / f"articles_{lang}.csv", index=False)
    return root


def write_review(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([{"id": i, "verdict": v, "corrected_nl": c, "gold_labels_apply": g, "n_annotations": 2,
                   "annotators": "anna;bart", "agreement_status": "agreed"} for i, v, c, g in VERDICTS]
                 ).to_csv(root / "verdicts.csv", index=False)
    pd.DataFrame([{"id": i, "task_id": i, "annotation_id": 10 * i + j, "annotator": a, "verdict": v,
                   "corrected_nl": "", "gold_labels_apply": "", "created_at": f"2026-11-0{j + 1}T09:00:00Z", "updated_at": f"2026-11-{j + 1 + i:02d}T09:00:00Z"}
                  for i, v, _, _ in VERDICTS for j, a in enumerate(("anna", "bart"))]
                 ).to_csv(root / "annotations_raw.csv", index=False)
    Agreement(8, [Score("cohen_kappa[verdict]", 0.71, 0.45, 0.9, 8, "kappa", ("anna", "bart"))]).write(
        root / "agreement.json")
    Estimate(0.125, 0.04, 0.3, 1.0, 8, [], 0.95, 100, 0).write(root / "estimate.json")
    audit_frame(range(1, 9), [False, False, True, True, True, False, False, True]).assign(  # the texts reviewed
        question_fr=[FR[i] for i in range(1, 9)], question_nl=[NL[i] for i in range(1, 9)]).to_csv(root / "audit.csv",
                                                                                                   index=False)
    return root / "verdicts.csv"


@pytest.fixture()
def release(tmp_path):
    ds = load_dataset(str(make_dataset(tmp_path / "src")))
    verdicts = write_review(tmp_path / "work")
    out = tmp_path / "release"
    summary = build_release(ds, verdicts, out, ReleasePolicy("exclude"), audit=tmp_path / "work" / "audit.csv")
    return ds, summary, out


def test_statuses_corrections_and_changelog(release):
    _, summary, out = release
    assert summary.counts == {"test": {"verified": 2, "corrected": 2, "excluded": 1},
                              "train": {"excluded": 1, "unverified": 1, "flagged-unverified": 1}}
    assert summary.removed == 2 and summary.changes == 4
    nl = pd.read_csv(out / "questions_nl_test.csv", keep_default_na=False)
    assert list(nl["id"]) == [1, 2, 3, 4]  # 5: legal, uncorrected -> removed
    assert dict(zip(nl["id"], nl["verification"])) == {1: "verified", 2: "verified", 3: "corrected", 4: "corrected"}
    assert nl.loc[nl["id"] == 4, "question"].item() == "Kan ik me verzetten tegen een beslag?"
    fr = pd.read_csv(out / "questions_fr_test.csv", keep_default_na=False)
    assert fr.loc[fr["id"] == 4, "question"].item() == FR[4] and list(fr["verification"]) == list(nl["verification"])
    log = pd.read_csv(out / "CHANGELOG.csv", keep_default_na=False)
    assert list(log.columns[:7]) == ["id", "split", "old_nl", "new_nl", "verdict", "annotators", "date"]
    row = log.set_index("id").loc[3]
    assert (row.old_nl, row.new_nl, row.verdict, row.annotators, row.date) == (
        NL[3], "Wie betaalt de onroerende voorheffing op een huurwoning?", "minor", "anna;bart", "2026-11-05")
    assert log.set_index("id").loc[5, "verification"] == "removed" and log.set_index("id").loc[5, "new_nl"] == ""
    assert (out / "articles_fr.csv").read_bytes() == (out.parent / "src" / "articles_fr.csv").read_bytes()


def test_round_trip_through_the_project_loader_csv_and_hf(release):
    ds, _, out = release
    for src in (str(out), f"hf:{out}/hf"):
        back = load_dataset(src)
        assert sorted(p.id for p in back.pairs) == [1, 2, 3, 4, 7, 8], src
        by_id = back.by_id()
        assert by_id[4].target == "Kan ik me verzetten tegen een beslag?"
        assert by_id[1].source == FR[1] and by_id[4].article_ids == (105, 101)
        assert by_id[8].target_meta["verification"] == "flagged-unverified"
        assert by_id[1].target_meta["category"] == "Logement" and by_id[1].target_meta["extra_description"] == "Bail, préavis"
        assert back.corpus.ids == (101, 102, 103, 104, 105) and back.corpus.texts("nl")[0] == "Artikel 101."


def test_round_trip_through_datasets_directly(release):
    datasets = need("datasets")
    _, _, out = release
    test = datasets.load_from_disk(str(out / "hf" / "test"))
    assert set(test) == {"fr", "nl"} and test["nl"].num_rows == 4
    assert test["nl"].features["id"].dtype == "int64"
    row = test["nl"].filter(lambda r: r["id"] == 3)[0]
    assert row["question"].endswith("op een huurwoning?") and row["verification"] == "corrected"
    corpus = datasets.load_from_disk(str(out / "hf" / "corpus"))
    assert corpus["fr"].num_rows == 5 and corpus["fr"].column_names[:2] == ["id", "article"]
    # the card's YAML configs make the CSV folder itself loadable by `datasets`
    card = datasets.load_dataset(str(out), "train")
    assert sorted(card["nl"]["id"]) == [7, 8]


def test_keep_marked_and_no_keep_minor(tmp_path):
    ds = load_dataset(str(make_dataset(tmp_path / "src")))
    verdicts = write_review(tmp_path / "work")
    summary = build_release(ds, verdicts, tmp_path / "rel", ReleasePolicy("keep-marked", keep_minor=False))
    assert summary.removed == 0
    nl = pd.read_csv(tmp_path / "rel" / "questions_nl_test.csv")
    assert dict(zip(nl["id"], nl["verification"])) == {1: "verified", 2: "excluded", 3: "corrected",
                                                      4: "corrected", 5: "excluded"}
    back = load_dataset(str(tmp_path / "rel"))
    assert len(back.pairs) == 8 and back.by_id()[6].target_meta["verification"] == "excluded"


def test_dataset_card(release):
    _, _, out = release
    card = (out / "README.md").read_text()
    assert card.startswith("---\nlicense: cc-by-nc-sa-4.0\n")
    assert "CC BY-NC-SA 4.0" in card and "Lotfi" in card and "Louis, Antoine and Spanakis" in card
    assert "| test | 2 | 2 | 0 | 0 | 1 | 5 |" in card and "| train | 0 | 0 | 1 | 1 | 1 | 3 |" in card
    assert "| cohen_kappa[verdict] anna vs bart | 0.71 | [0.45, 0.9] |" in card
    assert "| share_legal | 0.125 | [0.04, 0.3] |" in card
    assert "**removed**" in card


def test_rerun_replaces_release_and_leaves_foreign_files_alone(release, tmp_path):
    ds, _, out = release
    build_release(ds, tmp_path / "work" / "verdicts.csv", out, ReleasePolicy("keep-marked"))
    assert len(pd.read_csv(out / "questions_nl_test.csv")) == 5
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    build_release(ds, tmp_path / "work" / "verdicts.csv", foreign)
    assert (foreign / "notes.txt").read_text() == "keep me" and (foreign / "CHANGELOG.csv").is_file()
    (foreign / "README.md").unlink()
    (foreign / "README.md").write_text("my own card")  # no longer the release's own file
    with pytest.raises(InputError, match="README.md exists and was changed since"):
        build_release(ds, tmp_path / "work" / "verdicts.csv", foreign)
    assert (foreign / "README.md").read_text() == "my own card"


@pytest.mark.parametrize("edit, message", [
    (lambda f: f.assign(verdict=f["verdict"].replace("legal", "wrong")), "row 5, id 4: verdict 'wrong' is not one of"),
    (lambda f: f.drop(columns=["verdict"]), "verdicts.csv: missing column(s) verdict"),
    (lambda f: pd.concat([f, f.tail(1)]), "row 8, id 6: duplicate id: already on row 7"),
    (lambda f: f.assign(id=f["id"].replace(6, 999)), "row 7, id 999: verdict for a question that is not in the dataset"),
])
def test_bad_verdicts_are_one_line_and_write_nothing(tmp_path, edit, message):
    ds = load_dataset(str(make_dataset(tmp_path / "src")))
    verdicts = write_review(tmp_path / "work")
    edit(pd.read_csv(verdicts, keep_default_na=False)).to_csv(verdicts, index=False)
    with pytest.raises(InputError) as err:
        build_release(ds, verdicts, tmp_path / "rel")
    assert message in err.value.one_line()
    assert not (tmp_path / "rel").exists() and not list(tmp_path.glob(".rel*"))


def test_cli(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from bbsard_audit.app.cli import app

    src = make_dataset(tmp_path / "src")
    verdicts = write_review(tmp_path / "work")
    args = ["release", "--dataset", str(src), "--verdicts", str(verdicts), "--out", str(tmp_path / "rel"),
            "--policy", "keep-marked", "--no-keep-minor"]
    runner = CliRunner()
    ok = runner.invoke(app, args)
    assert ok.exit_code == 0, ok.output
    assert "test  corrected: 2  excluded: 2  verified: 1" in ok.stdout and f"wrote {tmp_path / 'rel'}" in ok.stdout
    bad = runner.invoke(app, args[:-3] + ["--policy", "drop"])
    assert bad.exit_code == 2 and bad.stderr.strip() == "error: unknown policy 'drop'; use exclude or keep-marked"
    monkeypatch.delenv("HF_TOKEN", raising=False)
    hub = runner.invoke(app, args + ["--push-to-hub", "me/bbsard-clean"])
    assert hub.exit_code == 2 and "HF_TOKEN" in hub.stderr
    assert "Traceback" not in hub.output

def test_release_from_an_hf_source_writes_the_corpus_from_the_loaded_data(release, tmp_path):
    """A second release made from the first one's `datasets` copy: articles come from the loaded corpus."""
    _, _, out = release
    ds = load_dataset(f"hf:{out}/hf")
    verdicts = tmp_path / "v2.csv"
    pd.DataFrame({"id": [7], "verdict": ["minor"], "corrected_nl": ["Wat kost een pro-Deoadvocaat?"]}).to_csv(
        verdicts, index=False)
    build_release(ds, verdicts, tmp_path / "second")
    back = load_dataset(str(tmp_path / "second"))
    assert back.by_id()[7].target == "Wat kost een pro-Deoadvocaat?"
    assert back.corpus.texts("fr") == ds.corpus.texts("fr")
    articles = pd.read_csv(tmp_path / "second" / "articles_nl.csv")
    assert list(articles.columns) == ["id", "article", "code"] and articles["code"].eq("Code civil").all()
