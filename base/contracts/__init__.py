"""One strict reader and one atomic writer for every file the stages exchange (docs/formats.md).

Base layer: imports only bbsard_audit.{errors, io}; every stage, the report and the release read
and write their exchanged files through these modules, so a rule holds everywhere or nowhere.

- `table`: the column-rule framework (`Column`, `TableSpec`, `parse_flag`, `parse_id`);
- `jsonfile`: strict JSON (`read_json`, `Record` with `to_dict` / `from_dict`);
- `sidecar`: `.meta.json` files (row count + sha256 of what they describe);
- one module per file kind: `audit` (audit.csv/parquet, review_queue.csv), `verdicts`
  (the verdict vocabulary, verdicts.csv, annotations_raw.csv), `error_spans`, `eval_tables`
  (metrics.csv, ranking_shift.csv), `estimate`, `agreement`, `calibration`, `changelog`, `runs`.
"""

from bbsard_audit.base.errors import InputError

from .table import Column, FileRecord, TableSpec, parse_flag, parse_id

__all__ = ["Column", "FileRecord", "InputError", "TableSpec", "parse_flag", "parse_id"]
