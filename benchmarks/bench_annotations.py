"""Push / annotate / pull timings for all 1,108 real bBSARD pairs against a real Label Studio.

    PYTHONPATH=. python benchmarks/bench_annotations.py [--shared ../shared/data/bbsard] [--out DIR]

Starts a throwaway server from the cached template (first-ever run builds the venv and template),
pushes one task per pair (with made-up audit risks: timing does not depend on them), re-pushes
(nothing to import), has two simulated reviewers annotate N tasks each, pulls, and writes the
figures to OUT/bench_annotations.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from bbsard_audit.annotations import simulate  # noqa: E402
from bbsard_audit.annotations.adjudication import AdjudicationRule  # noqa: E402
from bbsard_audit.annotations.connection import Connection  # noqa: E402
from bbsard_audit.annotations.project import ReviewProject  # noqa: E402
from bbsard_audit.annotations.pull import pull  # noqa: E402
from bbsard_audit.annotations.server import LabelStudioServer, ensure_template, ensure_venv, version_root  # noqa: E402
from bbsard_audit.annotations.tasks import AUDIT_COLUMNS, build_tasks, read_audit  # noqa: E402
from bbsard_audit.base.dataset import load_dataset  # noqa: E402
from bbsard_audit.base.io import write_json  # noqa: E402
from bbsard_audit.base.contracts.audit import Layout
from conftest import write_review_files  # noqa: E402


def timed(figures: dict, key: str, fn):
    started = time.monotonic()
    result = fn()
    figures[key] = round(time.monotonic() - started, 2)
    print(f"{key}: {figures[key]} s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data" / "bbsard")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "bench")
    parser.add_argument("--annotate", type=int, default=200, help="tasks each reviewer annotates")
    parser.add_argument("--fresh-template", action="store_true",
                        help="also time a first start (init + migrations) from an empty data dir")
    args = parser.parse_args()
    figures: dict = {}
    timed(figures, "ensure_venv_s", ensure_venv)
    template = timed(figures, "ensure_template_s", ensure_template)
    work = Path(tempfile.mkdtemp(prefix="bench-ls-"))
    try:
        if args.fresh_template:
            first = LabelStudioServer(work / "first")
            with first:
                figures["first_start_total_s"] = first.timings.get("init_s", 0) + first.timings["start_s"]
                figures["first_start_timings"] = dict(first.timings)
        server = LabelStudioServer.from_template(template, work / "data")
        timed(figures, "restart_from_template_s", server.start)
        try:
            ds = load_dataset(str(args.shared), strict=False, with_corpus=False)
            bt = {int(r["id"]): r["backtranslation"] for r in map(
                json.loads, (args.shared / "backtranslations_nl_fr.jsonl").read_text().splitlines())}
            audit, _ = write_review_files(work / "run", ds.pairs, bt, seed=0)
            tasks = build_tasks(read_audit(audit, AUDIT_COLUMNS), model_version="audit-bench", layout=Layout.of(audit), dataset=ds)
            figures["n_tasks"] = len(tasks)
            conn = Connection(server.url, server.token)
            project = ReviewProject.open(conn, "bench-1108", create=True, layout=Layout())
            pushed = timed(figures, "push_s", lambda: project.push(tasks))
            assert pushed.created == len(tasks), pushed
            again = timed(figures, "repush_noop_s", lambda: project.push(tasks))
            assert again.created == 0 and again.already_there == len(tasks)
            timed(figures, "export_1108_tasks_s", project.export)
            ids = sorted(t["data"]["question_id"] for t in tasks)[:args.annotate]
            chosen = set(ids)
            for who in ("bench.a@example.org", "bench.b@example.org"):
                n = timed(figures, f"annotate_{who.split('@')[0]}_s",
                          lambda: simulate.annotate(project, who, lambda q: "correct" if q in chosen else None))
                figures[f"annotate_{who.split('@')[0]}_ms_per_annotation"] = round(1000 * figures[f"annotate_{who.split('@')[0]}_s"] / n, 1)
            out = work / "run" / "verdicts.csv"
            raw, _ = timed(figures, "pull_s", lambda: pull(project.export(), out, users=project.users(),
                                                             rule=AdjudicationRule(), source={}))
            figures["pulled_annotations"] = len(raw)
        finally:
            server.stop()
        figures["label_studio"] = version_root().name
        write_json(args.out / "bench_annotations.json", figures)
        print(json.dumps(figures, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
