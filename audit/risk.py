"""Combine every signal into one explained risk: a noisy-OR of per-flag probabilities.

Each raised flag stands for an independent piece of evidence with a configured weight w, read as
"P(meaning-changing error | this flag alone)"; continuous signals (chrF++, cosines, z-scores) add a
soft version of their flag, w * logistic((threshold - value) / scale), so pairs just below a
threshold and far below it are ranked apart. risk = 1 - prod(1 - p). The defaults are
audit/default_config.toml plus, from the signal modules' declarations (audit/registry.py), each
flag's [weights] entry and each rule's [signals.COLUMN] table; `--config FILE` (TOML or YAML) overrides any part of it, strictly: an
unknown key is an error naming the nearest valid one, numbers must be finite, severities ordered.
"""

from __future__ import annotations

import copy
import math
import tomllib
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from bbsard_audit.base.config import check_against, read_toml
from bbsard_audit.base.errors import InputError
from bbsard_audit.base import languages
from bbsard_audit.base.languages import LanguagePair

from .findings import Finding
from .registry import default_signal_rules, default_weights, flag_specs
from .signals import Rule

DEFAULT_CONFIG = Path(__file__).with_name("default_config.toml")

SEVERITIES = ("high", "medium", "low")


def _deep_merge(base: dict, override: Mapping) -> dict:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


# The keys a [signals.NAME] table may hold, with the kind of value each takes.
SIGNAL_KEYS = {"flag": "", "threshold": 0.0, "scale": 0.0, "weight": 0.0, "direction": "", "reason": ""}


def _template(defaults: Mapping) -> dict:
    """What a user config may contain: the defaults' shape, [weights] for any known flag, and the
    keys of any shipped [signals.*] table (optional ones included)."""
    template = copy.deepcopy(dict(defaults))
    template["weights"] = {flag: 0.0 for flag in [*defaults.get("weights", {}), *flag_specs()]}
    template["signals"] = {name: dict(SIGNAL_KEYS) for name in defaults.get("signals", {})}
    return template


def _read_config(path: Path, defaults: Mapping) -> dict:
    data = read_toml(path)
    check_against(data, _template(defaults), file=str(path))
    return data


class RiskConfig:
    """The whole audit configuration (risk rule + signal settings) as one validated mapping."""

    def __init__(self, data: Mapping[str, Any], source: str = str(DEFAULT_CONFIG),
                 overrides: Mapping[str, Any] | None = None, language: str | None = None) -> None:
        self.data, self.source = dict(data), source
        self.overrides, self.language = overrides, language
        """`overrides`: the user's config file as read (`load`), re-applied by `for_source` over the
        defaults of another source language; None = `data` is final (used as given for any language).
        `language`: the source language whose pack defaults `data` holds."""
        try:
            risk = self.data["risk"]
            self.flag_threshold = float(risk["flag_threshold"])
            self.default_weight = float(risk["default_weight"])
            self.severity = {name: float(risk["severity"][name]) for name in SEVERITIES}
            self.weights = {str(k): float(v) for k, v in self.data.get("weights", {}).items()}
            self.rules = {col: Rule(column=col, flag=str(r["flag"]), threshold=float(r["threshold"]),
                                          scale=float(r["scale"]), weight=float(r["weight"]),
                                          direction=str(r.get("direction", "below")),
                                          **({"reason": str(r["reason"])} if "reason" in r else {}))
                          for col, r in self.data.get("signals", {}).items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"invalid audit config: missing or non-numeric {exc}", file=source) from None
        bad = [f"weights.{k}" for k, v in self.weights.items() if not 0 <= v < 1]
        bad += [f"signals.{c}" for c, r in self.rules.items()
                if not 0 <= r.weight < 1 or r.scale <= 0 or r.direction not in ("below", "above")]
        bad += [f"risk.{k}" for k, v in [("flag_threshold", self.flag_threshold), *self.severity.items()]
                if not 0 < v <= 1]
        bad += [f"signals.{c}" for c, r in self.rules.items()
                if not (math.isfinite(r.threshold) and math.isfinite(r.scale))]
        for column, rule in self.rules.items():
            try:
                rule.explain(0.0)
            except (KeyError, ValueError, IndexError):
                bad.append(f"signals.{column}.reason")
        if bad:
            raise InputError(f"invalid audit config values: {', '.join(bad)} (weights in [0,1), "
                             "finite thresholds, scale > 0, direction below|above, thresholds in (0,1])", file=source)
        levels = [self.severity[s] for s in SEVERITIES]
        if any(a <= b for a, b in zip(levels, levels[1:])):
            raise InputError("risk.severity levels must be ordered high > medium > low, got "
                             + ", ".join(f"{s} = {v:g}" for s, v in zip(SEVERITIES, levels)), file=source)

    @classmethod
    def load(cls, path: str | Path | None = None, language: str | None = None) -> "RiskConfig":
        """The shipped defaults (of source `language`'s pack, see `default_data`), deep-merged with
        `path` (TOML or YAML) when given."""
        data = default_data(language)
        if path is None:
            return cls(data, overrides={}, language=language)
        user = _read_config(Path(path), data)
        return cls(_deep_merge(data, user), source=str(path), overrides=user, language=language)

    def for_source(self, language: str) -> "RiskConfig":
        """This config for texts whose source is in `language`: its pack's rule defaults under the
        same user overrides (a user's [signals.COLUMN] still wins). Itself when already so, or when
        built from a final mapping."""
        if self.overrides is None or self.language == language:
            return self
        return RiskConfig(_deep_merge(default_data(language), self.overrides), self.source, self.overrides, language)

    def for_pair(self, pair: LanguagePair) -> "RiskConfig":
        """This config for one pair's texts, final: its source's pack defaults (`for_source`) and each
        rule's reason naming the pair's languages where it says {source} and {target}."""
        config = self.for_source(pair.source)
        data = copy.deepcopy(config.data)
        for table in data.get("signals", {}).values():
            if "reason" in table:
                table["reason"] = Rule.named(str(table["reason"]), pair.names)
        return RiskConfig(data, config.source, None, config.language)

    def section(self, name: str) -> dict:
        return dict(self.data.get(name, {}))

    def rule_for_flag(self, flag: str) -> Rule | None:
        return next((r for r in self.rules.values() if r.flag == flag), None)

    def to_dict(self) -> dict:
        return copy.deepcopy(self.data)


def default_data(language: str | None = None) -> dict:
    """audit/default_config.toml with the declared [weights] and [signals.*] tables; with a source
    `language`, its pack's `backtranslation` thresholds and scales replace the declared ones (a pack
    without the section keeps them)."""
    data = tomllib.loads(DEFAULT_CONFIG.read_text(encoding="utf-8"))
    clash = {"weights", "signals"} & set(data)
    if clash:
        raise InputError(f"[{', '.join(sorted(clash))}] come from the signal modules' declarations, "
                         "not the shipped config", file=str(DEFAULT_CONFIG))
    signals = default_signal_rules()
    if language is not None:
        pack = languages.get(language)
        for column, values in pack.data.get("backtranslation", {}).items():
            if column not in signals:
                raise InputError(f"`backtranslation.{column}` is no rule column (known: "
                                 f"{', '.join(signals)})", file=str(pack.path))
            signals[column] = {**signals[column], **values}
    return {**data, "weights": default_weights(), "signals": signals}


def _values(columns: pd.DataFrame, rule: Rule) -> np.ndarray:
    return pd.to_numeric(columns[rule.column], errors="coerce").to_numpy(dtype=float)


def combine(findings: Sequence[Sequence[Finding]], columns: pd.DataFrame, config: RiskConfig) -> pd.DataFrame:
    """risk, severity, flagged, flags, reasons for each row (row-aligned with `columns`)."""
    n = len(findings)
    log_keep = np.zeros(n)  # sum of log(1 - p): noisy-OR in log space
    soft_flags = {r.flag for r in config.rules.values()}
    for rule in config.rules.values():
        if rule.column in columns:
            log_keep += np.log1p(-rule.probability(_values(columns, rule)))
    raised = {rule.flag: (rule, _values(columns, rule)) for rule in config.rules.values() if rule.column in columns}
    flags_out, reasons_out = [], []
    for i, row in enumerate(findings):
        row = list(row)
        for flag, (rule, values) in raised.items():  # a rule on another module's column explains itself
            if rule.raised(values[i : i + 1])[0] and not any(f.flag == flag for f in row):
                row.append(Finding(flag, rule.explain(values[i])))
        flags = list(dict.fromkeys(f.flag for f in row))
        for flag in flags:
            if flag not in soft_flags:
                log_keep[i] += math.log1p(-config.weights.get(flag, config.default_weight))
        flags_out.append(";".join(flags))
        reasons_out.append(" | ".join(dict.fromkeys(f.reason for f in row)))
    risk = 1.0 - np.exp(log_keep)
    severity = np.select([risk >= config.severity[s] for s in SEVERITIES], list(SEVERITIES), default="none")
    return pd.DataFrame({"risk": risk, "severity": severity,
                         "flagged": risk >= config.flag_threshold, "flags": flags_out, "reasons": reasons_out},
                        index=columns.index if len(columns) == n else None)
