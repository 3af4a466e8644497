"""Build a tiny, random COMET checkpoint laid out exactly like a hub one; runs INSIDE the COMET venv.

    python comet_tiny.py SENTENCES.txt OUT_DIR [--kind xcomet|kiwi] [--size tiny|large] [--seed 0]

OUT_DIR/encoder: a small XLM-R (XLMRobertaConfig, 2 layers of width 32) with a sentencepiece
tokenizer trained here on SENTENCES.txt, saved with save_pretrained. OUT_DIR/checkpoints/model.ckpt
+ OUT_DIR/hparams.yaml: a comet metric on that encoder (`pretrained_model` = the encoder
folder), saved by a Lightning Trainer, so `comet.load_from_checkpoint` reads it as it reads
Unbabel/XCOMET-XL (`xcomet`: comet's XCOMETMetric, word-level error tags minor/major/critical) or
Unbabel/wmt22-cometkiwi-da (`kiwi`: a UnifiedMetric on src + mt, sentence score only). Its weights are random: the
scores and spans mean nothing, the code paths are the real ones. `--size large` gives the encoder
XLM-R large's shape (24 layers of width 1024, as under CometKiwi-DA) for benchmarks/bench_qe_comet.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytorch_lightning as ptl
import sentencepiece as spm
import torch
import yaml
from comet.models import UnifiedMetric, XCOMETMetric
from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizer, XLMRobertaTokenizerFast


SIZES = {"tiny": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64),
         "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)}
HEADS = {"tiny": [16], "large": [3072, 1024]}


def build_encoder(sentences: Path, folder: Path, size: str, vocab: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(input=str(sentences), model_prefix=str(folder.parent / "spm"), vocab_size=vocab,
                                   model_type="unigram", character_coverage=1.0, minloglevel=2,
                                   hard_vocab_limit=False)  # a small corpus may give fewer pieces
    slow = XLMRobertaTokenizer(vocab_file=str(folder.parent / "spm.model"))
    slow.save_pretrained(folder)
    XLMRobertaTokenizerFast.from_pretrained(folder).save_pretrained(folder)  # tokenizer.json, as on the hub
    config = XLMRobertaConfig(vocab_size=len(slow), **SIZES[size], max_position_embeddings=514, pad_token_id=1,
                              bos_token_id=0, eos_token_id=2)
    XLMRobertaModel(config, add_pooling_layer=False).save_pretrained(folder)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sentences", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--kind", choices=("xcomet", "kiwi"), default="xcomet")
    parser.add_argument("--size", choices=tuple(SIZES), default="tiny")
    parser.add_argument("--vocab", type=int, default=400, help="sentencepiece vocabulary size")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    encoder = args.out / "encoder"
    build_encoder(args.sentences, encoder, args.size, args.vocab)
    common = dict(encoder_model="XLM-RoBERTa", pretrained_model=str(encoder.resolve()), hidden_sizes=HEADS[args.size],
                  word_layer=SIZES[args.size]["num_hidden_layers"], sent_layer="mix", final_activation="sigmoid")
    if args.kind == "xcomet":  # comet's own XCOMET class: minor/major/critical tags, score mixed with their MQM
        metric, identifier = XCOMETMetric(**common), "xcomet_metric"
    else:
        metric, identifier = UnifiedMetric(**common, input_segments=["mt", "src"]), "unified_metric"
    trainer = ptl.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                          enable_progress_bar=False)
    trainer.strategy.connect(metric)
    (args.out / "checkpoints").mkdir(parents=True, exist_ok=True)
    trainer.save_checkpoint(args.out / "checkpoints" / "model.ckpt", weights_only=True)
    hparams = {**dict(metric.hparams), "class_identifier": identifier, "load_pretrained_weights": False}
    (args.out / "hparams.yaml").write_text(yaml.safe_dump(hparams, sort_keys=True))


if __name__ == "__main__":
    main()
