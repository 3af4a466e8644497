"""Glossary mining from an aligned FR/NL corpus, and the `audit glossary` CLI commands."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from bbsard_audit.audit.glossary import Glossary
from bbsard_audit.audit.cli.glossary import flags_markdown, register_glossary_cli
from bbsard_audit.audit.glossary_mining import COLUMNS, mine
from bbsard_audit.base.cli_options import OneLineErrors
from bbsard_audit.base.dataset import Corpus, load_dataset
from bbsard_audit.base.errors import InputError

REPO = Path(__file__).resolve().parents[2]

# Aligned articles: each pair shares legal terms in both official languages, spread so that each
# French term co-occurs with exactly one Dutch term across articles.
_FILLERS = [("Le présent article s'applique aux personnes visées.", "Dit artikel is van toepassing op de bedoelde personen."),
            ("Les modalités sont fixées par le Roi.", "De nadere regels worden door de Koning bepaald."),
            ("Cette règle entre en vigueur le premier jour.", "Deze regel treedt in werking op de eerste dag."),
            ("La demande est introduite par écrit.", "Het verzoek wordt schriftelijk ingediend.")]
_TERMS = {  # French term -> (Dutch term, articles it occurs in)
    "délai de prescription": ("verjaringstermijn", range(0, 6)),
    "juge de paix": ("vrederechter", range(4, 10)),            # already in the glossary: skipped
    "caution": ("zekerheidstelling", range(8, 13)),            # French term known, Dutch rendering new
    "sursis probatoire": ("probatie-uitstel", range(10, 16)),
}


def _corpus() -> Corpus:
    fr_texts, nl_texts = [], []
    for i in range(40):
        fr_fill, nl_fill = _FILLERS[i % len(_FILLERS)]
        fr_terms = [t for t, (_, arts) in _TERMS.items() if i in arts]
        nl_terms = [n for _, (n, arts) in _TERMS.items() if i in arts]
        fr_texts.append(fr_fill + " " + " ".join(f"La {t} est réglée ici." for t in fr_terms))
        nl_texts.append(nl_fill + " " + " ".join(f"De {t} wordt hier geregeld." for t in nl_terms))
    return Corpus(ids=tuple(range(1, 41)), source_texts=tuple(fr_texts), target_texts=tuple(nl_texts))


def test_mine_finds_aligned_terms_and_skips_known_pairs():
    proposals = mine(_corpus(), min_count=3, top=50)
    assert list(proposals.columns) == COLUMNS
    pairs = {(r.fr, r.nl): r for r in proposals.itertuples()}
    top = pairs[("délai de prescription", "verjaringstermijn")]
    assert top.dice == 1.0 and top.cooc == 6 and top.fr_df == 6 and top.nl_df == 6 and not top.in_glossary
    assert pairs[("sursis probatoire", "probatie-uitstel")].dice == 1.0
    assert ("sursis", "uitstel") not in pairs  # accepted rendering of the glossary's 'sursis'
    assert ("prescription", "verjaringstermijn") not in pairs  # accepted for the glossary's 'prescription'
    # French term in the glossary, Dutch rendering not among its accepted ones: proposed, marked
    caution = pairs[("caution", "zekerheidstelling")]
    assert caution.in_glossary and caution.dice == 1.0
    # juge de paix -> vrederechter is already in the glossary: not proposed again
    assert ("juge de paix", "vrederechter") not in pairs
    assert proposals["dice"].is_monotonic_decreasing
    # a French term is never paired with a Dutch word from another article's content
    assert proposals.loc[proposals["fr"] == "juge", "nl"].tolist() == ["vrederechter"]


def test_mine_respects_top_and_min_count():
    assert len(mine(_corpus(), min_count=3, top=2)) == 2
    # with min_count above every term's document frequency there is nothing to propose
    assert mine(_corpus(), min_count=41, top=10).empty


def test_mine_rejects_unaligned_corpus():
    corpus = Corpus(ids=(1, 2), source_texts=("a", "b"), target_texts=("a",))
    with pytest.raises(InputError, match="not aligned"):
        mine(corpus)
    with pytest.raises(InputError, match="no nl articles"):
        mine(Corpus(ids=(1,), source_texts=("a",), target_texts=None))


def _write_dataset(root: Path, corpus: Corpus | None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for lang, question in (("fr", "Qu'est-ce que le délai de prescription ?"), ("nl", "Wat is de verjaringstermijn?")):
        with open(root / f"questions_{lang}_train.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["id", "category", "subcategory", "question", "extra_description", "article_ids"])
            w.writerow([1, "Justice", "", question, "", "1"])
    if corpus is not None:
        for lang in ("fr", "nl"):
            with open(root / f"articles_{lang}.csv", "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["id", "article"])
                w.writerows(zip(corpus.ids, corpus.texts(lang)))
    return root


@pytest.fixture()
def cli() -> typer.Typer:
    root = typer.Typer(cls=OneLineErrors)
    audit_app = typer.Typer()
    register_glossary_cli(audit_app)
    root.add_typer(audit_app, name="audit")
    return root


def test_cli_mine_writes_csv_and_sidecar(tmp_path, cli):
    data = _write_dataset(tmp_path / "data", _corpus())
    out = tmp_path / "out" / "proposals.csv"
    result = CliRunner().invoke(cli, ["audit", "glossary", "mine", "--dataset", str(data), "--out", str(out),
                                      "--top", "5"])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out)
    assert list(frame.columns) == COLUMNS and len(frame) == 5
    meta = json.loads((tmp_path / "out" / "proposals.meta.json").read_text())
    assert meta["glossary_version"] == Glossary.load().version and meta["top"] == 5
    assert meta["dataset"]["corpus_articles"] == 40
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


def test_cli_mine_without_corpus_is_one_line_error(tmp_path, cli):
    data = _write_dataset(tmp_path / "data", None)
    out = tmp_path / "proposals.csv"
    result = CliRunner().invoke(cli, ["audit", "glossary", "mine", "--dataset", str(data), "--out", str(out)])
    assert result.exit_code == 2
    assert "no aligned French/Dutch article corpus" in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_cli_check_and_show(tmp_path, cli):
    runner = CliRunner()
    shipped = REPO / "audit" / "data" / "glossary.yaml"
    result = runner.invoke(cli, ["audit", "glossary", "check", str(shipped)])
    assert result.exit_code == 0 and result.output.startswith("ok:"), result.output
    assert "warning" not in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nentries:\n  - id: x\n    fr: [bail]\n    nl: [huur]\n    domain: housing\n")
    result = runner.invoke(cli, ["audit", "glossary", "check", str(bad)])
    assert result.exit_code == 2 and "row 1, id x: `source` is required" in result.output
    result = runner.invoke(cli, ["audit", "glossary", "show"])
    assert result.exit_code == 0 and "housing" in result.output and "entries" in result.output
    assert runner.invoke(cli, ["audit", "glossary", "mine", "--help"]).output.count("Example:") == 1


def test_docs_flag_table_is_generated_from_flags():
    doc = (REPO / "docs" / "glossary.md").read_text(encoding="utf-8")
    start = doc.index("-->", doc.index("<!-- flags:start")) + len("-->\n")
    assert doc[start:doc.index("<!-- flags:end")] == flags_markdown(), \
        "docs/glossary.md is stale: regenerate with `bbsard-audit audit glossary flags`"


def test_mine_on_embedded_sample_corpus():
    ds = load_dataset("sample")
    proposals = mine(ds.corpus, min_count=3, top=100)
    assert len(proposals) > 20
    assert proposals["dice"].between(0, 1).all() and (proposals["cooc"] >= 3).all()
    # aligned statute text: the best proposals are near-perfect translations
    assert proposals["dice"].head(10).min() > 0.8
