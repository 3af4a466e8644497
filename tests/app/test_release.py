"""Release: corrections applied, verification statuses, CHANGELOG, card, and round trips through the
project's loader (CSV layout and hf: save_to_disk) and through `datasets` itself."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import need
from release_fixtures import FR, NL, make_dataset, write_review

from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.errors import InputError
from bbsard_audit.app.release import ReleasePolicy, build_release


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
