"""The LLM judge against a real OpenAI-compatible server: llama-cpp-python's, on a tiny GGUF llama
model written here with the `gguf` package, so the whole path runs for real (response_format ->
grammar-constrained JSON -> strict parse -> audit.csv + sidecar).

Not a test: llama-cpp-python compiles llama.cpp on install (10.6 min measured on the shared 2-core
machine), too long for CI (docs/audit.md "LLM judge"); tests/audit/test_judge.py uses a recorded-answer
stand-in instead. Needs `pip install -e '.[judge-bench]'` (llama-cpp-python[server], gguf).

The model has one layer with zero weights and a fixed output bias, so every position's logits are
the same ranking: greedy decoding under the schema's grammar then writes one error object with an
empty span (`{"errors":[{"span":"","side":"target",...}]}`), which the parser drops with a note.

Usage: python benchmarks/bench_judge_llamacpp.py [--out reports/bench-judge]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def write_tiny_llama(path: Path) -> None:
    """A 16-dim one-layer llama GGUF with a byte-fallback SentencePiece vocab of ~340 tokens."""
    import gguf

    n_embd, n_ff = 16, 32
    preferred = ["</s>", '"', "{", "]", "}", ":", ","]  # greedy picks the first one the grammar allows
    chars = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.?!'-_[" if c not in preferred]
    tokens = ["<unk>", "<s>", "</s>", *preferred[1:], *chars, "\u2581", *[f"<0x{b:02X}>" for b in range(256)]]
    types = [2, 3, 3] + [1] * (len(tokens) - 259) + [6] * 256
    rank = {t: r for r, t in enumerate(preferred)}
    bias = np.array([-float(rank.get(t, len(preferred) + i)) for i, t in enumerate(tokens)], np.float32)
    bias[:2] = -1e4  # never <unk> or <s>
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(4096), w.add_embedding_length(n_embd), w.add_block_count(1)
    w.add_feed_forward_length(n_ff), w.add_head_count(2), w.add_head_count_kv(2)
    w.add_rope_dimension_count(n_embd // 2), w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama"), w.add_token_list(tokens), w.add_token_scores([0.0] * len(tokens))
    w.add_token_types(types), w.add_bos_token_id(1), w.add_eos_token_id(2), w.add_unk_token_id(0)
    w.add_chat_template("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}<|assistant|>")
    embd = np.zeros((len(tokens), n_embd), np.float32)
    embd[:, 0] = 1.0  # every position's state is e0 (the layer adds nothing) ...
    out = np.zeros_like(embd)
    out[:, 0] = bias  # ... so the logits are the bias, whatever the context
    ones, zeros = np.ones(n_embd, np.float32), lambda *s: np.zeros(s, np.float32)
    tensors = {"token_embd.weight": embd, "output_norm.weight": ones, "output.weight": out,
               "blk.0.attn_norm.weight": ones, "blk.0.ffn_norm.weight": ones,
               **{f"blk.0.attn_{n}.weight": zeros(n_embd, n_embd) for n in ("q", "k", "v", "output")},
               "blk.0.ffn_gate.weight": zeros(n_ff, n_embd), "blk.0.ffn_up.weight": zeros(n_ff, n_embd),
               "blk.0.ffn_down.weight": zeros(n_embd, n_ff)}
    for name, value in tensors.items():
        w.add_tensor(name, value)
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "bench-judge")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-judge-"))
    model = work / "tiny-llama.gguf"
    write_tiny_llama(model)
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "tiny",
                               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        started = time.perf_counter()
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.perf_counter() - started > 120 or server.poll() is not None:
                    sys.exit("llama_cpp.server did not start")
                time.sleep(0.5)
        startup = time.perf_counter() - started
        runs = {}
        for name in ("cold", "warm"):  # warm: every answer from the judge cache, no request
            t0 = time.perf_counter()
            done = subprocess.run([str(Path(sys.executable).with_name("bbsard-audit")), "audit", "--dataset", "sample",
                                   "--cache-dir", str(work / "cache"), "--judge", "llm:tiny", "--judge-url", url,
                                   "--judge-on", "all", "--judge-concurrency", "1", "--out", str(work / name)],
                                  capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(work)})
            if done.returncode:
                sys.exit(f"audit failed ({done.returncode}): {done.stderr[-2000:]}")
            runs[name] = {"seconds": round(time.perf_counter() - t0, 1),
                          "judge": json.loads((work / name / "audit.meta.json").read_text())["judge"]}
    finally:
        server.terminate()
        server.wait(timeout=30)
    cold = runs["cold"]["judge"]
    assert cold["response_format"] == "json_object" and cold["judged"] == 40 == cold["dropped_spans"], cold
    assert runs["warm"]["judge"]["cached"] == 40 and runs["warm"]["judge"]["requests"] == 0, runs["warm"]
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"server_startup_s": round(startup, 1), **runs}
    (args.out / "bench_judge_llamacpp.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
