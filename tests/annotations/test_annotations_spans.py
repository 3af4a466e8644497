"""Error spans in Label Studio, the adaptive campaign queue and the stopping rule (issue 9).

The first tests need no server; the last ones run one real Label Studio round trip on the
session server (push with predicted spans, a span annotation posted through the API, pull to
error_spans.csv, an older-config project refused, next batches that never re-push a reviewed pair).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from bbsard_audit.annotations import simulate
from bbsard_audit.annotations.adaptive import Campaign
from bbsard_audit.annotations.connection import Connection
from bbsard_audit.annotations.estimate import Goal, estimate
from bbsard_audit.annotations.project import ReviewProject, config_controls
from bbsard_audit.annotations.spans import CATEGORIES, prediction_result, spans_from_result
from bbsard_audit.annotations.tasks import QUEUE_COLUMNS, build_tasks, label_config, read_audit
from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import QuestionPair
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.contracts.audit import Layout
from conftest import write_review_files

runner = CliRunner()
FR = "Le bailleur 🏠 peut-il résilier le bail pour insalubrité ?"
NL = "Kan de verhuurder 🏠 de huurovereenkomst opzeggen wegens onbewoonbaarheid?"


def cli(*args):
    return runner.invoke(app, ["annotate", *map(str, args)])


def span(side: str, text: str, word: str, category: str, **extra) -> dict:
    start = text.index(word)
    return {"side": side, "start": start, "end": start + len(word), "text": word, "category": category, **extra}


AUDIT_SPANS = [span("fr", FR, "insalubrité", "terminology", flag="term_rejected"),
               span("nl", NL, "onbewoonbaarheid", "terminology", flag="term_rejected")]


@pytest.fixture
def pairs():
    """20 pairs; the first has an emoji before its spans (UTF-16 offsets would differ from Python's)."""
    return [QuestionPair(id=1, split="test", source=FR, target=NL, article_ids=(1,))] + [
        QuestionPair(id=100 + i, split="test", source=f"Question juridique numéro {i} ?",
                     target=f"Juridische vraag nummer {i}?", article_ids=(i,)) for i in range(19)]


def with_spans(path, spans_by_id: dict[int, list[dict]]):
    """Add the `spans` column (docs/formats.md) by hand, as the audit's signals will."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame["spans"] = [json.dumps(spans_by_id.get(int(i), []), ensure_ascii=False) for i in frame["id"]]
    frame.to_csv(path, index=False)


@pytest.fixture
def review(tmp_path, pairs):
    """Seed 6 puts the pair with spans in the risk queue."""
    audit, queue = write_review_files(tmp_path / "run", pairs, seed=6, budget=4, control=4)
    assert 1 in set(pd.read_csv(queue).query("queue == 'risk'")["id"])
    for path in (audit, queue):
        with_spans(path, {1: AUDIT_SPANS})
    return audit, queue


# --- spans without a server ---------------------------------------------------------------------

def test_prediction_offsets_are_python_offsets_and_round_trip():
    twice = {**AUDIT_SPANS[0], "flag": "term_missing"}  # the same words from another flag: one region
    result = prediction_result([*AUDIT_SPANS, twice], {"fr": FR, "nl": NL})
    assert [r["from_name"] for r in result] == ["fr_spans", "nl_spans"]
    nl = next(r for r in result if r["from_name"] == "nl_spans")
    # the emoji is 1 code point (2 UTF-16 code units): Label Studio counts code points, as Python does
    assert nl["value"]["start"] == NL.index("onbewoonbaarheid")
    assert nl["value"]["text"] == "onbewoonbaarheid" and nl["value"]["labels"] == ["terminology"]
    back = spans_from_result(result, {"fr": FR, "nl": NL})
    assert [(r["side"], r["start"], r["end"], r["text"], r["category"]) for r in back] == \
        [(s["side"], s["start"], s["end"], s["text"], s["category"]) for s in AUDIT_SPANS]


def test_span_outside_text_or_mismatched_is_one_line():
    bad = prediction_result(AUDIT_SPANS, {"fr": FR, "nl": NL})
    bad[1]["value"]["text"] = "huurovereenkomst"
    with pytest.raises(InputError, match=r"id 7: nl span text 'huurovereenkomst' is not question_nl"):
        spans_from_result(bad, {"fr": FR, "nl": NL}, id=7)
    bad[1]["value"].update(start=500, end=510)
    with pytest.raises(InputError, match="outside question_nl"):
        spans_from_result(bad, {"fr": FR, "nl": NL}, id=7)


def test_audit_spans_checked_with_file_row_id(tmp_path, review):
    audit, queue = review
    frame = pd.read_csv(queue, dtype=str, keep_default_na=False)
    frame.loc[frame["id"] == "1", "spans"] = json.dumps([{**AUDIT_SPANS[1], "end": 999}])
    frame.to_csv(tmp_path / "bad.csv", index=False)
    row = int(np.flatnonzero(frame["id"] == "1")[0]) + 2
    with pytest.raises(InputError, match=rf"bad.csv, row {row}, id 1: spans\[0\] text 'onbewoonbaarheid' is not "
                                         r"question_nl\[56:999\]"):
        read_audit(tmp_path / "bad.csv", QUEUE_COLUMNS)
    # no spans column: no spans, and the prediction is the verdict guess alone
    plain = pd.read_csv(queue).drop(columns="spans")
    plain.to_csv(tmp_path / "plain.csv", index=False)
    tasks = build_tasks(read_audit(tmp_path / "plain.csv", QUEUE_COLUMNS), model_version="audit", layout=Layout())
    assert all(len(t["predictions"][0]["result"]) == 1 for t in tasks)
    task = next(t for t in build_tasks(read_audit(queue, QUEUE_COLUMNS), model_version="audit", layout=Layout.of(queue))
                if t["data"]["question_id"] == 1)
    assert [r["from_name"] for r in task["predictions"][0]["result"]] == ["verdict", "fr_spans", "nl_spans"]


def test_labelling_config_has_span_labels_and_detects_an_older_one():
    ours = config_controls(label_config(Layout()))
    assert ours["fr_spans"] == ours["nl_spans"] == frozenset(CATEGORIES)
    root = ElementTree.fromstring(label_config(Layout()))
    targets = {el.get("name"): el.get("toName") for el in root.iter() if el.get("toName")}
    assert targets["fr_spans"] == targets["fr_note"] == "question_fr"
    assert targets["nl_spans"] == targets["nl_note"] == "question_nl"
    assert config_controls(old_config()) == {k: v for k, v in ours.items() if k in ("verdict", "corrected_nl",
                                                                                     "gold_labels_apply")}


def old_config() -> str:
    """The labelling config before span labels: ours without the span and note controls."""
    root = ElementTree.fromstring(label_config(Layout()))
    for el in list(root):
        if el.get("name") in ("fr_spans", "nl_spans", "fr_note", "nl_note"):
            root.remove(el)
    return ElementTree.tostring(root, encoding="unicode")


def export_with_spans(kept: list[dict], added: list[dict], annotator_id: int = 3, ann_id: int = 11) -> list[dict]:
    texts = {"fr": FR, "nl": NL}
    result = simulate.annotation_result("legal", "Kan de verhuurder de huurovereenkomst opzeggen wegens "
                                        "ongezondheid?", "yes", spans=[*kept, *added], texts=texts, layout=Layout())
    return [{"id": 5, "data": {"question_id": 1, "question_fr": FR, "question_nl": NL},
             "annotations": [{"id": ann_id, "completed_by": annotator_id, "result": result,
                              "was_cancelled": False, "created_at": "2026-01-01T00:00:00Z",
                              "updated_at": f"2026-01-0{ann_id % 9 + 1}T00:00:00Z"}]}]


def test_pull_from_file_writes_error_spans_and_merges_later_pulls(tmp_path):
    added = span("nl", NL, "opzeggen", "mistranslation", note="ontbinden is the Belgian term")
    export = tmp_path / "export.json"
    export.write_text(json.dumps(export_with_spans([AUDIT_SPANS[1]], [added])), encoding="utf-8")
    out = tmp_path / "pulled" / "verdicts.csv"
    res = cli("pull", "--from-file", export, "--out", out)
    assert res.exit_code == 0, res.output
    rows = pd.read_csv(out.parent / "error_spans.csv", keep_default_na=False)
    assert list(rows.columns) == ["id", "annotator", "side", "start", "end", "text", "category", "note"]
    assert rows.to_dict("records") == [  # sorted by id, annotator, side, offsets
        {"id": 1, "annotator": "user:3", "side": "nl", "start": added["start"], "end": added["end"],
         "text": "opzeggen", "category": "mistranslation", "note": "ontbinden is the Belgian term"},
        {"id": 1, "annotator": "user:3", "side": "nl", "start": AUDIT_SPANS[1]["start"], "end": AUDIT_SPANS[1]["end"],
         "text": "onbewoonbaarheid", "category": "terminology", "note": ""}]
    assert all(NL[r["start"]:r["end"]] == r["text"] for r in rows.to_dict("records"))
    assert json.loads((out.parent / "error_spans.meta.json").read_text())["n_spans"] == 2
    assert pd.read_csv(out).columns.tolist()[:3] == ["id", "verdict", "corrected_nl"]  # verdicts.csv unchanged

    # a later export where another reviewer deleted every span: user-3's spans stay, user-4 has none
    export.write_text(json.dumps(export_with_spans([], [], annotator_id=4, ann_id=12)), encoding="utf-8")
    assert cli("pull", "--from-file", export, "--out", out).exit_code == 0
    again = pd.read_csv(out.parent / "error_spans.csv", keep_default_na=False)
    assert again.equals(rows)
    # user-3 re-annotates (later) and keeps only the added span
    export.write_text(json.dumps(export_with_spans([], [added], annotator_id=3, ann_id=13)), encoding="utf-8")
    assert cli("pull", "--from-file", export, "--out", out).exit_code == 0
    assert pd.read_csv(out.parent / "error_spans.csv")["text"].tolist() == ["opzeggen"]

    # a span that does not match its task's text: one line, nothing written
    before = {p.name: p.read_bytes() for p in out.parent.iterdir()}
    broken = export_with_spans([AUDIT_SPANS[1]], [])
    value = broken[0]["annotations"][0]["result"][1]["value"]
    value["start"], value["end"] = value["start"] - 3, value["end"] - 3
    export.write_text(json.dumps(broken), encoding="utf-8")
    res = cli("pull", "--from-file", export, "--out", out)
    assert res.exit_code == 2 and res.output.count("\n") == 1
    assert "export.json, id 1: nl span text" in res.output
    assert {p.name: p.read_bytes() for p in out.parent.iterdir()} == before


# --- stopping rule ----------------------------------------------------------------------------------

def test_unreviewed_errors_and_targets_match_a_hand_computation():
    """Risk queue of 10 (all reviewed, 4 legal), 90 unflagged pairs sampled by 10 controls (1 legal)."""
    ids = np.arange(100)
    audit = pd.DataFrame({"id": ids, "flagged": ids < 10, "split": "test"})
    queue = pd.DataFrame({"id": ids[:20], "queue": ["risk"] * 10 + ["control"] * 10})
    verdicts = pd.DataFrame({"id": ids[:20], "verdict": ["legal"] * 4 + ["correct"] * 6 + ["legal"] + ["minor"] * 9})
    est = estimate(audit, verdicts, queue, seed=1, draws=40000, goal=Goal(max_missed=8))
    total, *groups = est.unreviewed
    assert {g.name: g.unreviewed for g in groups} == {"flagged": 0, "unflagged": 80}
    flagged, unflagged = groups
    assert (flagged.expected, flagged.ci_low, flagged.ci_high) == (0, 0, 0)  # a census leaves nothing
    assert unflagged.expected == pytest.approx(80 * 1 / 10)
    # 80 unreviewed pairs ~ BetaBinomial(80, r n + 1/2, (1 - r) n + 1/2), r = 1/10, n = 10
    law = stats.betabinom(80, 1.5, 9.5)
    assert unflagged.ci_low == pytest.approx(law.ppf(0.025), abs=1)
    assert unflagged.ci_high == pytest.approx(law.ppf(0.975), abs=1)
    assert (total.expected, total.ci_high) == (unflagged.expected, unflagged.ci_high)
    assert est.share_legal == pytest.approx((4 + 90 * 0.1) / 100)
    assert est.ci_low * 100 == pytest.approx(4 + law.ppf(0.025), abs=1)
    assert est.target.met and est.target.expected_missed == pytest.approx(8)
    assert not estimate(audit, verdicts, queue, seed=1, goal=Goal(max_missed=7.9)).target.met
    half = (est.ci_high - est.ci_low) / 2
    assert estimate(audit, verdicts, queue, seed=1, draws=40000, goal=Goal(target_halfwidth=half + 1e-9)).target.met
    assert not estimate(audit, verdicts, queue, seed=1, draws=40000, goal=Goal(target_halfwidth=half - 0.01)).target.met
    assert estimate(audit, verdicts, queue, seed=1).target is None


# --- adaptive campaign without a server ----------------------------------------------------------

def test_campaign_design_keeps_control_and_shrinks_strata_by_batches(tmp_path):
    """Two control strata (split/category) as the audit stage draws them; batches take unflagged pairs."""
    n = 40
    ids = np.arange(1, n + 1)
    audit = pd.DataFrame({"id": ids, "split": "test", "category": np.where(ids % 2, "Logement", "Travail"),
                          "question_fr": [f"q{i} ?" for i in ids], "question_nl": [f"v{i}?" for i in ids],
                          "backtranslation": "", "risk": np.round(1 - ids / 100, 2), "severity": "none",
                          "flagged": ids <= 6, "flags": "", "reasons": ""})
    audit_path = tmp_path / "audit.csv"
    audit.to_csv(audit_path, index=False)
    pool = audit[~audit["flagged"]]
    sizes = pool.groupby("category").size()
    control = pd.concat([pool[pool["category"] == c].tail(3) for c in sizes.index])
    queue = pd.concat([audit[audit["flagged"]].head(4).assign(queue="risk", stratum="flagged", stratum_size=6,
                                                              stratum_sampled=4),
                       control.assign(queue="control", stratum="test/" + control["category"],
                                      stratum_size=control["category"].map(sizes), stratum_sampled=3)])
    queue_path = tmp_path / "review_queue.csv"
    queue.to_csv(queue_path, index=False)
    camp = tmp_path / "camp"
    state = Campaign.start(camp, project="p", audit=read_audit(audit_path), audit_path=audit_path,
                           queue=read_audit(queue_path, QUEUE_COLUMNS), queue_path=queue_path)
    assert state.record["design"]["strata_from"] == "strata"
    state.save()
    # reviewed (in the folder's verdicts.csv) or held on the server: never queued again
    pd.DataFrame({"id": [5], "verdict": ["legal"]}).to_csv(camp / "verdicts.csv", index=False)
    state = Campaign.load(camp)
    batch = state.add_batch(read_audit(audit_path), audit_path, 5, exclude={7})
    assert batch["id"].tolist() == [6, 8, 9, 10, 11]  # by risk; 1-4 queued, 5 reviewed, 7 on the server
    state.save()
    design = Campaign.load(camp).design_queue()
    ctrl = design[design["queue"] == "control"].groupby("stratum")[["stratum_size", "stratum_sampled"]].max()
    # 8, 9, 10, 11 were unflagged at the start: Logement loses 9 and 11, Travail 8 and 10
    assert ctrl.loc["test/Logement"].tolist() == [sizes["Logement"] - 2, 3]
    assert ctrl.loc["test/Travail"].tolist() == [sizes["Travail"] - 2, 3]
    assert sorted(design.loc[design["queue"] == "control", "id"]) == sorted(control["id"])

    # the estimate follows the start design whatever today's audit flags
    verdicts = pd.DataFrame({"id": design["id"], "verdict": np.where(design["queue"] == "risk", "legal", "correct")})
    verdicts.to_csv(camp / "verdicts.csv", index=False)
    today = audit.assign(flagged=True)
    today.to_csv(tmp_path / "today.csv", index=False)
    res = cli("estimate", "--audit", tmp_path / "today.csv", "--campaign", camp, "--out", tmp_path / "e.json",
              "--target-halfwidth", 0.5)
    assert res.exit_code == 0, res.output
    est = json.loads((tmp_path / "e.json").read_text())
    strata = {s["name"]: (s["population"], s["reviewed"], s["legal"]) for s in est["strata"]}
    assert strata["risk_queue"] == (9, 9, 9) and strata["flagged"] == (1, 0, 0)  # id 5, flagged at the start
    assert strata["unflagged:test/Logement"] == (sizes["Logement"] - 2, 3, 0)
    assert {m["name"]: m["unreviewed"] for m in est["unreviewed"]} == {"all": 40 - 15, "flagged": 1,
                                                                         "unflagged": 40 - 15 - 1}
    assert est["target"]["met"] and "target met" in res.output
    assert json.loads((tmp_path / "e.meta.json").read_text())["batches"] == 2


def test_campaign_push_mistakes_are_one_line_before_any_server_call(tmp_path, review, monkeypatch):
    audit, queue = review
    monkeypatch.setenv("LABEL_STUDIO_URL", "http://127.0.0.1:9")  # nothing listens: the checks come first
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "x")
    camp = tmp_path / "camp"
    res = cli("push", "--audit", audit, "--project", "p", "--next", 3)
    assert res.exit_code == 2 and "--next needs --campaign" in res.output
    for extra in ([], ["--next", 3]):
        res = cli("push", "--audit", audit, "--project", "p", "--campaign", camp, *extra)
        assert res.exit_code == 2 and f"no campaign in {camp}: start it with --queue" in res.output
    assert not camp.exists()
    res = cli("estimate", "--audit", audit, "--out", tmp_path / "e.json")
    assert res.exit_code == 2 and "give --verdicts (or --campaign)" in res.output


# --- real Label Studio round trip ---------------------------------------------------------------------

def _project(server, name) -> ReviewProject:
    return ReviewProject.open(Connection(server.url, server.token, retries=1, backoff=0.05), name, layout=Layout())


@pytest.mark.label_studio
@pytest.mark.timeout(900)
def test_real_server_spans_round_trip_config_guard_and_adaptive_batches(ls_env, review, tmp_path):
    audit, queue = review
    name, camp = f"t-{uuid.uuid4().hex[:10]}", tmp_path / "camp"
    start = read_audit(queue, QUEUE_COLUMNS)

    # an older-config project with our title is refused in one line, then updated on request
    project_id = _project_client(ls_env).projects.create(title=name, label_config=old_config()).id
    res = cli("push", "--audit", audit, "--queue", queue, "--project", name, "--campaign", camp)
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert f"project {name!r} (id {project_id}) uses an older labelling config (without fr_note, fr_spans, " \
           "nl_note, nl_spans): push to a new --project title, or add --update-config" in res.output
    assert not camp.exists()
    res = cli("push", "--audit", audit, "--queue", queue, "--project", name, "--campaign", camp, "--update-config")
    assert res.exit_code == 0, res.output
    assert "labelling config updated" in res.output and f"{len(start)} task(s) imported" in res.output
    # a foreign config is never replaced, even when asked
    foreign = f"t-{uuid.uuid4().hex[:10]}"
    _project_client(ls_env).projects.create(title=foreign, label_config=(
        '<View><Text name="question_nl" value="$question_nl"/><Choices name="verdict" toName="question_nl">'
        '<Choice value="ok"/></Choices></View>'))
    res = cli("push", "--audit", audit, "--queue", queue, "--project", foreign, "--update-config")
    assert res.exit_code == 2 and res.output.count("\n") == 1
    assert "uses a labelling config that is not bbsard-audit's: push to a new --project title" in res.output

    # the audit's spans are the task's prediction, at their offsets
    project = _project(ls_env, name)
    task = next(t for t in project.export() if t["data"]["question_id"] == 1)
    pred = project.client.predictions.get(task["predictions"][0] if isinstance(task["predictions"][0], int)
                                          else task["predictions"][0]["id"])
    regions = {r["from_name"]: r["value"] for r in pred.result if r["type"] == "labels"}
    assert regions["nl_spans"] == {"start": NL.index("onbewoonbaarheid"), "end": NL.index("onbewoonbaarheid") + 16,
                                   "text": "onbewoonbaarheid", "labels": ["terminology"]}
    assert regions["fr_spans"]["start"] == FR.index("insalubrité")

    # reviewer A keeps the Dutch span, deletes the French one and adds one with a note; B judges all
    added = span("nl", NL, "opzeggen", "mistranslation", note="ontbinden")
    user = simulate.ensure_reviewer(project, "spans.a@example.org")
    project.client.annotations.create(task["id"], result=simulate.annotation_result(
        "legal", spans=[AUDIT_SPANS[1], added], texts={"fr": FR, "nl": NL}, layout=Layout()), completed_by=user, project=project.id)
    verdict = {int(q): "correct" for q in start["id"]}
    simulate.annotate(project, "spans.b@example.org", verdict.get)
    res = cli("pull", "--project", name, "--out", camp / "verdicts.csv")
    assert res.exit_code == 0, res.output
    rows = pd.read_csv(camp / "error_spans.csv", keep_default_na=False)
    assert rows[["id", "annotator", "side", "start", "end", "text", "category", "note"]].values.tolist() == [
        [1, "spans.a@example.org", "nl", added["start"], added["end"], "opzeggen", "mistranslation", "ontbinden"],
        [1, "spans.a@example.org", "nl", AUDIT_SPANS[1]["start"], AUDIT_SPANS[1]["end"], "onbewoonbaarheid",
         "terminology", ""]]

    # next batch from a re-run audit that ranks reviewed pairs highest: they are never pushed again
    rerun = tmp_path / "rerun" / "audit.csv"
    rerun.parent.mkdir()
    a2 = pd.read_csv(audit)
    a2["risk"] = np.where(a2["id"].isin(start["id"]), 0.99, (a2["id"] % 7) / 10)
    a2.to_csv(rerun, index=False)
    expect = a2[~a2["id"].isin(start["id"])].sort_values(["risk", "id"], ascending=[False, True])["id"].head(3)
    gone = next(t for t in project.export() if t["data"]["question_id"] == int(start["id"].iloc[0]))
    project.client.tasks.delete(str(gone["id"]))  # a reviewed task deleted in the UI stays reviewed
    res = cli("push", "--audit", rerun, "--project", name, "--campaign", camp, "--next", 3)
    assert res.exit_code == 0, res.output
    assert "batch 1 queues 3 pair(s)" in res.output and "3 task(s) imported" in res.output
    held = sorted(t["data"]["question_id"] for t in project.export())
    assert sorted(held) == sorted(set(start["id"]) - {int(start["id"].iloc[0])} | set(expect))
    res = cli("push", "--audit", rerun, "--project", name, "--campaign", camp, "--next", 3)
    assert "batch 2 queues 3 pair(s)" in res.output
    state = Campaign.load(camp)
    assert len(set(state.queue["id"])) == len(state.queue) == len(start) + 6
    assert sorted(state.queue.loc[state.queue["queue"] == "control", "id"]) == \
        sorted(start.loc[start["queue"] == "control", "id"]) == state.record["batches"][0]["control"]
    # the restarted campaign with a different start queue is refused
    other = tmp_path / "other.csv"
    pd.read_csv(queue).head(3).to_csv(other, index=False)
    res = cli("push", "--audit", audit, "--queue", other, "--project", name, "--campaign", camp)
    assert res.exit_code == 2 and "was started with another review queue" in res.output

    # the estimate follows the frozen design and reports the errors left
    res = cli("estimate", "--audit", rerun, "--campaign", camp, "--out", camp / "estimate.json", "--max-missed", 100)
    assert res.exit_code == 0, res.output
    est = json.loads((camp / "estimate.json").read_text())
    strata = {s["name"]: s for s in est["strata"]}
    assert strata["risk_queue"]["population"] == (start["queue"] == "risk").sum() + 6
    assert sum(s["population"] for s in strata.values()) == 20
    assert est["unreviewed"][0]["name"] == "all" and est["target"]["met"] is True
    assert "target met" in res.output
    # status reports the same errors left, from the server's project and the campaign's design
    res = cli("status", "--project", name, "--campaign", camp, "--audit", rerun, "--max-missed", 0)
    assert res.exit_code == 0, res.output
    left = est["unreviewed"][0]
    assert f"legal errors left unreviewed (all): {left['expected']:.1f}" in res.output
    assert f"among the {left['unreviewed']:,} unreviewed pair" in res.output  # the one estimate's sentence
    assert ("target met" if left["expected"] == 0 else "target not met") in res.output


def _project_client(server):
    return Connection(server.url, server.token).client()


@pytest.mark.label_studio
@pytest.mark.timeout(600)
def test_real_ui_highlights_predicted_spans_on_their_words(ls_server):
    """Label Studio's own UI, in a real browser, marks each predicted span on its words after an
    emoji (offsets are code points; UTF-16 offsets were one character off)."""
    from chromium import CHROMEDRIVER, CHROMIUM, FLAGS, require_chromium

    require_chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    spans = [*AUDIT_SPANS, span("nl", NL, "opzeggen", "mistranslation")]
    project = ReviewProject.open(Connection(ls_server.url, ls_server.token), f"t-{uuid.uuid4().hex[:10]}", create=True, layout=Layout())
    data = {"question_id": 1, "question_fr": FR, "question_nl": NL, "backtranslation": "-", "audit_summary": "-",
            "gold_articles": "-"}
    verdict = {"from_name": "verdict", "to_name": "question_nl", "type": "choices", "value": {"choices": ["legal"]}}
    project.push([{"data": data, "predictions": [{"model_version": "audit-test", "score": 0.9, "result": [
        verdict, *prediction_result(spans, {"fr": FR, "nl": NL})]}]}])
    task_id = project.question_ids()[1][0]
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = Path(tempfile.mkdtemp(prefix="bbsard-ls-ui-"))
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        driver.get(f"{ls_server.url}/user/login/")
        driver.find_element("name", "email").send_keys(ls_server.username)
        driver.find_element("name", "password").send_keys(ls_server.password)
        driver.find_element("css selector", "button[type=submit], input[type=submit]").click()
        WebDriverWait(driver, 30).until(lambda d: "/login" not in d.current_url)
        driver.get(f"{ls_server.url}/projects/{project.id}/data?task={task_id}")
        marks = WebDriverWait(driver, 90).until(lambda d: d.execute_script(
            "const m = Array.from(document.querySelectorAll('.htx-highlight')).map(e => e.textContent);"
            f"return m.length >= {len(spans)} ? m : null;"))
        # the reviewer confirms the pre-filled spans and verdict: the UI's own result pulls back unchanged
        driver.find_element("xpath", "//button[normalize-space()='Submit']").click()
        exported = WebDriverWait(driver, 60).until(lambda d: [t for t in project.export() if t.get("annotations")])
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    assert sorted(m.strip() for m in marks) == sorted(s["text"] for s in spans)
    result = exported[0]["annotations"][0]["result"]
    key = ("side", "start", "end", "text", "category")
    assert sorted(tuple(r[k] for k in key) for r in spans_from_result(result, {"fr": FR, "nl": NL})) == \
        sorted(tuple(s[k] for k in key) for s in spans)
    assert next(r for r in result if r["from_name"] == "verdict")["value"]["choices"] == ["legal"]
