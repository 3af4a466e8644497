"""Build a tiny, random COMET checkpoint laid out exactly like a hub one; runs INSIDE the COMET venv.

    python comet_tiny.py SENTENCES.txt OUT_DIR [--kind xcomet|kiwi] [--seed 0]

OUT_DIR/encoder: a small XLM-R (XLMRobertaConfig, 2 layers of width 32) with a sentencepiece
tokenizer trained here on SENTENCES.txt, saved with save_pretrained. OUT_DIR/checkpoints/model.ckpt
+ OUT_DIR/hparams.yaml: a comet UnifiedMetric on that encoder (`pretrained_model` = the encoder
folder), saved by a Lightning Trainer, so `comet.load_from_checkpoint` reads it as it reads
Unbabel/XCOMET-XL (`xcomet`: word-level error tags minor/major, src + mt + ref segments) or
Unbabel/wmt22-cometkiwi-da (`kiwi`: src + mt, sentence score only). Its weights are random: the
scores and spans mean nothing, the code paths are the real ones.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytorch_lightning as ptl
import sentencepiece as spm
import torch
import yaml
from comet.models import UnifiedMetric
from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizer, XLMRobertaTokenizerFast


def build_encoder(sentences: Path, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(input=str(sentences), model_prefix=str(folder / "spm"), vocab_size=400,
                                   model_type="unigram", character_coverage=1.0, minloglevel=2)
    slow = XLMRobertaTokenizer(vocab_file=str(folder / "spm.model"))
    slow.save_pretrained(folder)
    XLMRobertaTokenizerFast.from_pretrained(folder).save_pretrained(folder)  # tokenizer.json, as on the hub
    config = XLMRobertaConfig(vocab_size=len(slow), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=64, max_position_embeddings=514, pad_token_id=1,
                              bos_token_id=0, eos_token_id=2)
    XLMRobertaModel(config, add_pooling_layer=False).save_pretrained(folder)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sentences", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--kind", choices=("xcomet", "kiwi"), default="xcomet")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    encoder = args.out / "encoder"
    build_encoder(args.sentences, encoder)
    xcomet = args.kind == "xcomet"
    metric = UnifiedMetric(encoder_model="XLM-RoBERTa", pretrained_model=str(encoder.resolve()),
                           hidden_sizes=[16], final_activation="sigmoid", word_layer=2, sent_layer="mix",
                           layer_transformation="sparsemax", nr_frozen_epochs=0.3,
                           input_segments=["mt", "src", "ref"] if xcomet else ["mt", "src"],
                           word_level_training=xcomet, error_labels=["minor", "major"])
    trainer = ptl.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                          enable_progress_bar=False)
    trainer.strategy.connect(metric)
    (args.out / "checkpoints").mkdir(parents=True, exist_ok=True)
    trainer.save_checkpoint(args.out / "checkpoints" / "model.ckpt", weights_only=True)
    hparams = {**dict(metric.hparams), "class_identifier": "unified_metric", "load_pretrained_weights": False}
    (args.out / "hparams.yaml").write_text(yaml.safe_dump(hparams, sort_keys=True))


if __name__ == "__main__":
    main()
