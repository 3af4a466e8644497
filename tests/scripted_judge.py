"""A scripted stand-in for the LLM judge's `Judge` (no server, no request): it answers each pair with
the errors a script gives for its target text. JudgeSignal, its findings, spans, columns and rule run
for real on those answers; used where what matters is how the audit weighs a judge's errors
(tests/audit/test_p_error.py, benchmarks/bench_calibration.py), not the client (tests/audit/test_judge.py)."""

from __future__ import annotations

from bbsard_audit.audit.judge.judging import Outcome
from bbsard_audit.audit.judge.parse import JudgedError
from bbsard_audit.audit.judge.signal import JudgeSignal


class _NoClient:
    requests = 0

    def close(self) -> None:
        pass


class ScriptedJudge:
    """`script`: target text -> [(severity, category, span text, explanation)]; the span is found in
    the target (the whole target when it is not there)."""

    model, concurrency, form, unavailable = "scripted-stand-in", 1, "none", None

    def __init__(self, script: dict[str, list[tuple[str, str, str, str]]]) -> None:
        self.script, self.client = script, _NoClient()

    def cached(self, source: str, target: str, pair) -> None:
        return None

    def judge(self, texts, pair, advance=None) -> list[Outcome]:
        out = []
        for _, target in texts:
            errors = []
            for severity, category, text, why in self.script.get(target, []):
                start = max(target.find(text), 0) if text else 0
                span = text if text and text in target else target
                errors.append(JudgedError("target", start, start + len(span), span, category, severity, why))
            out.append(Outcome("judged", errors))
        return out


def scripted_signal(script: dict, on: str = "all") -> JudgeSignal:
    return JudgeSignal(ScriptedJudge(script), "http://127.0.0.1:1/v1", on=on)
