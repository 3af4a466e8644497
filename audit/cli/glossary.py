"""`bbsard-audit audit glossary ...`: mine proposals from a corpus, show and check a glossary file.

auditcore's `audit/cli/__init__.py` calls `register_glossary_cli(audit_app)`; the commands are thin wrappers
over `bbsard_audit.audit.glossary` and `bbsard_audit.audit.glossary_mining`, which the tests call directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bbsard_audit.base.cli_options import dataset_option
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import write_csv, write_sidecar

from .. import glossary as glossary_module
from .. import checks
from ..glossary import Glossary

GlossaryOption = Annotated[Optional[Path], typer.Option(
    "--glossary", "-g", metavar="FILE", help="A glossary YAML file (default: the shipped audit/data/glossary.yaml).")]


def flags_markdown() -> str:
    """The flag table of docs/glossary.md, generated from the modules' FLAGS so it cannot drift."""
    lines = ["| flag | signal | meaning |", "|---|---|---|"]
    for signal, flags in (("glossary", glossary_module.FLAGS), ("qa", checks.FLAGS)):
        lines += [f"| `{name}` | {signal} | {doc} |" for name, doc in flags.items()]
    return "\n".join(lines) + "\n"


def glossary_warnings(glossary: Glossary) -> list[str]:
    """Entries that are valid alone but clash with each other (the same French form twice, a
    Dutch word accepted by one entry and flagged as Netherlands usage by another)."""
    warnings = []
    seen: dict[str, str] = {}
    for e in glossary.entries:
        for form in e.fr:
            key = form.lower()
            if key in seen and seen[key] != e.id:
                warnings.append(f"French form '{form}' is in entries {seen[key]} and {e.id}")
            seen.setdefault(key, e.id)
    accepted = {t.lstrip("=").lower(): e.id for e in glossary.entries for t in e.nl_accepted}
    for e in glossary.entries:
        for r in e.nl_rejected:
            if r.kind == "netherlands" and r.term.lower() in accepted:
                warnings.append(f"'{r.term}' is Netherlands usage in {e.id} but accepted in {accepted[r.term.lower()]}")
    return warnings


def _coverage(glossary: Glossary) -> str:
    return ", ".join(f"{lang} {n}" for lang, n in glossary.coverage().items())


def mine(
    dataset: Annotated[str, dataset_option("A dataset with an aligned FR/NL article corpus.")] = "sample",
    out: Annotated[Path, typer.Option("--out", "-o", metavar="FILE.csv", help="Where to write the proposals.")] = Path("glossary_proposals.csv"),
    top: Annotated[int, typer.Option(min=1, help="Keep the N best proposals.")] = 200,
    min_count: Annotated[int, typer.Option(min=1, help="Minimum articles a term (and a pair) occurs in.")] = 3,
    glossary: GlossaryOption = None,
) -> None:
    """Propose FR -> NL term pairs from aligned articles (Dice over article co-occurrence).

    Example: `bbsard-audit audit glossary mine --dataset sample --out reports/glossary_proposals.csv --top 100`
    """
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from bbsard_audit.base.cli_options import guard_out
    from bbsard_audit.base.dataset import load_dataset

    from ..glossary_mining import mine as mine_corpus

    guard_out(out, command="audit glossary mine", inputs=[glossary], folder=False)
    ds = load_dataset(dataset, with_corpus=True)
    corpus = ds.corpus
    if corpus is None or corpus.source_texts is None or corpus.target_texts is None:
        raise InputError("this dataset has no aligned French/Dutch article corpus to mine "
                         "(use a source with articles_fr.csv and articles_nl.csv, e.g. `sample`)", file=dataset)
    g = Glossary.load(glossary)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), transient=True) as progress:
        progress.add_task(f"mining {len(corpus)} article pairs", total=None)
        proposals = mine_corpus(corpus, min_count=min_count, top=top, glossary=g)
    write_csv(out, proposals)
    write_sidecar(out, dataset=ds.provenance(), glossary_version=g.version,
                  glossary_file=str(g.path), method="Dice over aligned-article document frequency, "
                  "lemmatised (simplemma) n-grams 1-3", top=top, min_count=min_count, rows=len(proposals))
    typer.echo(f"{len(proposals)} proposals ({int(proposals['in_glossary'].sum())} for French terms already "
               f"in the glossary) -> {out}")


def show(glossary: GlossaryOption = None) -> None:
    """Print the glossary version and its entry counts per domain.

    Example: `bbsard-audit audit glossary show`
    """
    g = Glossary.load(glossary)
    typer.echo(f"glossary {g.path} version {g.version}: {len(g.entries)} entries")
    for domain, n in g.domains().items():
        typer.echo(f"  {domain:15s} {n}")
    n_rej = sum(len(e.nl_rejected) for e in g.entries)
    n_nl = sum(1 for e in g.entries for r in e.nl_rejected if r.kind == "netherlands")
    typer.echo(f"  rejected renderings: {n_rej} ({n_nl} Netherlands usage)")
    typer.echo(f"  entries per language: {_coverage(g)}")
    quiet = {lang: sum(len(e.accept_only.get(lang, ())) for e in g.entries) for lang in g.coverage()}
    typer.echo("  accept-only renderings (never triggers): " + ", ".join(f"{k} {v}" for k, v in quiet.items()))


def check(glossary: Annotated[Path, typer.Argument(metavar="FILE", help="The glossary YAML to validate.")]) -> None:
    """Validate a glossary file: exit 2 with the bad entry named, else print counts and clashes.

    Example: `bbsard-audit audit glossary check my_glossary.yaml`
    """
    g = Glossary.load(glossary)
    for warning in glossary_warnings(g):
        typer.echo(f"warning: {glossary}: {warning}")
    typer.echo(f"ok: {glossary}: version {g.version}, {len(g.entries)} entries, "
               + ", ".join(f"{d} {n}" for d, n in g.domains().items()) + f"; languages {_coverage(g)}")


def flags() -> None:
    """Print the documented flag vocabulary of the glossary and QA signals (markdown).

    Example: `bbsard-audit audit glossary flags`
    """
    typer.echo(flags_markdown(), nl=False)


def register_glossary_cli(audit_app: typer.Typer) -> None:
    """Add the `glossary` sub-command group (mine, show, check, flags) to the `audit` typer."""
    app = typer.Typer(no_args_is_help=True, help="Curate the Belgian legal glossary: mine proposals, show, check.\n\n"
                      "Example: `bbsard-audit audit glossary check audit/data/glossary.yaml`")
    for command in (mine, show, check, flags):
        app.command()(command)
    audit_app.add_typer(app, name="glossary")
