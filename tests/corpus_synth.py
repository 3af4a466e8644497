"""Synthetic parallel corpora for the document checks' tests: the embedded sample's French/Dutch
articles (base/sample, written for this project) and hand-written English/Dutch sentences,
joined into documents, with artifacts injected by type. `labels[i]` is the artifact injected into
document i ("" = clean; "duplicate_partner": the document whose translation a `duplicate` copied)."""

from __future__ import annotations

import csv
import random
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

SAMPLE = Path(__file__).resolve().parents[1] / "base" / "sample"

EN_NL = [
    ("The tenant must pay the rent on the first day of each month.", "De huurder moet de huur betalen op de eerste dag van elke maand."),
    ("The landlord may not enter the dwelling without the tenant's permission.", "De verhuurder mag de woning niet betreden zonder toestemming van de huurder."),
    ("The lease ends after a period of nine years.", "De huurovereenkomst eindigt na een periode van negen jaar."),
    ("A rental deposit may not exceed two months' rent.", "Een huurwaarborg mag niet meer bedragen dan twee maanden huur."),
    ("The notice period is three months and starts on the first day of the following month.", "De opzegtermijn bedraagt drie maanden en begint op de eerste dag van de volgende maand."),
    ("Repairs caused by normal wear are borne by the landlord.", "Herstellingen die door normale slijtage zijn veroorzaakt, zijn ten laste van de verhuurder."),
    ("The justice of the peace decides on disputes about the lease.", "De vrederechter beslist over geschillen over de huurovereenkomst."),
    ("An inventory of fixtures must be drawn up at the start of the lease.", "Bij het begin van de huurovereenkomst moet een plaatsbeschrijving worden opgemaakt."),
    ("The rent may be indexed once a year on the anniversary of the lease.", "De huurprijs mag eenmaal per jaar worden geïndexeerd op de verjaardag van de huurovereenkomst."),
    ("The employer pays the worker a guaranteed salary for 30 days.", "De werkgever betaalt de werknemer een gewaarborgd loon gedurende 30 dagen."),
    ("The worker who is ill must inform the employer without delay.", "De werknemer die ziek is, moet de werkgever onverwijld verwittigen."),
    ("The fine amounts to 250 euros per offence.", "De geldboete bedraagt 250 euro per overtreding."),
    ("The request must be submitted within 15 days after the decision.", "Het verzoek moet binnen 15 dagen na de beslissing worden ingediend."),
    ("The municipality keeps a register of all residents.", "De gemeente houdt een register bij van alle inwoners."),
    ("Children under 12 years old travel free of charge.", "Kinderen jonger dan 12 jaar reizen gratis."),
    ("The contract must be signed by both parties before it takes effect.", "De overeenkomst moet door beide partijen worden ondertekend voordat ze in werking treedt."),
    ("According to Article 7, the buyer may cancel the purchase within 14 days.", "Volgens artikel 7 kan de koper de aankoop binnen 14 dagen annuleren."),
    ("The owner is liable for damage caused by the collapse of the building.", "De eigenaar is aansprakelijk voor schade veroorzaakt door de instorting van het gebouw."),
    ("Under Article 3bis, a tenant may sublet a room with the written consent of the landlord.", "Krachtens artikel 3bis mag een huurder een kamer onderverhuren met schriftelijke toestemming van de verhuurder."),
    ("The allowance is paid for a maximum of 24 months.", "De uitkering wordt betaald voor ten hoogste 24 maanden."),
    ("Every resident over 18 must carry an identity card.", "Elke inwoner ouder dan 18 jaar moet een identiteitskaart bij zich hebben."),
    ("The tax return must be filed before 30 June.", "De belastingaangifte moet vóór 30 juni worden ingediend."),
    ("The heir may refuse the inheritance by a declaration to the court.", "De erfgenaam kan de nalatenschap verwerpen door een verklaring bij de rechtbank."),
    ("A marriage can only be concluded before the civil registrar.", "Een huwelijk kan enkel voor de ambtenaar van de burgerlijke stand worden gesloten."),
]
FOREIGN = {  # a text in neither language of the pair, by the pair's source
    "fr": ["The tenant shall pay the rent monthly and keep the premises in good repair at all times.",
           "Der Mieter muss die Miete monatlich zahlen und die Wohnung in gutem Zustand halten.",
           "El arrendatario debe pagar el alquiler cada mes y mantener la vivienda en buen estado."],
    "en": ["Le locataire doit payer le loyer chaque mois et entretenir le logement en bon état.",
           "Der Mieter muss die Miete monatlich zahlen und die Wohnung in gutem Zustand halten.",
           "El arrendatario debe pagar el alquiler cada mes y mantener la vivienda en buen estado."],
}
META = {"nl": ["Hier is de vertaling van het artikel:", "Vertaling:", "Noot van de vertaler: de term is vrij vertaald."],
        "en": ["Here is the translation of the text:", "Translator's note: this term has no exact equivalent.",
               "As an AI language model, I have translated the text as follows."]}
ARTIFACTS = ("meta_text", "empty", "untranslated", "wrong_language", "truncated", "numbers", "references",
             "duplicate", "misaligned", "mojibake")
FLAG_OF = {"meta_text": "doc_meta_text", "empty": "doc_empty", "untranslated": "doc_untranslated",
           "wrong_language": "doc_wrong_language", "truncated": "doc_truncated", "numbers": "doc_numbers_changed",
           "references": "doc_references_changed", "duplicate": "doc_duplicate_translation",
           "misaligned": "doc_misaligned", "mojibake": "doc_mojibake"}


def sentence_pairs(source: str) -> list[tuple[str, str]]:
    if source == "en":
        return list(EN_NL)
    with open(SAMPLE / "articles_fr.csv", encoding="utf-8") as f:
        fr = {r["id"]: r["article"] for r in csv.DictReader(f)}
    with open(SAMPLE / "articles_nl.csv", encoding="utf-8") as f:
        nl = {r["id"]: r["article"] for r in csv.DictReader(f)}
    return [(fr[k], nl[k]) for k in sorted(fr) if k in nl]


@dataclass
class Corpus:
    table: pa.Table
    labels: list[str]


def _join(units: list[tuple[str, str]]) -> tuple[str, str]:
    return " ".join(s for s, _ in units), " ".join(t for _, t in units)


def build(source: str = "fr", docs: int = 400, rate: float = 0.04, seed: int = 0,
          artifacts: tuple[str, ...] = ARTIFACTS) -> Corpus:
    """`docs` distinct documents of 1-4 sentence pairs (a fifth of the pairs is kept apart as
    foreign text for misalignments); each artifact type is injected into ~rate x docs documents."""
    rng = random.Random(seed)
    pairs = sentence_pairs(source)
    rng.shuffle(pairs)
    held = max(4, len(pairs) // 5)
    foreign, pairs = pairs[:held], pairs[held:]
    rows, seen = [], set()
    while len(rows) < docs:  # distinct documents: a clean corpus has no duplicate
        k = rng.randint(1, 4)
        key = tuple(sorted(rng.sample(range(len(pairs)), k)))
        if key not in seen:
            seen.add(key)
            rows.append(list(_join([pairs[j] for j in key])))
    labels = [""] * docs
    per_type = max(2, int(rate * docs))
    free = list(range(docs))
    rng.shuffle(free)

    def take(condition=lambda i: True) -> int | None:
        for pos, i in enumerate(free):
            if condition(i):
                return free.pop(pos)
        return None

    for kind in artifacts:
        for _ in range(per_type):
            i = take()
            if i is None:
                break
            src, tgt = rows[i]
            if kind == "meta_text":
                rows[i][1] = rng.choice(META["nl"] + META["en"]) + "\n\n" + tgt
            elif kind == "empty":
                rows[i][1] = rng.choice(["", "   ", "....", "\n\n"])
            elif kind == "untranslated":
                rows[i][1] = src
            elif kind == "wrong_language":
                rows[i][1] = rng.choice(FOREIGN[source])
            elif kind == "truncated":
                rows[i][1] = tgt[:max(8, int(len(tgt) * rng.uniform(0.15, 0.35)))].rsplit(" ", 1)[0]
            elif kind == "numbers":
                free.append(i)
                j = take(lambda d: re.search(r"(?<![\w/])(\d+)(?![\w/])", _no_refs(rows[d][1])) is not None)
                if j is None:
                    continue
                i = j
                m = re.search(r"(?<![\w/])(\d+)(?![\w/])", _no_refs(rows[i][1]))
                rows[i][1] = rows[i][1][:m.start()] + str(int(m.group()) + 1) + rows[i][1][m.end():]
            elif kind == "references":
                free.append(i)
                j = take(lambda d: re.search(r"(?i)\b(artikel|art\.)\s*(\d+)", rows[d][1]) is not None)
                if j is None:
                    continue
                i = j
                m = re.search(r"(?i)\b(artikel|art\.)\s*(\d+)", rows[i][1])
                rows[i][1] = rows[i][1][:m.start(2)] + str(int(m.group(2)) + 1) + rows[i][1][m.end(2):]
            elif kind == "duplicate":
                j = take(lambda d: rows[d][0] != src)
                rows[i][1] = rows[j][1]
                labels[j] = "duplicate_partner"  # innocent, but only a third document could tell which is which
            elif kind == "misaligned":
                rows[i][1] = _join(rng.sample(foreign, min(len(foreign), rng.randint(1, 3))))[1]
            elif kind == "mojibake":
                free.append(i)
                i = take(lambda d: not rows[d][1].isascii())
                if i is None:
                    continue
                rows[i][1] = rows[i][1].encode("utf-8").decode("cp1252", errors="replace")
            labels[i] = kind
    n = len(rows)
    table = pa.table({"id": [f"doc{i:05d}" for i in range(n)], "source_title": [""] * n,
                      "source_text": [r[0] for r in rows], "target_title": [""] * n,
                      "target_text": [r[1] for r in rows]})
    return Corpus(table, labels)


def _no_refs(text: str) -> str:
    """The text with its article references blanked (same offsets)."""
    return re.sub(r"(?i)\b(artikel(en)?|art\.)\s*\d+\w*", lambda m: " " * len(m.group()), text)
