"""An adaptive campaign on a string-id benchmark (EN->NL, BEIR's `PLAIN-2`): campaign.json records
`"ids": "string"`, the design, a `--next` batch and the estimate keep the string ids; a campaign.json
whose ids are not of its audit's kind is one line naming the file and the id."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from benchmark_files import EN_NL
from campaign_fixtures import start_audit, write_start
from pair_fixtures import en_nl, run_audit  # noqa: F401 (en_nl: the fixture)
from typer.testing import CliRunner

from bbsard_audit.annotations.adaptive import Campaign
from bbsard_audit.annotations.tasks import QUEUE_COLUMNS, read_audit
from bbsard_audit.app.cli import app
from bbsard_audit.base.contracts.audit import Layout

runner = CliRunner()
IDS = [r[0] for r in EN_NL]


def _start(audit, queue, camp):
    Campaign.start(camp, project="p", audit=read_audit(audit), audit_path=audit,
                   queue=read_audit(queue, QUEUE_COLUMNS), queue_path=queue).save()
    return json.loads((camp / "campaign.json").read_text(encoding="utf-8"))


@pytest.mark.label_studio
def test_en_nl_string_id_campaign_next_batch_and_estimate_on_a_real_label_studio(en_nl, ls_env, tmp_path):
    from bbsard_audit.annotations import simulate
    from bbsard_audit.annotations.connection import Connection
    from bbsard_audit.annotations.project import ReviewProject

    manifest, bt = en_nl
    out, camp, name = tmp_path / "audit", tmp_path / "camp", "pair-en-nl-campaign"
    run_audit(manifest, bt, out, "--review-budget", "2", "--control", "2")
    audit, queue = out / "audit.csv", out / "review_queue.csv"
    res = runner.invoke(app, ["annotate", "push", "--audit", str(audit), "--queue", str(queue), "--project", name,
                              "--campaign", str(camp), "--dataset", str(manifest)])
    assert res.exit_code == 0, res.output
    record = json.loads((camp / "campaign.json").read_text(encoding="utf-8"))
    assert record["format"] == 3 and record["ids"] == "string"
    assert sorted(i for ids in record["design"]["strata"].values() for i in ids) == sorted(IDS)
    start = set(record["batches"][0]["risk"]) | set(record["batches"][0]["control"])
    assert start == set(pd.read_csv(queue, dtype=str)["id"]) and start < set(IDS)

    layout = Layout.of(audit)
    project = ReviewProject.open(Connection(ls_env.url, ls_env.token), name, layout=layout)
    assert set(project.question_ids()) == start
    legal = {q: "legal" if q in ("PLAIN-2", "PLAIN-6") else "correct" for q in IDS}
    assert simulate.annotate(project, "camp.en@example.org", legal.get) == len(start)
    pull = ["annotate", "pull", "--project", name, "--out", str(camp / "verdicts.csv")]
    assert runner.invoke(app, pull).exit_code == 0

    def estimate(tag):
        path = tmp_path / f"estimate-{tag}.json"
        res = runner.invoke(app, ["annotate", "estimate", "--audit", str(audit), "--campaign", str(camp),
                                  "--out", str(path), "--max-missed", "0"])
        assert res.exit_code == 0, res.output
        return json.loads(path.read_text(encoding="utf-8")), res.output

    first, output = estimate("start")
    assert sum(s["population"] for s in first["strata"]) == 6
    assert first["ci_low"] <= first["share_legal"] <= first["ci_high"] and first["ci_high"] > first["ci_low"]
    assert first["found_legal"] == sum(legal[q] == "legal" for q in start)
    assert ("target met" if first["target"]["met"] else "target not met: ") in output

    res = runner.invoke(app, ["annotate", "push", "--audit", str(audit), "--project", name, "--campaign", str(camp),
                              "--next", "5"])
    assert res.exit_code == 0, res.output
    rest = 6 - len(start)
    assert f"batch 1 queues {rest} pair(s) (only {rest} unreviewed pair(s) left)" in res.output
    assert f"{rest} task(s) imported" in res.output
    batch = json.loads((camp / "campaign.json").read_text(encoding="utf-8"))["batches"][1]["risk"]
    assert sorted(batch) == sorted(set(IDS) - start)
    assert set(project.question_ids()) == set(IDS)
    assert simulate.annotate(project, "camp.en@example.org", lambda q: legal[q] if q in batch else None) == rest
    assert runner.invoke(app, pull).exit_code == 0
    after, output = estimate("all")  # every pair reviewed: the share is exact
    assert after["found_legal"] == 2 and after["share_legal"] == pytest.approx(2 / 6)
    assert after["ci_low"] <= after["share_legal"] <= after["ci_high"] and "target met" in output
    verdicts = pd.read_csv(camp / "verdicts.csv", dtype=str)
    assert sorted(verdicts["id"]) == sorted(IDS)


def test_campaign_ids_of_the_wrong_kind_are_one_line_naming_the_file_and_the_id(en_nl, tmp_path):
    # string ids in an integer-id audit's campaign
    audit, queue = write_start(tmp_path / "run", start_audit())
    camp = tmp_path / "camp"
    record = _start(audit, queue, camp)
    assert "ids" not in record  # an integer campaign is written as before string ids
    first = next(h for h, ids in record["design"]["strata"].items() if ids)
    original, record["design"]["strata"][first][0] = record["design"]["strata"][first][0], "PLAIN-2"
    (camp / "campaign.json").write_text(json.dumps(record), encoding="utf-8")
    res = runner.invoke(app, ["annotate", "estimate", "--audit", str(audit), "--campaign", str(camp),
                              "--verdicts", str(queue), "--out", str(tmp_path / "e.json")])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert f"campaign.json, id PLAIN-2: design.strata.{first}[0] = 'PLAIN-2' is not int (the campaign's audit " \
           "has integer ids)" in res.output
    record["design"]["strata"][first][0] = original
    (camp / "campaign.json").write_text(json.dumps(record | {"ids": "string"}), encoding="utf-8")
    res = runner.invoke(app, ["annotate", "estimate", "--audit", str(audit), "--campaign", str(camp),
                              "--verdicts", str(queue), "--out", str(tmp_path / "e.json")])
    assert res.exit_code == 2 and "campaign.json: key 'ids' says string, the campaign's audit has integer ids" \
        in res.output, res.output

    # integer ids in a string-id audit's campaign
    manifest, bt = en_nl
    out, camp = tmp_path / "audit", tmp_path / "camp-en"
    run_audit(manifest, bt, out, "--review-budget", "2", "--control", "2")
    audit, queue = out / "audit.csv", out / "review_queue.csv"
    record = _start(audit, queue, camp)
    assert record["ids"] == "string" and "PLAIN-2" in {i for ids in record["design"]["strata"].values() for i in ids}
    good = json.dumps(record)
    record["design"]["control"][0] = 2
    (camp / "campaign.json").write_text(json.dumps(record), encoding="utf-8")
    res = runner.invoke(app, ["annotate", "estimate", "--audit", str(audit), "--campaign", str(camp),
                              "--verdicts", str(queue), "--out", str(tmp_path / "e.json")])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert "campaign.json, id 2: design.control[0] = 2 is not a string id (the campaign's audit has string ids)" \
        in res.output
    (camp / "campaign.json").write_text(json.dumps({k: v for k, v in json.loads(good).items() if k != "ids"}))
    res = runner.invoke(app, ["annotate", "estimate", "--audit", str(audit), "--campaign", str(camp),
                              "--verdicts", str(queue), "--out", str(tmp_path / "e.json")])
    assert res.exit_code == 2 and "key 'ids' says integer, the campaign's audit has string ids" in res.output
    assert not (tmp_path / "e.json").exists()
