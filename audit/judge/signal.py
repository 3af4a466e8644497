"""The LLM judge as an audit signal: an MQM score per judged pair (a soft flag in the risk), each
error a finding whose reason quotes the judge's explanation and whose span, in the stored text of
the side it names, becomes a Label Studio pre-annotation.

The judge costs a request per pair, so it runs after the other signals and asks only about the
pairs their risk selects (`--judge-on`): `flagged` (risk >= the flag threshold), `uncertain` (the
low..high severity band, where one more piece of evidence decides) or `all`. AuditEngine calls
`select(prior_risk, config)` before `score(batch)` for a signal that has `select`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import httpx
import numpy as np
import pandas as pd

from bbsard_audit.audit.findings import Finding, Span
from bbsard_audit.audit.signals import Batch, Declared, Rule, SignalResult
from bbsard_audit.base.embeddings import default_cache_dir
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages.pair import LanguagePair, language_name

from . import prompt
from .cache import JudgeCache
from .client import DEADLINE, MAX_BYTES, ChatClient, public_url, request_json
from .judging import Judge, Outcome
from .options import ON
from .parse import mqm_score

if TYPE_CHECKING:  # risk imports the registry, which imports this module
    from bbsard_audit.audit.risk import RiskConfig

KEY_VARIABLES = ("BBSARD_AUDIT_JUDGE_API_KEY", "OPENAI_API_KEY")
DEADLINE_VARIABLE, MAX_BYTES_VARIABLE = "BBSARD_AUDIT_JUDGE_DEADLINE", "BBSARD_AUDIT_JUDGE_MAX_BYTES"

FLAGS = {
    "judge_errors": "An LLM judge (`audit --judge llm:MODEL`) marked translation errors in the pair, "
                    "GEMBA-MQM style: its MQM score (minor 1, major 5, critical 10 per error) is the "
                    "`judge_mqm` column; each error's span and explanation are in `spans` and `reasons`.",
}


class JudgeSignal(Declared):
    """Scores the pairs `select` chose with `judge`; the others get NaN (no evidence)."""

    name = "llm_judge"
    flags = FLAGS
    categories = {"judge_errors": "mistranslation"}
    # one major error (MQM 5) alone gives 0.85 * logistic(1.33) = 0.67, over the flag threshold; a minor
    # one (1) adds 0.015, two 0.055; a critical one 0.85; a clean answer (0) 0.004, below the old rule's
    # 0.007 (audit/perror.py also flags a major error by itself)
    rules = (Rule("judge_mqm", "judge_errors", threshold=4.0, scale=0.75, weight=0.85, direction="above", order=60,
                  reason="LLM judge MQM score {value:.0f} {op} {threshold:g}"),)
    reads = ("source", "target")

    def __init__(self, judge: Judge, url: str, on: str = "flagged", dry_run: bool = False,
                 advance: Callable[[int, int], None] | None = None) -> None:
        self.judge, self.url, self.on, self.dry_run, self.advance = judge, url, on, dry_run, advance
        self._selected: np.ndarray | None = None
        self.meta: dict = {}
        self.notes: list[str] = []
        """One line per problem (per pair where it concerns one), for the console."""
        self.requests: list[dict] = []
        """The dry run's request bodies."""

    def signature(self) -> None:
        return None  # its own cache (audit/judge/cache.py) holds answers per pair

    def select(self, prior: pd.DataFrame, config: "RiskConfig") -> None:
        risk = prior["risk"].to_numpy(float)
        if self.on == "all":
            self._selected = np.ones(len(risk), dtype=bool)
        elif self.on == "flagged":
            self._selected = risk >= config.flag_threshold
        else:
            self._selected = (risk >= config.severity["low"]) & (risk < config.severity["high"])

    def score(self, batch: Batch) -> SignalResult:
        n, pair = len(batch), batch.pair
        selected = np.ones(n, dtype=bool) if self._selected is None else self._selected
        rows = np.flatnonzero(selected)
        ids = list(batch.ids) if batch.ids is not None else list(range(n))
        texts = [batch.pairs[i] for i in rows]
        mqm, status = np.full(n, np.nan), [""] * n
        severe, minor = np.full(n, np.nan), np.full(n, np.nan)  # major + critical, minor error counts
        findings: list[list[Finding]] = [[] for _ in range(n)]
        if self.dry_run:
            self._dry_run(texts, pair)
            return SignalResult(findings, pd.DataFrame({"judge_mqm": mqm, "judge_status": status}))
        try:
            outcomes = self.judge.judge(texts, pair, self.advance)
        finally:
            self.judge.client.close()  # one run per signal
        for i, outcome in zip(rows, outcomes):
            self.notes += [f"judge: pair {ids[i]}: {note}" for note in outcome.notes]
            if outcome.status == "failed":
                status[i] = "failed"
                continue
            status[i], mqm[i] = "judged", mqm_score(outcome.errors)
            severe[i] = sum(e.severity in ("major", "critical") for e in outcome.errors)
            minor[i] = sum(e.severity == "minor" for e in outcome.errors)
            findings[i] = [self._finding(e, pair) for e in outcome.errors]
        self._record(outcomes, [ids[i] for i in rows], pair)
        return SignalResult(findings, pd.DataFrame({"judge_mqm": mqm, "judge_status": status,
                                                    "judge_major": severe, "judge_minor": minor}))

    @staticmethod
    def _finding(error, pair: LanguagePair) -> Finding:
        """Span sides are roles, as the judge's; audit.csv writes the pair's codes (findings.spans_json)."""
        code = pair.source if error.side == "source" else pair.target
        where = f" (in the {language_name(code)} source)" if error.side == "source" else ""
        span = Span(error.side, error.start, error.end, error.text, error.category)
        return Finding("judge_errors", f'LLM judge: {error.severity} {error.category} "{error.text}"{where}: '
                                       f"{error.explanation}", (span,))

    def _header(self, pair: LanguagePair) -> dict:
        return {"model": self.judge.model, "url": public_url(self.url), "prompt_version": prompt.PROMPT_VERSION,
                "on": self.on, "pair": str(pair), "concurrency": self.judge.concurrency}

    def _dry_run(self, texts: list[tuple[str, str]], pair: LanguagePair) -> None:
        todo = [t for t in texts if self.judge.cached(*t, pair) is None]
        self.requests = [self.judge.request(s, t, pair) for s, t in todo]
        tokens = [prompt.estimate_tokens(r) for r in self.requests]
        self.meta = {**self._header(pair), "dry_run": True, "selected": len(texts), "cached": len(texts) - len(todo),
                     "requests": len(todo), "prompt_tokens_estimate": int(sum(tokens)),
                     "max_answer_tokens": prompt.MAX_TOKENS * len(todo)}

    def _record(self, outcomes: list[Outcome], ids: list, pair: LanguagePair) -> None:
        counts = {s: sum(o.status == s for o in outcomes) for s in ("judged", "cached", "failed")}
        failed = [(i, o.reason) for i, o in zip(ids, outcomes) if o.status == "failed"]
        dropped = sum(o.dropped for o in outcomes)
        unavailable = self.judge.unavailable
        self.notes += [f"judge: pair {i}: {reason}" for i, reason in failed if reason != unavailable]
        if unavailable:
            self.notes.append(f"judge: {unavailable}; {sum(r == unavailable for _, r in failed)} pair(s) not judged")
        self.meta = {**self._header(pair), "response_format": self.judge.form,
                     "selected": len(outcomes), **counts, "dropped_spans": dropped,
                     "requests": self.judge.client.requests, "failed_ids": [i for i, _ in failed]}
        if outcomes and not counts["judged"] + counts["cached"]:
            reason = unavailable or failed[0][1].removeprefix("judge failed: ")
            raise InputError(f"the LLM judge judged no pair: {reason}")


def judge_signal(spec: str, url: str | None, *, on: str = "flagged", concurrency: int = 4, dry_run: bool = False,
                 cache_dir: Path | None = None, advance: Callable[[int, int], None] | None = None) -> JudgeSignal:
    """The signal for `--judge llm:MODEL --judge-url URL ...`."""
    return JudgeSignal(make_judge(spec, url, on=on, concurrency=concurrency, cache_dir=cache_dir), url, on, dry_run,
                       advance)


def _limit(variable: str, default: float, kind: type) -> float:
    """A positive finite number from the environment (seconds or bytes), else the default."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value <= 0:
        raise InputError(f"{variable} must be a {'number of seconds' if kind is float else 'whole number of bytes'} "
                         f"> 0, not {raw[:40]!r}")
    return value


def make_judge(spec: str, url: str | None, *, on: str = "flagged", concurrency: int = 4,
               cache_dir: Path | None = None, domain: prompt.Domain = prompt.Domain()) -> Judge:
    """The options checked and the Judge built; the key from BBSARD_AUDIT_JUDGE_API_KEY, else
    OPENAI_API_KEY (none: no Authorization header, as local servers expect)."""
    model = spec[4:] if spec.startswith("llm:") else ""
    if not model:
        raise InputError(f"--judge takes llm:MODEL (e.g. llm:qwen2.5:7b-instruct), not {spec!r}")
    if not url:
        raise InputError("--judge needs --judge-url URL (an OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1)")
    if not url.startswith(("http://", "https://")):  # not echoed: a URL can hold a credential
        raise InputError("--judge-url must be an http(s) URL such as http://127.0.0.1:11434/v1")
    try:
        public_url(url)
    except httpx.InvalidURL:
        raise InputError("--judge-url is not a valid URL") from None
    if on not in ON:
        raise InputError(f"--judge-on must be one of {'|'.join(ON)}, not {on!r}")
    if concurrency < 1:
        raise InputError("--judge-concurrency must be >= 1")
    variable = next((v for v in KEY_VARIABLES if os.environ.get(v, "").strip()), None)
    key = os.environ[variable].strip() if variable else None
    if key and not all(" " < c <= "~" for c in key):  # never echoed: an httpx header error would quote it
        raise InputError(f"{variable} holds characters an HTTP header cannot carry (spaces, control or non-ASCII)")
    client = ChatClient(url, model, key, concurrency=concurrency, deadline=_limit(DEADLINE_VARIABLE, DEADLINE, float),
                        max_bytes=int(_limit(MAX_BYTES_VARIABLE, MAX_BYTES, int)))
    cache = JudgeCache(Path(cache_dir or default_cache_dir()) / "judge.sqlite")
    return Judge(client, cache, concurrency, domain)


def dry_run_lines(signal: JudgeSignal) -> list[str]:
    """What `--judge-dry-run` prints on stdout: one request body per line (no key is in a body)."""
    return [request_json(body) for body in signal.requests]


def report(signal: JudgeSignal, echo: Callable[..., None]) -> bool:
    """Print the judge's notes and summary (stderr) and, for a dry run, its requests (stdout);
    True when it was a dry run (the caller then writes nothing)."""
    m = signal.meta
    where = f"{m['model']} at {m['url']}"
    if m.get("dry_run"):
        for line in dry_run_lines(signal):
            echo(line)
        echo(f"judge dry run ({where}): {m['requests']} request(s) for {m['selected']} selected pair(s) "
             f"({m['cached']} cached); about {m['prompt_tokens_estimate']} prompt tokens, at most "
             f"{m['max_answer_tokens']} answer tokens; nothing sent, nothing written", err=True)
        return True
    for note in signal.notes:
        echo(note, err=True)
    echo(f"judge ({where}): {m['judged']} judged, {m['cached']} cached, {m['failed']} failed of {m['selected']} "
         f"selected ({m['on']}); {m['dropped_spans']} span(s) dropped; {m['requests']} request(s)", err=True)
    return False
