"""`--qe comet:MODEL`: a COMET-family quality-estimation model as an audit signal.

The model runs in its own venv (audit/qe/env.py) as a worker process (audit/qe/worker.py) that
loads the checkpoint once and scores every pair not yet in the cache. The segment score is the
`comet_score` column, a soft flag below a threshold (its rule); an xCOMET-style model's error spans
become findings whose spans sit in the translation (side = the target language code, offsets into
the stored text, widened to whole words) and so reach Label Studio and `audit calibrate` like any
signal's. Results are cached per pair, keyed by the model (checkpoint hash, or hub id + revision)
and the pair's texts: a rerun, or an audit that adds pairs, scores only what is new.

The worker is checked like any outside process: a worker silent for `IDLE_TIMEOUT` seconds is
stopped, every line it writes must be a {score, spans} record (bytes that are not UTF-8 are read as
U+FFFD, not as a crash), and a cached record that is not one is scored again. Texts go to it with
lone surrogates replaced by U+FFFD (one code point for one: offsets stay valid).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import queue
import re
import sqlite3
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from bbsard_audit.base import sqlite_cache
from bbsard_audit.audit.findings import Finding, Span, category_of
from bbsard_audit.audit.signals import Batch, Declared, Rule, SignalResult
from bbsard_audit.base.errors import InputError

from .env import COMET_VERSION, venv_dir, venv_python

WORKER = Path(__file__).with_name("worker.py")
SEVERE = ("major", "critical")
QUOTED = 3  # span texts quoted in a finding's reason
_WORD = re.compile(r"\w", re.UNICODE)
_SURROGATE = re.compile("[\ud800-\udfff]")
IDLE_VARIABLE = "BBSARD_AUDIT_QE_IDLE_TIMEOUT"
IDLE_TIMEOUT = 1800.0
"""Seconds the worker may go without writing a line (loading the largest xCOMET on a CPU, or scoring
one chunk of 64 pairs with it, takes minutes, not half an hour)."""


def idle_timeout() -> float:
    raw = os.environ.get(IDLE_VARIABLE, "").strip()
    try:
        value = float(raw) if raw else IDLE_TIMEOUT
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{IDLE_VARIABLE} must be a number of seconds > 0, not {raw[:40]!r}")
    return value


def is_result(record: object) -> bool:
    """A {score, spans} record as the worker writes it: a finite score; spans null or a list of
    {start, end, severity} with integer offsets."""
    if not isinstance(record, dict) or set(record) != {"score", "spans"}:
        return False
    score, spans = record["score"], record["spans"]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return False
    return spans is None or isinstance(spans, list) and all(
        isinstance(x, dict) and isinstance(x.get("severity"), str)
        and all(isinstance(x.get(k), int) and not isinstance(x.get(k), bool) for k in ("start", "end"))
        for x in spans)


def parse_spec(spec: str) -> str:
    """`comet:MODEL` -> MODEL."""
    kind, _, model = spec.partition(":")
    if kind != "comet" or not model:
        raise InputError(f"--qe {spec!r}: give comet:MODEL (a checkpoint folder or file, or a hub id "
                         "such as Unbabel/wmt22-cometkiwi-da)")
    return model


def _hub_revision(model: str) -> str:
    """The commit the local HF cache holds for a hub id ('unresolved' before the first download)."""
    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME") or "~/.cache/huggingface") / "hub")
    ref = hub.expanduser() / f"models--{model.replace('/', '--')}" / "refs" / "main"
    return ref.read_text().strip() if ref.is_file() else "unresolved"


class QECache:
    """Per-pair results {score, spans} by key, plus checkpoint hashes memoised by (path, size, mtime)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, payload TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS checkpoints (stat TEXT PRIMARY KEY, sha256 TEXT NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite_cache.connect(self.path)
        return db

    def get(self, keys: Sequence[str]) -> dict[str, dict]:
        with self._connect() as db:
            rows = [r for start in range(0, len(keys), 500) for r in db.execute(
                f"SELECT key, CAST(payload AS BLOB) FROM results WHERE key IN "
                f"({','.join('?' * len(keys[start:start + 500]))})", list(keys[start:start + 500]))]
        found = {}
        for k, p in rows:  # an entry that is not a result (a damaged file) is scored again
            try:
                record = json.loads(bytes(p).decode("utf-8"))
            except ValueError:
                continue
            if is_result(record):
                found[k] = record
        return found

    def put(self, results: dict[str, dict]) -> None:
        with self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?)",
                           [(k, json.dumps(v)) for k, v in results.items()])  # ASCII: a surrogate cannot break it

    def file_hash(self, path: Path) -> str:
        stat = path.stat()
        key = f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}"
        with self._connect() as db:
            hit = db.execute("SELECT sha256 FROM checkpoints WHERE stat = ?", (key,)).fetchone()
        if hit:
            return hit[0]
        h = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                h.update(block)
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO checkpoints VALUES (?, ?)", (key, h.hexdigest()))
        return h.hexdigest()


class CometScorer:
    """One model, its cache and its worker: `score(pairs)` -> one {score, spans} per pair."""

    def __init__(self, model: str, cache: QECache, batch_size: int = 8,
                 advance: Callable[[int, int], None] | None = None) -> None:
        self.model, self.cache, self.batch_size, self.advance = model, cache, batch_size, advance
        self.meta: dict = {}

    def model_id(self) -> str:
        """What names the model in keys and sidecars: a local checkpoint by its hashes (never its
        path), a hub id by the revision the HF cache holds."""
        path = Path(self.model).expanduser()
        if path.is_dir():
            ckpt, hparams = path / "checkpoints" / "model.ckpt", path / "hparams.yaml"
        elif path.is_file():
            ckpt, hparams = path, path.parents[1] / "hparams.yaml"
        else:
            return f"hub:{self.model}@{_hub_revision(self.model)}"
        if not ckpt.is_file() or not hparams.is_file():
            raise InputError("not a COMET checkpoint: needs checkpoints/model.ckpt and hparams.yaml", file=self.model)
        return f"local:sha256:{self.cache.file_hash(ckpt)[:16]}+{self.cache.file_hash(hparams)[:16]}"

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[dict]:
        model_id = self.model_id()
        keys = [hashlib.sha256(f"{model_id}\0{COMET_VERSION}\0{s}\0{t}".encode("utf-8", "surrogatepass")).hexdigest()
                for s, t in pairs]
        found = self.cache.get(list(dict.fromkeys(keys)))
        todo = {k: p for k, p in zip(keys, pairs) if k not in found}
        started = time.perf_counter()
        if todo:
            found.update(zip(todo, self._run(list(todo.values()))))
            self.cache.put({k: found[k] for k in todo})
        seconds = time.perf_counter() - started
        self.meta.update(model=model_id, unbabel_comet=COMET_VERSION, n_scored=len(todo),
                         n_cached=len(set(keys)) - len(todo), seconds=round(seconds, 2))
        return [found[k] for k in keys]

    def _run(self, pairs: list[tuple[str, str]]) -> list[dict]:
        python = venv_python() or venv_dir() / "bin" / "python"  # checked by qe_signal
        with tempfile.TemporaryDirectory(prefix="bbsard-qe-") as tmp:
            requests, log = Path(tmp) / "requests.jsonl", Path(tmp) / "worker.log"
            requests.write_text("".join(json.dumps({"src": _SURROGATE.sub("\ufffd", s), "mt": _SURROGATE.sub("\ufffd", t)},
                                                   ensure_ascii=False) + "\n" for s, t in pairs), encoding="utf-8")
            # -I: neither PYTHONPATH nor the worker's own folder (this signal.py would shadow the stdlib's)
            cmd = [str(python), "-I", str(WORKER), self.model, "--input", str(requests), "--batch-size", str(self.batch_size)]
            with open(log, "wb") as err, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                                          encoding="utf-8", errors="replace") as proc:
                try:
                    lines = self._read(proc, len(pairs))
                finally:
                    if proc.poll() is None:
                        proc.kill()
            if proc.returncode != 0 or len(lines) != len(pairs):
                why = (_last_error(log, proc.returncode) if proc.returncode != 0
                       else f"it answered {len(lines)} of {len(pairs)} pairs")
                raise InputError(f"--qe comet:{self.model}: the COMET worker failed: {why}")
        return lines

    def _read(self, proc: subprocess.Popen, n: int) -> list[dict]:
        """The worker's result lines, each within `idle_timeout()` of the last (else it is stopped)."""
        idle, lines, results = idle_timeout(), queue.Queue(), []
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        fail = f"--qe comet:{self.model}: the COMET worker"
        while True:
            try:
                line = lines.get(timeout=idle)
            except queue.Empty:
                raise InputError(f"{fail} wrote nothing for {idle:g} s ({IDLE_VARIABLE}); stopped it") from None
            if line is None:
                break
            try:
                record = json.loads(line)
            except ValueError:
                raise InputError(f"{fail} wrote {line[:80]!r}, not JSON") from None
            if isinstance(record, dict) and "model_class" in record:
                self.meta.update(model_class=str(record["model_class"]), word_level=bool(record.get("word_level")),
                                 device="gpu" if record.get("gpus") else "cpu")
                continue
            if not is_result(record):
                raise InputError(f"{fail} wrote {line.strip()[:80]!r}, not a {{score, spans}} result") from None
            results.append(record)
            if self.advance:
                self.advance(1, n)
        try:
            proc.wait(timeout=idle)
        except subprocess.TimeoutExpired:
            raise InputError(f"{fail} closed its output but did not exit within {idle:g} s; stopped it") from None
        return results


def _pump(stream, lines: queue.Queue) -> None:
    """Every line of `stream` into `lines`, then None (also when the stream is closed under it)."""
    try:
        for line in stream:
            lines.put(line)
    except (OSError, ValueError):
        pass
    lines.put(None)


def _last_error(log: Path, code: int) -> str:
    """The worker's own `error:` line, else its exit status and last stderr line (a crash)."""
    lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    said = [ln.removeprefix("error: ") for ln in lines if ln.startswith("error: ")]
    if said:
        return said[-1]
    tail = lines[-1] if lines else "no message"
    return f"exit {code}: {tail}" if code > 0 else f"killed by signal {-code} ({tail})"


def word_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) clipped to the text, widened to whole words, without surrounding spaces."""
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    while 0 < start < len(text) and _WORD.match(text[start - 1]) and _WORD.match(text[start]):
        start -= 1
    while 0 < end < len(text) and _WORD.match(text[end - 1]) and _WORD.match(text[end]):
        end += 1
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class CometSignal(Declared):
    """The model's segment score (a rule) and its error spans (two flags by severity)."""

    name = "comet"
    reads = ("source", "target")
    flags = {
        "qe_low": "the COMET model's segment score for the pair is below the threshold (`--qe comet:MODEL`)",
        "qe_error_major": "the COMET model (xCOMET-style) marks a major or critical error span in the translation",
        "qe_error_minor": "the COMET model (xCOMET-style) marks a minor error span in the translation",
    }
    categories = {"qe_low": "mistranslation", "qe_error_major": "mistranslation", "qe_error_minor": "other"}
    weights = {"qe_error_major": 0.25, "qe_error_minor": 0.05}
    rules = (Rule("comet_score", "qe_low", threshold=0.6, scale=0.05, weight=0.5, order=80,
                  reason="COMET score {value:.2f} {op} {threshold:g}"),)

    def __init__(self, scorer: CometScorer) -> None:
        self.scorer = scorer

    @property
    def meta(self) -> dict:
        return self.scorer.meta

    def signature(self) -> None:
        return None  # cached per pair by the scorer, not per batch

    def score(self, batch: Batch) -> SignalResult:
        pairs = batch.pairs
        results = self.scorer.score(pairs)
        findings = [self._findings("target", mt, r["spans"] or []) for (_, mt), r in zip(pairs, results)]
        columns = pd.DataFrame({  # no span count from a model without word-level tags (spans null)
            "comet_score": np.array([r["score"] for r in results], dtype=float),
            "comet_error_spans": np.array([np.nan if r["spans"] is None else len(r["spans"]) for r in results]),
        })
        return SignalResult(findings, columns, dict(self.scorer.meta))

    def _findings(self, side: str, mt: str, spans: list[dict]) -> list[Finding]:
        out = []
        for flag, severities in (("qe_error_major", SEVERE), ("qe_error_minor", ("minor",))):
            chosen = [s for s in spans if s["severity"] in severities]
            bounds = dict.fromkeys(b for b in (word_bounds(mt, s["start"], s["end"]) for s in chosen) if b[0] < b[1])
            if not bounds:
                continue
            quoted = ", ".join(f"'{mt[a:b]}'" for a, b in list(bounds)[:QUOTED]) + (" ..." if len(bounds) > QUOTED else "")
            severity = "/".join(sorted({s["severity"] for s in chosen}))
            out.append(Finding(flag, f"COMET {severity} error span(s): {quoted}",
                               tuple(Span.of(side, mt, a, b, category_of(flag)) for a, b in bounds)))
        return out


def qe_signal(spec: str, cache_dir: Path, advance: Callable[[int, int], None] | None = None) -> CometSignal:
    """The signal for `--qe SPEC`, its per-pair cache in `cache_dir/qe.sqlite`; a bad spec, a missing
    venv or a local path that is no checkpoint fail here, before the audit's slow steps."""
    idle_timeout()  # a bad BBSARD_AUDIT_QE_IDLE_TIMEOUT is one line now, not after the slow steps
    scorer = CometScorer(parse_spec(spec), QECache(Path(cache_dir) / "qe.sqlite"), advance=advance)
    if venv_python() is None:
        raise InputError(f"--qe {spec}: no COMET venv at {venv_dir()}; build it once with "
                         "`python -m bbsard_audit.audit.qe.env` (about 1 minute, 1.4 GB)")
    scorer.model_id()
    return CometSignal(scorer)
