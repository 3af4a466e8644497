"""Score translation pairs with one unbabel-comet checkpoint; runs INSIDE the COMET venv (audit/qe/env.py).

It runs under that venv's interpreter, so it imports nothing from the project: only the standard
library and unbabel-comet. The protocol (audit/qe/signal.py is the other side):

    python worker.py MODEL --input REQUESTS.jsonl [--batch-size 8] [--chunk 64]

MODEL: a checkpoint file, a folder holding checkpoints/model.ckpt + hparams.yaml, or a hub id
(Unbabel/wmt22-cometkiwi-da, Unbabel/XCOMET-XL; HF_HUB_OFFLINE=1 forbids downloads). REQUESTS: one
{"src", "mt"} object a line. stdout: one header line {"model_class", "word_level", "checkpoint"},
then one {"score", "spans"} line per request, in order, flushed per chunk (the caller's progress);
`spans` are xCOMET-style error spans {start, end, text, severity, confidence} with character
offsets into `mt` (null for a model without word-level tags). Anything the libraries print goes to
stderr. A failure: one line `error: ...` on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


class WorkerError(Exception):
    """A failure the caller reports as one line (no traceback)."""


def _offline() -> bool:
    """HF_HUB_OFFLINE as huggingface_hub reads it."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "on", "yes", "true")


def checkpoint_of(model: str) -> Path:
    """The model.ckpt of a local file or folder, else a hub id fetched (or found in the HF cache)."""
    path = Path(model).expanduser()
    if path.is_dir():
        path = path / "checkpoints" / "model.ckpt"
        if not path.is_file():
            raise WorkerError(f"{model}: no checkpoints/model.ckpt in this folder")
        return path
    if path.is_file():
        return path
    if model.count("/") != 1 or model.startswith((".", "/", "~")):  # a hub id is OWNER/NAME
        raise WorkerError(f"{model}: no such checkpoint file or folder")
    from comet import download_model
    from huggingface_hub import constants

    offline = _offline()
    try:  # the hub cache named: without it, comet's legacy fallback writes ~/.cache/torch/unbabel_comet
        return Path(download_model(model, saving_directory=constants.HF_HUB_CACHE, local_files_only=offline))
    except Exception:  # comet turns every hub failure into "not supported by COMET"
        why = ("HF_HUB_OFFLINE is set and it is not in the Hugging Face cache" if offline else
               "unknown, unreachable or gated (accept its licence on the hub and `huggingface-cli login`)")
        raise WorkerError(f"{model}: not a local checkpoint, and the hub model cannot be had: {why}; "
                          "or download it once and pass its folder") from None


def load(model: str):
    from comet import load_from_checkpoint

    ckpt = checkpoint_of(model)
    if not (ckpt.parents[1] / "hparams.yaml").is_file():
        raise WorkerError(f"{model}: no hparams.yaml beside the checkpoints/ folder of {ckpt.name}")
    try:
        metric = load_from_checkpoint(str(ckpt), local_files_only=_offline())
    except Exception as exc:  # torch, Lightning and transformers each raise their own kinds
        raise WorkerError(f"{model}: cannot load the checkpoint ({type(exc).__name__}: "
                          f"{' '.join(str(exc).split())[:300]})") from None
    if metric.requires_references():
        raise WorkerError(f"{model}: this metric needs reference translations; give a quality-estimation "
                          "model (CometKiwi, xCOMET or another checkpoint that reads src + mt only)")
    return ckpt, metric


def spans_of(metadata, i: int) -> list[dict] | None:
    found = metadata.get("error_spans") if metadata else None
    if found is None:
        return None
    return [{"start": int(s["start"]), "end": int(s["end"]), "text": str(s["text"]),
             "severity": str(s["severity"]), "confidence": round(float(s["confidence"]), 4)}
            for s in found[i]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--input", required=True, type=Path)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--chunk", type=int, default=64, help="requests per predict call (one progress step)")
    args = parser.parse_args(argv)
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # library prints (Lightning banners, tqdm) must not mix with the results
    try:
        requests = [json.loads(line) for line in args.input.read_text(encoding="utf-8").splitlines() if line.strip()]
        if any(not isinstance(r, dict) or not isinstance(r.get("src"), str) or not isinstance(r.get("mt"), str)
               for r in requests):
            raise WorkerError(f"{args.input}: every request needs string fields src and mt")
        import torch

        ckpt, metric = load(args.model)
        gpus = 1 if torch.cuda.is_available() else 0
        header = {"model_class": type(metric).__name__, "word_level": bool(getattr(metric, "word_level", False)),
                  "checkpoint": str(ckpt), "gpus": gpus}
        out.write(json.dumps(header) + "\n")
        out.flush()
        for start in range(0, len(requests), args.chunk):
            chunk = [{"src": r["src"], "mt": r["mt"]} for r in requests[start:start + args.chunk]]
            prediction = metric.predict(chunk, batch_size=args.batch_size, gpus=gpus, progress_bar=False)
            metadata = prediction.get("metadata")
            for i, score in enumerate(prediction["scores"]):
                out.write(json.dumps({"score": float(score), "spans": spans_of(metadata, i)}, ensure_ascii=False) + "\n")
            out.flush()
    except WorkerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, RuntimeError) as exc:  # a bad input file, a model that fails while scoring
        print(f"error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
