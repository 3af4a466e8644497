"""The LLM judge in the corpus audit (`audit corpus --judge llm:MODEL --judge-url URL`): a pass in the
driver after score_batch, over the scored rows `--judge-on` selects, with audit/judge's client,
prompt (domain: statutory articles), parser, cache and key handling.

Each judged document gets `judge_mqm` (GEMBA-MQM score) and `judge_status`; each error is a
`doc_judge_errors` finding quoting the judge's explanation, its span an offset into the stored
source_text / target_text (side = the language code). Risk is recomputed with the same noisy-OR
(audit/risk.py `combine`): the judge's soft rule on judge_mqm, as for questions, combined with the
checks' risk. Texts longer than `max_chars` (per side) are cut to their first `max_chars`
characters before they are sent (offsets stay valid: a prefix); the sidecar counts them.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa

from bbsard_audit.audit.findings import Finding, spans_json
from bbsard_audit.audit.judge import prompt
from bbsard_audit.audit.judge.client import public_url
from bbsard_audit.audit.judge.judging import Judge
from bbsard_audit.audit.judge.parse import mqm_score
from bbsard_audit.audit.judge.signal import JudgeSignal
from bbsard_audit.audit.risk import SEVERITIES, RiskConfig, combine, default_data
from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import LanguagePair

FLAG = "doc_judge_errors"
MAX_JUDGE_CHARS = 8000
"""Characters of each side sent per request (about 2,000 tokens): longer documents are truncated."""
_RULE = JudgeSignal.rules[0]
JUDGE_RULE = {"judge_mqm": {"flag": FLAG, "threshold": _RULE.threshold, "scale": _RULE.scale, "weight": _RULE.weight,
                            "direction": _RULE.direction, "reason": _RULE.reason}}
"""The question judge's rule (audit/judge/signal.py) on the documents' flag."""


class CorpusJudge:
    """Judges the selected rows of each scored batch; `meta()` for the sidecar, `notes` for the console."""

    def __init__(self, judge: Judge, url: str, on: str = "flagged", dry_run: bool = False,
                 max_chars: int = MAX_JUDGE_CHARS) -> None:
        if max_chars < 1:
            raise InputError("--judge-max-chars must be at least 1")
        self.judge, self.url, self.on, self.dry_run, self.max_chars = judge, url, on, dry_run, max_chars
        self.counts: Counter = Counter()
        self.failed_ids: list[str] = []
        self.notes: list[str] = []
        self.requests: list[dict] = []
        self.config = RiskConfig({**default_data(), "weights": {}, "signals": JUDGE_RULE})

    def select(self, scored: pa.Table, config: RiskConfig) -> np.ndarray:
        """flagged: the checks flagged it; uncertain: risk in the low..high severity band; all."""
        risk = scored.column("risk").to_numpy()
        if self.on == "all":
            return np.ones(len(risk), dtype=bool)
        if self.on == "flagged":
            return scored.column("flagged").to_numpy(zero_copy_only=False).astype(bool)
        return (risk >= config.severity["low"]) & (risk < config.severity["high"])

    def apply(self, scored: pa.Table, texts: pa.Table, pair: LanguagePair, config: RiskConfig) -> pa.Table:
        """`scored` with judge_mqm, judge_status and the judge's findings folded into risk and its explanation."""
        rows = np.flatnonzero(self.select(scored, config))
        ids = scored.column("id").to_pylist()
        source, target = texts.column("source_text").to_pylist(), texts.column("target_text").to_pylist()
        if texts.column("id").to_pylist() != ids:
            raise ValueError("the judge's texts are not row-aligned with the scored batch")
        pairs = [((source[i] or "")[:self.max_chars], (target[i] or "")[:self.max_chars]) for i in rows]
        self.counts["selected"] += len(rows)
        self.counts["truncated"] += sum(len(source[i] or "") > self.max_chars or len(target[i] or "") > self.max_chars
                                        for i in rows)
        n = scored.num_rows
        mqm, status = np.full(n, np.nan), [""] * n
        findings: list[list[Finding]] = [[] for _ in range(n)]
        if self.dry_run:
            todo = [p for p in pairs if self.judge.cached(*p, pair) is None]
            self.counts["cached"] += len(pairs) - len(todo)
            self.requests += [self.judge.request(s, t, pair) for s, t in todo]
            return _with_columns(scored, mqm, status)
        for i, outcome in zip(rows, self.judge.judge(pairs, pair)):
            self.notes += [f"judge: document {ids[i]}: {note}" for note in outcome.notes]
            self.counts[outcome.status] += 1
            self.counts["dropped_spans"] += outcome.dropped
            if outcome.status == "failed":
                status[i] = "failed"
                self.failed_ids.append(ids[i])
                if outcome.reason != self.judge.unavailable:
                    self.notes.append(f"judge: document {ids[i]}: {outcome.reason}")
                continue
            status[i], mqm[i] = "judged", mqm_score(outcome.errors)
            findings[i] = [_finding(e, pair) for e in outcome.errors]
        return self._fold(_with_columns(scored, mqm, status), findings, mqm, config)

    def _fold(self, scored: pa.Table, findings: list[list[Finding]], mqm: np.ndarray, config: RiskConfig) -> pa.Table:
        part = combine(findings, pd.DataFrame({"judge_mqm": mqm}), self.config)
        risk = 1.0 - (1.0 - scored.column("risk").to_numpy()) * (1.0 - part["risk"].to_numpy(float))  # noisy-OR
        severity = np.select([risk >= config.severity[s] for s in SEVERITIES], list(SEVERITIES), default="none")
        join = lambda old, new, sep: [sep.join(x for x in (a, b) if x) for a, b in zip(old, new)]  # noqa: E731
        spans = [json.dumps(json.loads(old) + json.loads(spans_json(new)), ensure_ascii=False, separators=(",", ":"))
                 if new else old for old, new in zip(scored.column("spans").to_pylist(), findings)]
        columns = {"risk": pa.array(risk), "severity": pa.array(severity.tolist(), pa.string()),
                   "flagged": pa.array(risk >= config.flag_threshold),
                   "flags": pa.array(join(scored.column("flags").to_pylist(), part["flags"].tolist(), ";")),
                   "reasons": pa.array(join(scored.column("reasons").to_pylist(), part["reasons"].tolist(), " | ")),
                   "spans": pa.array(spans, pa.string())}
        for name, values in columns.items():
            scored = scored.set_column(scored.column_names.index(name), name, values)
        return scored

    def finish(self) -> None:
        """Close the client; the summary line of an unavailable server; InputError when nothing was judged."""
        self.judge.client.close()
        unavailable = self.judge.unavailable
        if unavailable:
            self.notes.append(f"judge: {unavailable}; {len(self.failed_ids)} document(s) not judged")
        if not self.dry_run and self.counts["selected"] and not self.counts["judged"] + self.counts["cached"]:
            first = unavailable or next((n for n in self.notes if "judge failed" in n), "every request failed")
            raise InputError(f"the LLM judge judged no document: {first.split('judge failed: ')[-1]}")

    def meta(self) -> dict:
        out = {"model": self.judge.model, "url": public_url(self.url), "prompt_version": self.judge.domain.version(),
               "on": self.on, "concurrency": self.judge.concurrency, "max_chars": self.max_chars,
               **{k: self.counts[k] for k in ("selected", "judged", "cached", "failed", "dropped_spans", "truncated")}}
        if self.dry_run:
            tokens = sum(prompt.estimate_tokens(r) for r in self.requests)
            return {**out, "dry_run": True, "requests": len(self.requests), "prompt_tokens_estimate": int(tokens),
                    "max_answer_tokens": prompt.MAX_TOKENS * len(self.requests)}
        return {**out, "response_format": self.judge.form, "requests": self.judge.client.requests,
                "failed_ids": self.failed_ids}


def _finding(error, pair: LanguagePair) -> Finding:
    """The question judge's finding, on the documents' flag, its span side (a role) the language code."""
    found = JudgeSignal._finding(error, pair)
    codes = Layout(pair).side_codes
    return Finding(FLAG, found.reason, tuple(replace(s, side=codes[s.side]) for s in found.spans))


def _with_columns(scored: pa.Table, mqm: np.ndarray, status: list[str]) -> pa.Table:
    return scored.append_column("judge_mqm", pa.array(mqm)).append_column("judge_status", pa.array(status, pa.string()))
