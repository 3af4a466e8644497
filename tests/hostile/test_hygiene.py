"""Text hygiene and untrusted input (docs/reliability.md, "Untrusted input"): one Unicode form
everywhere, single-choice conflicts never first-wins, bounded YAML, spreadsheet-safe CSV cells,
Markdown/HTML-escaped reports. HTTP misbehaviour: tests/hostile/test_untrusted_http.py."""

from __future__ import annotations

import csv
import io
import json
import shutil
import time
import unicodedata

import pandas as pd
import pytest
from typer.testing import CliRunner

from bbsard_audit.annotations.pull import RAW_FILE
from bbsard_audit.annotations.simulate import annotation_result
from bbsard_audit.app.cli import app
from bbsard_audit.base.contracts.changelog import CHANGELOG
from bbsard_audit.base.contracts.table import FORMULA_START, shield, unshield
from bbsard_audit.base.contracts.verdicts import RAW, VERDICTS_CSV, canonical_name, read_raw, read_verdicts
from bbsard_audit.base.dataset import sample_dir
from bbsard_audit.base.io import sidecar_path
from bbsard_audit.base.contracts.audit import Layout

runner = CliRunner()


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


# ---------------------------------------------------------------- one Unicode form (NFC)

def decomposed_sample(folder):
    """The sample dataset and its back-translations with every text in NFD (as some tools export)."""
    folder.mkdir()
    changed = 0
    for path in sample_dir().glob("*"):
        if path.suffix in (".csv", ".jsonl"):
            text = path.read_text(encoding="utf-8")
            changed += nfd(text) != text
            (folder / path.name).write_text(nfd(text), encoding="utf-8")
    assert changed >= 4  # questions and articles in both languages, back-translations
    return folder


def test_nfd_and_nfc_copies_of_the_sample_give_the_same_audit(tmp_path, embedding_cache):
    composed = tmp_path / "nfc"
    shutil.copytree(sample_dir(), composed)
    outs = {}
    for name, folder in (("nfc", composed), ("nfd", decomposed_sample(tmp_path / "nfd_data"))):
        code, output = run("audit", "--dataset", folder, "--backtranslations", folder / "backtranslations_nl_fr.jsonl",
                           "--cache-dir", embedding_cache, "--out", tmp_path / name)
        assert code == 0, output
        outs[name] = pd.read_csv(tmp_path / name / "audit.csv", dtype=str, keep_default_na=False)
    nfc_audit, nfd_audit = outs["nfc"], outs["nfd"]
    assert (nfc_audit["flags"] != "").sum() > 5 and nfc_audit["flags"].str.contains("term_rejected").any()
    for column in ("flags", "reasons", "risk", "severity"):
        changed = nfd_audit.loc[nfd_audit[column] != nfc_audit[column], "id"].tolist()
        assert not changed, f"{column} differs on ids {changed}"
    pd.testing.assert_frame_equal(nfd_audit, nfc_audit)  # spans and texts alike


def test_an_export_of_decomposed_text_gives_spans_on_the_stored_nfc_text(tmp_path):
    """An export made from NFD text: offsets are remapped onto the NFC text; a span that would cut
    a composed letter in two is refused (one line)."""
    from bbsard_audit.annotations.spans import spans_from_result

    stored_nl = "Wat is de procédure voor een erfenis?"
    text = nfd(stored_nl)
    start = text.index("erfenis")
    region = {"id": "r1", "from_name": "nl_spans", "to_name": "question_nl", "type": "labels",
              "value": {"start": start, "end": start + 7, "text": "erfenis", "labels": ["terminology"]}}
    [span] = spans_from_result([region], {"fr": "", "nl": text})
    assert stored_nl[span["start"]:span["end"]] == span["text"] == "erfenis" and span["start"] == start - 1
    cut = text.index("e\u0301") + 1  # between the e and its accent
    region["value"] = {"start": 0, "end": cut, "labels": ["terminology"]}
    with pytest.raises(Exception, match="cuts a character of question_nl in two"):
        spans_from_result([region], {"fr": "", "nl": text})


def test_nfd_corrections_and_names_are_stored_as_nfc(tmp_path):
    correction = "De erfgenamen moeten de nalatenschap aanvaarden, zegt de rechtbank van Liège."
    export = [{"id": 10, "data": {"question_id": 1},
               "annotations": [{"id": 1, "completed_by": {"id": 1, "email": nfd("José@X.org")},
                                "created_at": "2026-01-02T09:00:00Z", "updated_at": "2026-01-02T09:00:00Z",
                                "result": annotation_result("legal", nfd(correction), layout=Layout())}]}]
    (tmp_path / "export.json").write_text(json.dumps(export))
    code, output = run("annotate", "pull", "--from-file", tmp_path / "export.json", "--out", tmp_path / "verdicts.csv")
    assert code == 0, output
    verdicts = read_verdicts(tmp_path / "verdicts.csv")
    assert verdicts["corrected_target"].tolist() == [correction] and verdicts["annotators"].tolist() == ["josé@x.org"]
    (tmp_path / "hand.csv").write_text(f"id,verdict,corrected_nl\n1,legal,\"{nfd(correction)}\"\n", encoding="utf-8")
    assert read_verdicts(tmp_path / "hand.csv")["corrected_target"].tolist() == [correction]  # a hand-made NFD file


# ---------------------------------------------------------------- verdicts: conflicts and identities

def ann(ann_id, who, result, updated="2026-01-02T10:00:00Z"):
    return {"id": ann_id, "completed_by": who, "was_cancelled": False, "created_at": "2026-01-02T09:00:00Z",
            "updated_at": updated, "result": result}


def two_choices(control="verdict", choices=("legal", "correct")):
    result = annotation_result("correct", gold_labels_apply="yes", layout=Layout())
    for region in result:
        if region["from_name"] == control:
            region["value"]["choices"] = list(choices)
    return result


@pytest.mark.parametrize("control, choices", [("verdict", ("legal", "correct")), ("verdict", ("correct", "legal")),
                                              ("gold_labels_apply", ("yes", "no"))])
def test_two_choices_in_a_single_choice_control_are_a_reported_conflict(tmp_path, control, choices):
    tasks = [{"id": 10, "data": {"question_id": 1}, "annotations": [ann(70, 5, two_choices(control, choices)),
                                                                       ann(71, 6, annotation_result("correct", layout=Layout()))]},
             {"id": 20, "data": {"question_id": 2}, "annotations": [ann(72, 5, annotation_result("legal", layout=Layout()))]},
             {"id": 30, "data": {"question_id": 3}, "annotations": [ann(73, 6, two_choices(control, choices))]}]
    (tmp_path / "export.json").write_text(json.dumps(tasks))
    code, output = run("annotate", "pull", "--from-file", tmp_path / "export.json", "--out", tmp_path / "verdicts.csv")
    assert code == 0, output
    assert "2 annotation(s) give several choices" in output and "annotation ids 70, 73" in output, output
    verdicts = read_verdicts(tmp_path / "verdicts.csv").set_index("id")
    assert verdicts.loc[[1, 3], "verdict"].tolist() == ["", ""]  # never the first choice
    assert verdicts.loc[[1, 3], "agreement_status"].tolist() == ["unresolved", "unresolved"]
    assert verdicts.loc[2, "verdict"] == "legal" and verdicts.loc[2, "agreement_status"] == "single"
    assert sorted(read_raw(tmp_path / RAW_FILE)["annotation_id"]) == ["71", "72"]


def test_the_same_choice_twice_is_no_conflict():
    from bbsard_audit.annotations.pull import raw_from_export

    result = two_choices("verdict", ("legal", "Legally inaccurate"))  # alias and displayed value
    raw = raw_from_export([{"id": 10, "data": {"question_id": 1}, "annotations": [ann(70, 5, result)]}])
    assert raw["verdict"].tolist() == ["legal"]


def test_annotator_names_compare_case_and_space_insensitively(tmp_path):
    assert canonical_name(" Alice@X.org ") == canonical_name("alice@x.org") == "alice@x.org"
    first = [{"id": 10, "data": {"question_id": 1},
              "annotations": [ann(70, {"id": 5, "email": " Alice@X.org"}, annotation_result("legal", layout=Layout()))]}]
    later = [{"id": 10, "data": {"question_id": 1},
              "annotations": [ann(80, {"id": 9, "email": "alice@x.org"}, annotation_result("correct", layout=Layout()),
                                  updated="2026-01-03T10:00:00Z")]}]
    for i, tasks in enumerate((first, later)):
        (tmp_path / f"e{i}.json").write_text(json.dumps(tasks))
        code, output = run("annotate", "pull", "--from-file", tmp_path / f"e{i}.json", "--out", tmp_path / "verdicts.csv")
        assert code == 0, output
    raw = read_raw(tmp_path / RAW_FILE)
    assert raw["annotator"].tolist() == ["alice@x.org"] and raw["verdict"].tolist() == ["correct"]
    assert read_verdicts(tmp_path / "verdicts.csv")["agreement_status"].tolist() == ["single"]


# ---------------------------------------------------------------- bounded YAML

LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("option, name, body", [
    ("--glossary", "glossary.yaml", "version: x\n" + LAUGHS + "entries: *i\n"),
    ("--learned", "learned.yaml", "version: x\n" + LAUGHS + "entries: [*i]\n"),
    ("--config", "risk.yaml", LAUGHS),
])
def test_a_billion_laughs_yaml_is_one_line_at_once(tmp_path, option, name, body):
    (tmp_path / name).write_text(body)
    started = time.monotonic()
    code, output = run("audit", "--dataset", "sample", option, tmp_path / name, "--out", tmp_path / "o")
    assert time.monotonic() - started < 30
    assert code == 2 and len(output.strip().splitlines()) == 1 and "alias" in output, output
    assert not (tmp_path / "o").exists()


def test_a_deep_or_huge_yaml_is_one_line(tmp_path):
    from bbsard_audit.base.errors import InputError
    from bbsard_audit.base.untrusted import MAX_YAML_BYTES, MAX_YAML_DEPTH, load_yaml

    deep = tmp_path / "deep.yaml"
    deep.write_text("".join("  " * i + f"k{i}:\n" for i in range(MAX_YAML_DEPTH + 5)) + "  " * (MAX_YAML_DEPTH + 5) + "x\n")
    with pytest.raises(InputError, match="nests deeper"):
        load_yaml(deep)
    huge = tmp_path / "huge.yaml"
    huge.write_bytes(b"# " + b"x" * MAX_YAML_BYTES + b"\n")
    with pytest.raises(InputError, match="more than the"):
        load_yaml(huge)


# ---------------------------------------------------------------- spreadsheet-safe CSV cells

TRICKY = ["=HYPERLINK(\"http://x\",\"y\")", "=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx",
          "'=already", "''", "'", "'s-Gravenhage", "'t Hof", "-", "plain", "", "-0.5", "1e-3", "- item"]


def test_shield_makes_no_cell_a_formula_and_unshield_gives_every_text_back():
    for text in TRICKY:
        written = shield(text)
        assert unshield(written) == text
        assert written[:1] not in FORMULA_START or written in ("-0.5",), written
    assert shield("-0.5") == "-0.5" and shield("'s-Gravenhage") == "'s-Gravenhage"


def raw_frame(texts):
    return pd.DataFrame({"id": range(1, len(texts) + 1), "task_id": "1", "annotation_id": [str(i) for i in range(len(texts))],
                         "annotator": ["=cmd|' /c calc'!a0"] * len(texts), "verdict": "legal", "corrected_nl": texts,
                         "gold_labels_apply": "yes", "created_at": "", "updated_at": ""})


def test_people_csvs_carry_no_formula_and_read_back_exactly(tmp_path):
    raw = raw_frame(TRICKY)
    path = tmp_path / RAW_FILE
    RAW.write(path, raw)
    cells = [c for row in list(csv.reader(io.StringIO(path.read_text(), newline="")))[1:] for c in row]
    assert not [c for c in cells if c and c[0] in FORMULA_START and c != "-0.5"], cells
    back = read_raw(path)
    assert back["corrected_target"].tolist() == TRICKY and set(back["annotator"]) == {"=cmd|' /c calc'!a0"}
    assert json.loads(sidecar_path(path).read_text())["files"][RAW_FILE]["cells"] == "spreadsheet-safe"
    path.with_name("copy.csv").write_bytes(path.read_bytes())  # no sidecar: the escape is read as such
    assert RAW.read(path.with_name("copy.csv"))["corrected_nl"].tolist() == TRICKY
    verdicts = pd.DataFrame({"id": [1, 2], "verdict": ["legal", "minor"], "corrected_nl": ["=1+1", "'=x"],
                             "annotators": ["@a;b", "+c"]})
    VERDICTS_CSV.write(tmp_path / "verdicts.csv", verdicts)
    assert read_verdicts(tmp_path / "verdicts.csv")[["corrected_target", "annotators"]].values.tolist() == [
        ["=1+1", "@a;b"], ["'=x", "+c"]]
    changes = pd.DataFrame({"id": [1], "split": ["test"], "old_nl": ["-x"], "new_nl": ["=y"], "verdict": ["legal"],
                            "annotators": ["@z"], "date": ["2026-01-01"], "verification": ["corrected"],
                            "gold_labels_apply": [""]})
    CHANGELOG.write(tmp_path / "CHANGELOG.csv", changes)
    assert (tmp_path / "CHANGELOG.csv").read_text().splitlines()[1] == "1,test,'-x,'=y,legal,'@z,2026-01-01,corrected,"
    assert CHANGELOG.read(tmp_path / "CHANGELOG.csv")[["old_nl", "new_nl", "annotators"]].values.tolist() == [["-x", "=y", "@z"]]


def test_a_file_written_before_the_escape_reads_verbatim(tmp_path):
    """An older version wrote cells as they were and recorded no `cells` mark: a text that starts
    with `'=` or `''` in such a file is read as it is, not unescaped."""
    path = tmp_path / RAW_FILE
    RAW.write(path, raw_frame(["x"]))
    old = ("id,task_id,annotation_id,annotator,verdict,corrected_nl,gold_labels_apply,created_at,updated_at\n"
           "1,1,0,a@x.org,legal,'=kept,yes,,\n2,1,1,a@x.org,legal,''quoted,yes,,\n")
    path.write_text(old)
    meta = json.loads(sidecar_path(path).read_text())
    meta["files"][RAW_FILE] = {"rows": 2, "sha256": "0" * 64}  # an older sidecar: no `cells`
    sidecar_path(path).write_text(json.dumps(meta))
    assert read_raw(path)["corrected_target"].tolist() == ["'=kept", "''quoted"]


# ---------------------------------------------------------------- report.md / report.html escape every input

RUN = "[x](javascript:alert(1))"
ANNOTATOR = "<img src=x onerror=alert(1)>*bold*"


def test_hostile_run_and_annotator_names_are_shown_not_rendered(tmp_path):
    """A run and an annotator named with Markdown link / HTML syntax: report.md, rendered by a
    CommonMark + tables renderer, and report.html show the names as text, with no link but the
    report's own #anchors and no tag from the data."""
    from html.parser import HTMLParser

    from markdown_it import MarkdownIt

    from bbsard_audit.app.report import build_report
    from report_fixtures import write_workdir

    work = write_workdir(tmp_path / "work")
    for path in work.iterdir():
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("bm25_fr", RUN).replace("anna", ANNOTATOR.replace('"', "")), encoding="utf-8")
    files = build_report(work)
    markdown = files.markdown.read_text(encoding="utf-8")

    class Tags(HTMLParser):
        def __init__(self):
            super().__init__()
            self.links, self.tags, self.text = [], set(), []

        def handle_starttag(self, tag, attrs):
            self.tags.add(tag)
            self.links += [v for k, v in attrs if k in ("href", "src") and v and not v.startswith("data:image/png")]

        def handle_data(self, data):
            self.text.append(data)

    renderer = MarkdownIt("commonmark").enable("table")  # raw HTML passes, as on many sites
    renderer.validateLink = lambda url: True  # a renderer that does not filter javascript: itself
    for name, page in (("report.md", renderer.render(markdown)),
                       ("report.html", files.html.read_text(encoding="utf-8"))):
        tags = Tags()
        tags.feed(page)
        assert tags.links and all(link.startswith("#") for link in tags.links), (name, tags.links)
        assert "img" not in tags.tags or name == "report.html", name  # report.html's own figures only
        shown = "".join(tags.text)
        assert RUN in shown and ANNOTATOR.replace('"', "") in shown, name


def test_an_nfd_glossary_is_the_same_glossary(tmp_path):
    from bbsard_audit.audit.glossary import SHIPPED, Glossary

    text = SHIPPED.read_text(encoding="utf-8")
    assert nfd(text) != text
    (tmp_path / "glossary.yaml").write_text(nfd(text), encoding="utf-8")
    composed, decomposed = Glossary.load(SHIPPED), Glossary.load(tmp_path / "glossary.yaml")
    assert [(e.fr, e.nl_accepted, e.nl_rejected) for e in decomposed.entries] == [
        (e.fr, e.nl_accepted, e.nl_rejected) for e in composed.entries]


def test_an_earlier_pull_with_mixed_case_names_merges_with_this_one(tmp_path):
    """annotations_raw.csv and error_spans.csv as an older version left them ("Alice@X.org"): this
    pull's "alice@x.org" is the same annotator, her re-annotation replaces her row and her spans."""
    from bbsard_audit.annotations.spans import SPANS_FILE
    from bbsard_audit.base.contracts.error_spans import ERROR_SPANS
    from bbsard_audit.base.io import guard_outputs, write_text

    with guard_outputs(tmp_path, command="annotate pull"):
        write_text(tmp_path / RAW_FILE, "id,task_id,annotation_id,annotator,verdict,corrected_nl,gold_labels_apply,"
                   "created_at,updated_at\n1,10,70,Alice@X.org,legal,,yes,2026-01-01T09:00:00Z,2026-01-01T09:00:00Z\n")
        write_text(tmp_path / SPANS_FILE, "id,annotator,side,start,end,text,category,note\n"
                   "1,Alice@X.org,nl,0,3,Wat,terminology,\n")
    tasks = [{"id": 10, "data": {"question_id": 1, "question_nl": "Wat is dat?", "question_fr": "Quoi?"},
              "annotations": [ann(80, {"id": 9, "email": "alice@x.org"}, annotation_result("correct", layout=Layout()),
                                  updated="2026-01-03T10:00:00Z")]}]
    (tmp_path / "e.json").write_text(json.dumps(tasks))
    code, output = run("annotate", "pull", "--from-file", tmp_path / "e.json", "--out", tmp_path / "verdicts.csv")
    assert code == 0, output
    raw = read_raw(tmp_path / RAW_FILE)
    assert raw[["annotator", "verdict"]].values.tolist() == [["alice@x.org", "correct"]]
    assert ERROR_SPANS.read(tmp_path / SPANS_FILE).empty  # her new annotation has no span
