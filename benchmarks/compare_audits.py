"""Compare two audit.csv files pair by pair: the signal-protocol refactor must not change any result.

    python benchmarks/compare_audits.py BEFORE/audit.csv AFTER/audit.csv

Reports, per column both files share, how many rows differ (floats within 1e-9); risk, flagged,
severity, flags, reasons and spans must be identical (exit 1 otherwise). Columns only in one file are listed.
Result on bBSARD all 1,108 pairs with the shipped back-translations: benchmarks/results/compare_audits.json.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd

MUST_MATCH = ("risk", "severity", "flagged", "flags", "reasons", "spans")


def compare(before: pd.DataFrame, after: pd.DataFrame) -> dict:
    if list(before["id"]) != list(after["id"]):
        raise SystemExit("the two audits cover different pairs")
    out = {"n_pairs": len(before), "only_before": sorted(set(before) - set(after)),
           "only_after": sorted(set(after) - set(before)), "differing_rows": {}}
    for col in [c for c in before.columns if c in after.columns]:
        a, b = before[col], after[col]
        if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b) and not pd.api.types.is_bool_dtype(a):
            same = np.isclose(a.to_numpy(float), b.to_numpy(float), rtol=0, atol=1e-9, equal_nan=True)
        else:
            same = (a.fillna("").astype(str) == b.fillna("").astype(str)).to_numpy()
        out["differing_rows"][col] = int((~same).sum())
    out["identical"] = all(out["differing_rows"][c] == 0 for c in MUST_MATCH)
    return out


if __name__ == "__main__":
    result = compare(pd.read_csv(sys.argv[1]), pd.read_csv(sys.argv[2]))
    print(json.dumps(result, indent=1))
    sys.exit(0 if result["identical"] else 1)
