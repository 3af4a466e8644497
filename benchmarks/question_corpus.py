"""A development corpus of documents made of real citizen questions: bBSARD's French questions and
their Dutch translations (../shared/data/bbsard/questions_{fr,nl}_{train,test}.csv, real text, real
translations), joined into the documents real corpora hold that look like a person talking:

- `faq`: an FAQ page, one question a line (bare, numbered or bulleted, the same marker both sides);
- `thread`: a forum thread, posts separated by blank lines, a post of one or two questions, some
  quoting the post before ('> ...', as mail and forum replies do);
- `passage`: question-dense prose, the questions run on in one or two paragraphs;
- `mixed`: the questions' own statements ("Je suis travailleur salarié(e).") and questions, each
  sentence pair aligned by splitting both sides alike, interleaved as a passage that tells and asks.

A document's questions come from one category and one split: the train corpus holds only train
questions, the test corpus only test questions (hold out by source question: tune on train, report
on test). Both directions: fr -> nl (the real direction) and nl -> fr. Artifacts are injected into a
share of the translations, one type a document (`ARTIFACTS`; the leftover phrasings are
tests/leftover_synth.py's for Dutch and English, `FR_*` below for French). Built at run time from
the shared files and never written to the repository; deterministic for a seed.
"""

from __future__ import annotations

import csv
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import leftover_synth as ls  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "bbsard"
GENRES = ("faq", "thread", "passage", "mixed")
LEFTOVERS = ("preface_target", "preface_en", "note_target", "note_en", "remark_mid", "chat", "refusal")
OTHERS = ("empty", "untranslated", "wrong_language", "truncated", "duplicate", "mojibake", "numbers", "misaligned")
MISALIGNED = ("misaligned", "misaligned_topic", "misaligned_shifted")
"""Another document's translation (same genre, similar length, any category); the same, from the
same category (a same-topic neighbour: the hard case); rows shifted by one (a run of 2-3 documents
each holding the next row's translation)."""
ARTIFACTS = LEFTOVERS + OTHERS + MISALIGNED[1:]
FLAG_OF = {**{k: "doc_meta_text" for k in LEFTOVERS}, "empty": "doc_empty", "untranslated": "doc_untranslated",
           "wrong_language": "doc_wrong_language", "truncated": "doc_truncated",
           "duplicate": "doc_duplicate_translation", "mojibake": "doc_mojibake", "numbers": "doc_numbers_changed",
           **{k: "doc_misaligned" for k in MISALIGNED}}

FR_PREFACES = ["Voici la traduction en français :", "Voici le texte traduit :", "Bien sûr ! Voici la version française :",
               "Traduction en français :", "Voici la traduction demandée :\n", "Texte traduit du néerlandais :",
               "Certainement. Voici la traduction du texte :"]
FR_NOTES = ["Note du traducteur : le terme « {t} » n'a pas d'équivalent exact en français.",
            "Remarque : j'ai conservé la numérotation de l'original.",
            "N.B. : « {t} » peut aussi se traduire par « {b} » selon le contexte.",
            "Note : la traduction est assez littérale.",
            "(Remarque de traduction : certaines formulations ont été adaptées pour la lisibilité.)",
            "[Note : le texte source était ambigu ici, j'ai choisi la lecture la plus probable.]"]
FR_CHATS = ["N'hésitez pas à me demander d'autres traductions.", "J'espère que cela vous aide !",
            "Dites-moi si vous souhaitez des modifications.", "Voulez-vous que je traduise aussi la suite ?"]
FR_REFUSALS = ["Je suis désolé, mais je ne peux pas traduire ce document.",
               "Désolé, je ne suis pas en mesure de traduire ce texte.",
               "Je regrette, mais je ne peux pas répondre à cette demande."]
WRONG = {  # a translation into neither language (written here, illustrative): Latin-script languages a pack's common words can take for French or Dutch
    "es": ["¿Puedo pedir una pensión alimenticia si mi ex pareja no paga?", "El arrendatario debe pagar el alquiler cada mes y mantener la vivienda en buen estado.",
           "¿A quién debo dirigirme si tengo un problema con mi empleador?", "Estoy separado y tengo dos hijos menores."],
    "it": ["Posso chiedere gli alimenti se il mio ex partner non paga?", "Il conduttore deve pagare l'affitto ogni mese e mantenere l'alloggio in buono stato.",
           "A chi devo rivolgermi se ho un problema con il mio datore di lavoro?", "Sono separato e ho due figli minorenni."],
    "pt": ["Posso pedir uma pensão de alimentos se o meu ex-companheiro não pagar?", "O inquilino deve pagar a renda todos os meses e manter a habitação em bom estado.",
           "A quem me devo dirigir se tiver um problema com o meu empregador?", "Estou separado e tenho dois filhos menores."],
    "en": ["Can I ask for maintenance if my former partner does not pay?", "The tenant shall pay the rent monthly and keep the premises in good repair.",
           "Who should I contact if I have a problem with my employer?", "I am separated and have two minor children."],
    "de": ["Kann ich Unterhalt verlangen, wenn mein früherer Partner nicht zahlt?", "Der Mieter muss die Miete monatlich zahlen und die Wohnung in gutem Zustand halten.",
           "An wen muss ich mich wenden, wenn ich ein Problem mit meinem Arbeitgeber habe?", "Ich bin getrennt und habe zwei minderjährige Kinder."],
}
MOJIBAKE_SAFE = re.compile(r"[^\x00-\x7f]")


@dataclass
class Corpus:
    table: pa.Table
    labels: list[str]
    """The artifact injected into each document ("" = clean; "duplicate_partner": the document a
    `duplicate` copied, innocent)."""
    genres: list[str]
    source: str
    target: str


def questions(split: str, data: Path = DATA) -> list[dict]:
    """The question pairs of a split: {id, category, fr, nl}, in file order."""
    def read(lang: str) -> dict[str, dict]:
        with open(data / f"questions_{lang}_{split}.csv", encoding="utf-8") as f:
            return {r["id"]: r for r in csv.DictReader(f)}
    fr, nl = read("fr"), read("nl")
    return [{"id": k, "category": r["category"], "fr": r["question"].strip(), "nl": nl[k]["question"].strip()}
            for k, r in fr.items() if k in nl]


_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-ZÀ-Þ«\"])")


def sentence_pairs(pairs: list[dict]) -> list[tuple[str, str, bool]]:
    """(fr, nl, is a question) for each sentence of the questions whose two sides split into as many
    sentences (a real statement and a real question, aligned by position)."""
    out = []
    for q in pairs:
        fr, nl = _SPLIT.split(q["fr"]), _SPLIT.split(q["nl"])
        if len(fr) == len(nl):
            out += [(a, b, a.rstrip().endswith("?")) for a, b in zip(fr, nl)]
    return out


def _units(rng: random.Random, genre: str, pool: list[dict], sentences: list[tuple[str, str, bool]]) -> list[tuple[str, str]]:
    if genre == "mixed":
        k = rng.randint(3, 8)
        told = [s for s in sentences if not s[2]]
        asked = [s for s in sentences if s[2]]
        picked = rng.sample(told, k // 2) + rng.sample(asked, k - k // 2)
        rng.shuffle(picked)
        return [(a, b) for a, b, _ in picked]
    k = {"faq": rng.randint(3, 10), "thread": rng.randint(2, 6), "passage": rng.randint(2, 6)}[genre]
    return [(q["fr"], q["nl"]) for q in rng.sample(pool, min(k, len(pool)))]


def _layout(rng: random.Random, genre: str, units: list[tuple[str, str]]) -> tuple[str, str]:
    """The two sides of a document, laid out alike."""
    if genre == "faq":
        marker = rng.choice(["", "{k}. ", "- ", "• ", "{k}) "])
        lines = [[marker.format(k=k + 1) + side for side in u] for k, u in enumerate(units)]
        return "\n".join(l[0] for l in lines), "\n".join(l[1] for l in lines)
    if genre == "thread":
        posts, k = [], 0
        while k < len(units):
            n = rng.randint(1, 2)
            post = list(units[k:k + n])
            if posts and rng.random() < 0.3:  # a reply quoting the post before
                post = [(f"> {posts[-1][0][0]}", f"> {posts[-1][0][1]}")] + post
            posts.append(post)
            k += n
        return tuple("\n\n".join("\n".join(u[side] for u in post) if post[0][0].startswith(">") else
                                 " ".join(u[side] for u in post) for post in posts) for side in (0, 1))
    joiner = " "
    if len(units) > 3 and rng.random() < 0.5:  # two paragraphs
        cut = rng.randint(1, len(units) - 1)
        return tuple(" ".join(u[s] for u in units[:cut]) + "\n\n" + " ".join(u[s] for u in units[cut:]) for s in (0, 1))
    return tuple(joiner.join(u[s] for u in units) for s in (0, 1))


def _leftover(kind: str, target: str, lang: str, rng: random.Random) -> str:
    """`target` with a leftover: Dutch and English phrasings from tests/leftover_synth.py, French ones above."""
    synth = {"preface_target": "preface_nl", "note_target": rng.choice(["note_bracket_nl", "note_blank_nl"]),
             "preface_en": "preface_en", "note_en": rng.choice(["note_bracket_en", "note_blank_en"])}.get(kind, kind)
    if lang == "nl" or kind.endswith("_en"):
        return ls.leftover(synth, target, rng)
    if kind == "remark_mid":
        return _fr_remark(target, rng)
    term = rng.choice(ls.TERMS)
    if kind == "preface_target":
        return rng.choice(FR_PREFACES) + rng.choice(["\n", "\n\n", " "]) + target
    if kind == "note_target":
        return target + rng.choice(["\n\n", " ", "\n"]) + rng.choice(FR_NOTES).format(t=term[0], b=term[2])
    if kind == "chat":
        return target + rng.choice(["\n\n", " ", "\n"]) + rng.choice(FR_CHATS + ls.CHATS[:6])
    if kind == "refusal":
        refusal = rng.choice(FR_REFUSALS + ls.REFUSALS[:5])
        return refusal if rng.random() < 0.5 else target.split("\n")[0] + rng.choice(["\n\n", " "]) + refusal
    raise ValueError(kind)


def _fr_remark(target: str, rng: random.Random) -> str:
    parts = target.split("\n\n") if "\n\n" in target else target.split("\n") if "\n" in target else _SPLIT.split(target)
    k = rng.randint(1, max(1, len(parts) - 1))
    term = rng.choice(ls.TERMS)
    note = rng.choice(FR_NOTES).format(t=term[0], b=term[2]) if rng.random() < 0.5 else ls._note(rng, True)
    joiner = "\n\n" if "\n\n" in target else "\n" if "\n" in target else " "
    return joiner.join(parts[:k] + [note] + parts[k:])


def build(split: str, source: str = "fr", docs: int = 1000, rate: float = 0.03, seed: int = 0,
          artifacts: tuple[str, ...] = ARTIFACTS, genres: tuple[str, ...] = GENRES, data: Path = DATA) -> Corpus:
    """`docs` distinct documents of the split's questions (genres in turn), ~`rate` x docs of each
    artifact type, source `source` ("fr" or "nl") and the other language as the target."""
    target = "nl" if source == "fr" else "fr"
    rng = random.Random(f"{split}-{source}-{seed}")
    pairs = questions(split, data)
    by_category: dict[str, list[dict]] = {}
    for q in pairs:
        by_category.setdefault(q["category"], []).append(q)
    categories = sorted(c for c, qs in by_category.items() if len(qs) >= 10)
    sentences = {c: sentence_pairs(by_category[c]) for c in categories}
    rows, kinds, topics, seen = [], [], [], set()
    while len(rows) < docs:
        genre = genres[len(rows) % len(genres)]
        category = rng.choice(categories)
        units = _units(rng, genre, by_category[category], sentences[category])
        fr, nl = _layout(rng, genre, units)
        if fr in seen:
            continue
        seen.add(fr)
        rows.append([fr, nl] if source == "fr" else [nl, fr])
        kinds.append(genre)
        topics.append(category)
    labels = [""] * docs
    free = list(range(docs))
    rng.shuffle(free)
    per_type = max(2, round(rate * docs))

    def take(ok=lambda i: True) -> int | None:
        for pos, i in enumerate(free):
            if ok(i):
                return free.pop(pos)
        return None

    for kind in artifacts:
        while labels.count(kind) < per_type:
            i = take({"numbers": lambda d: re.search(r"\d", rows[d][1]) is not None,
                      "mojibake": lambda d: MOJIBAKE_SAFE.search(rows[d][1]) is not None,
                      "truncated": lambda d: len(rows[d][1]) >= 120}.get(kind, lambda d: True))
            if i is None:
                break
            src, tgt = rows[i]
            if kind in LEFTOVERS:
                rows[i][1] = _leftover(kind, tgt, target, rng)
            elif kind == "empty":
                rows[i][1] = rng.choice(["", "   ", "....", "\n\n"])
            elif kind == "untranslated":
                rows[i][1] = src
            elif kind == "wrong_language":
                said = WRONG[rng.choice(sorted(WRONG))]
                rows[i][1] = " ".join(rng.sample(said, rng.randint(1, len(said))))
            elif kind == "truncated":
                rows[i][1] = tgt[:max(8, int(len(tgt) * rng.uniform(0.15, 0.4)))].rsplit(" ", 1)[0]
            elif kind == "numbers":
                m = rng.choice(list(re.finditer(r"\d+", tgt)))
                rows[i][1] = tgt[:m.start()] + str(int(m.group()) + rng.randint(1, 9)) + tgt[m.end():]
            elif kind == "duplicate":
                j = take(lambda d: rows[d][0] != src)
                if j is None:
                    break
                rows[i][1] = rows[j][1]
                labels[j] = "duplicate_partner"
            elif kind in ("misaligned", "misaligned_topic"):  # another document's translation, same genre, similar length
                j = min((d for d in free if kinds[d] == kinds[i] and (kind == "misaligned" or topics[d] == topics[i])),
                        key=lambda d: abs(len(rows[d][1]) - len(tgt)) + rng.random(), default=None)
                if j is None:
                    break
                rows[i][1] = rows[j][1]
            elif kind == "misaligned_shifted":  # rows i..i+k-1 hold the translations of rows i+1..i+k
                free.append(i)
                run = rng.randint(2, 3)
                start = next((d for d in free if all(d + m in free for m in range(run + 1))), None)
                if start is None:
                    break
                for m in range(run):
                    free.remove(start + m)
                    rows[start + m][1] = rows[start + m + 1][1]
                    labels[start + m] = kind
                continue
            elif kind == "mojibake":
                rows[i][1] = tgt.encode("utf-8").decode("cp1252", errors="replace")
            labels[i] = kind
    n = len(rows)
    table = pa.table({"id": [f"{split}{i:05d}" for i in range(n)], "source_title": [""] * n,
                      "source_text": [r[0] for r in rows], "target_title": [""] * n,
                      "target_text": [r[1] for r in rows]})
    return Corpus(table, labels, kinds, source, target)


if __name__ == "__main__":
    corpus = build(sys.argv[1] if len(sys.argv) > 1 else "train", sys.argv[2] if len(sys.argv) > 2 else "fr", 40)
    for k in range(8):
        print(f"--- {corpus.genres[k]} {corpus.labels[k]!r}\n{corpus.table['source_text'][k]}\n=>\n{corpus.table['target_text'][k]}")
