"""Synthetic corpora of LLM leftovers for the doc_meta_text benchmark and tests: tests/corpus_synth.py's
documents (half of them split into paragraphs, a tenth with hard negatives: legal text about
translations, remarks and languages, on both sides), with leftovers composed from parts (openers x
cores x closers, heads x bodies x wrappers x placements), in Dutch, English, French and German.

These phrasings are written apart from the detector's cue words (base/languages/*.yaml
`meta_text`): many are on purpose in no pack list ("Zoals gevraagd", "Helaas", "Quick note"), so the
figures say how the rules generalise. Labels: a LEFTOVERS kind, "quotation" (the source holds the
phrase: must not be flagged), "misaligned_same_numbers" (another document's translation with this
source's numbers), "" = clean.
"""

from __future__ import annotations

import random
import re

import pyarrow as pa
from corpus_synth import Corpus, sentence_pairs

LEFTOVERS = ("preface_nl", "preface_en", "note_bracket_nl", "note_bracket_en", "note_blank_nl", "note_blank_en",
             "remark_mid", "refusal", "chat")
TERMS = [("huurwaarborg", "rental deposit", "waarborgsom"), ("vrederechter", "justice of the peace", "kantonrechter"),
         ("opzegtermijn", "notice period", "opzeggingstermijn"), ("plaatsbeschrijving", "inventory of fixtures", "staat van de woning"),
         ("OCMW", "CPAS", "public social welfare centre"), ("verhuurder", "landlord", "eigenaar")]

EN_OPENERS = ["", "Sure! ", "Certainly. ", "Of course — ", "Okay, ", "Absolutely! ", "No problem. ", "Alright, ", "Great question. "]
EN_CORES = ["Here is the translation into Dutch", "Here's the Dutch version of the text", "Below you will find the Dutch translation",
            "The text translated into Dutch reads as follows", "This is the Dutch rendering of the provision",
            "Here you go, translated to Dutch", "Translated into Dutch", "Dutch translation", "As requested, the article in Dutch",
            "I have translated the article into Dutch", "Here is my translation of the legal text",
            "The following is a faithful Dutch translation", "Please find the translated article below",
            "Translation (French → Dutch)", "Here is the requested text in Dutch"]
NL_OPENERS = ["", "Zeker! ", "Natuurlijk. ", "Oké, ", "Goed, ", "Prima — ", "Uiteraard. "]
NL_CORES = ["Hier is de vertaling", "Hieronder staat de Nederlandse versie", "Vertaald naar het Nederlands", "Nederlandse vertaling",
            "De vertaling luidt als volgt", "Zoals gevraagd, de tekst in het Nederlands", "Dit is de vertaalde tekst",
            "Hier komt de vertaling van het artikel", "Hieronder vind je de vertaling", "De Nederlandse tekst van het artikel",
            "Vertaling van de bepaling"]
CLOSERS = [":", ":\n", ".\n\n", ":\n\n", " —\n", "!\n\n"]

EN_HEADS = ["Note: ", "Translator's note: ", "NB: ", "N.B. ", "Please note: ", "Remark: ", "Translation note – ",
            "Comment: ", "Quick note: ", "Note to the reader: ", "Side note: ", ""]
EN_BODIES = ["the term '{t}' has no exact Dutch equivalent and was rendered as '{a}'",
             "I kept the article numbering of the original",
             "'{t}' could also be translated as '{a}', depending on the context",
             "the legal terminology follows Belgian usage",
             "some wording was adapted for readability",
             "the source was ambiguous here, so I chose the most likely reading",
             "dates are written in the Dutch format",
             "this is a fairly literal translation; a lawyer should review it",
             "'{a}' is the usual English name for '{t}'",
             "I was unsure about the meaning of '{t}' in this sentence",
             "the original French uses a longer sentence, which I split in two"]
NL_HEADS = ["Opmerking: ", "Noot van de vertaler: ", "NB: ", "Let op: ", "Opm.: ", "Vertaalnoot: ", "Toelichting: ",
            "Kanttekening: ", "Ter info: ", "Noot: ", ""]
NL_BODIES = ["de term '{t}' heeft geen exact equivalent en is weergegeven als '{b}'",
             "ik heb de nummering van het origineel behouden",
             "'{t}' kan ook vertaald worden als '{b}'",
             "de juridische terminologie volgt het Belgische taalgebruik",
             "sommige formuleringen zijn aangepast voor de leesbaarheid",
             "de brontekst was hier dubbelzinnig, ik heb de meest waarschijnlijke lezing gekozen",
             "deze vertaling is vrij letterlijk",
             "'{b}' is in Nederland gangbaarder dan '{t}'",
             "de Franse zin was erg lang en is in twee zinnen gesplitst"]
WRAPPERS = ["({})", "[{}]", "*{}*", "{}", "— {}", "({}.)", "[{}.]", "_{}_"]

REFUSALS = ["I'm sorry, but I can't help with that request.",
            "Sorry — I am unable to translate this document because it appears to contain personal data.",
            "I apologise, but I cannot provide a translation of this text.",
            "Unfortunately, I'm not able to complete this translation.",
            "I can't assist with translating legal documents of this kind.",
            "Het spijt me, maar ik kan deze tekst niet vertalen.",
            "Sorry, dit verzoek kan ik niet uitvoeren.",
            "Helaas ben ik niet in staat deze vertaling te leveren.",
            "Excuses, ik kan je hier niet mee helpen.",
            "Je suis désolé, mais je ne peux pas traduire ce document.",
            "Es tut mir leid, aber ich kann diesen Text nicht übersetzen."]
CHATS = ["I hope this helps!", "Let me know if you would like any changes.", "Feel free to ask if anything is unclear.",
         "If you need the other articles translated as well, just let me know.",
         "Would you like me to translate the next section too?", "Happy to adjust the tone if needed.",
         "Ik hoop dat dit je verder helpt.", "Laat gerust iets weten als er iets aangepast moet worden.",
         "Mocht je nog vragen hebben, vraag het gerust.", "Wil je dat ik ook de volgende artikelen vertaal?",
         "Als u nog iets anders wilt laten vertalen, laat het me weten.", "N'hésitez pas à me demander d'autres traductions."]

HARD = {  # legal text that talks about translations, remarks, languages and notes, on both sides
    "fr": [("La traduction des actes est assurée par un traducteur juré (article 5).",
            "De vertaling van de akten wordt verzorgd door een beëdigd vertaler (artikel 5)."),
           ("Le demandeur peut formuler ses remarques par écrit dans les quinze jours.",
            "De aanvrager kan zijn opmerkingen binnen vijftien dagen schriftelijk formuleren."),
           ("Les documents rédigés en allemand sont accompagnés d'une traduction en néerlandais ou en français.",
            "Documenten in het Duits gaan vergezeld van een vertaling in het Nederlands of het Frans."),
           ("Le présent arrêté entre en vigueur le 1er janvier 2020 (M.B. 12.12.2019).",
            "Dit besluit treedt in werking op 1 januari 2020 (B.S. 12.12.2019)."),
           ("La langue de la procédure est le français, le néerlandais ou l'allemand.",
            "De taal van de rechtspleging is het Frans, het Nederlands of het Duits."),
           ("Le Roi fixe les modalités de la traduction des décisions.",
            "De Koning bepaalt de nadere regels voor de vertaling van de beslissingen.")],
    "en": [("The translation of the deed is made by a sworn translator (Article 5).",
            "De vertaling van de akte wordt gemaakt door een beëdigd vertaler (artikel 5)."),
           ("The applicant may submit written remarks within fifteen days.",
            "De aanvrager kan binnen vijftien dagen schriftelijke opmerkingen indienen."),
           ("Documents in German must be accompanied by a translation into Dutch or French.",
            "Documenten in het Duits moeten vergezeld gaan van een vertaling in het Nederlands of het Frans."),
           ("This decree enters into force on 1 January 2020 (Official Gazette 12.12.2019).",
            "Dit decreet treedt in werking op 1 januari 2020 (Belgisch Staatsblad 12.12.2019).")],
}
QUOTATIONS = {  # the source holds the phrase: a faithful translation keeps or translates it
    "fr": [("Le formulaire porte la mention « Note : à compléter en lettres capitales ».",
            "Het formulier draagt de vermelding 'Opmerking: in hoofdletters in te vullen'."),
           ("(N.B. : cette disposition s'applique aux baux conclus après le 1er janvier 2019.)",
            "(N.B.: deze bepaling is van toepassing op huurovereenkomsten gesloten na 1 januari 2019.)"),
           ("Le courriel type se termine par la phrase « I hope this helps ».",
            "De modelmail eindigt met de zin 'I hope this helps'."),
           ("Le message « Sorry, we cannot process your request » s'affiche alors à l'écran.",
            "Het bericht 'Sorry, we cannot process your request' verschijnt dan op het scherm."),
           ("Remarque : le délai est suspendu pendant les vacances judiciaires.",
            "Opmerking: de termijn wordt geschorst tijdens de gerechtelijke vakantie."),
           ("Voici la traduction officielle du texte, établie par le service compétent :",
            "Hier is de officiële vertaling van de tekst, opgesteld door de bevoegde dienst:")],
    "en": [("Note: this provision applies from 1 January 2019.",
            "Opmerking: deze bepaling is van toepassing vanaf 1 januari 2019."),
           ("The standard letter ends with the words 'Let me know if you have any questions'.",
            "De modelbrief eindigt met de woorden 'Let me know if you have any questions'."),
           ("(N.B. The time limit is suspended during the judicial holidays.)",
            "(N.B. De termijn wordt geschorst tijdens de gerechtelijke vakantie.)")],
}


def _note(rng: random.Random, english: bool) -> str:
    term = rng.choice(TERMS)
    head, body = (rng.choice(EN_HEADS), rng.choice(EN_BODIES)) if english else (rng.choice(NL_HEADS), rng.choice(NL_BODIES))
    if not head and not english:
        body = body[0].upper() + body[1:]
    text = head + body.format(t=term[0], a=term[1], b=term[2])
    text = text[0].upper() + text[1:] if head == "" else text
    return text


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-ZÀ-Þ])", text) if s]


def leftover(kind: str, target: str, rng: random.Random) -> str:
    """`target` with a leftover of `kind` composed from the parts above."""
    if kind.startswith("preface"):
        opener, core = ((rng.choice(EN_OPENERS), rng.choice(EN_CORES)) if kind.endswith("en")
                        else (rng.choice(NL_OPENERS), rng.choice(NL_CORES)))
        return opener + core + rng.choice(CLOSERS) + ("" if rng.random() < 0.7 else " ") + target
    if kind.startswith("note"):
        note = rng.choice(WRAPPERS[:2] + WRAPPERS[5:7] if "bracket" in kind else WRAPPERS).format(_note(rng, kind.endswith("en")))
        if "bracket" in kind:
            return target + rng.choice([" ", "\n", "\n\n"]) + note
        return target + rng.choice(["\n\n", "\n\n", "\n \n", "\n\n---\n"]) + note
    if kind == "remark_mid":
        parts = target.split("\n\n") if "\n\n" in target else _sentences(target)
        k = rng.randint(1, max(1, len(parts) - 1)) if len(parts) > 1 else 1
        note = rng.choice(WRAPPERS).format(_note(rng, rng.random() < 0.5))
        joiner = "\n\n" if "\n\n" in target or rng.random() < 0.5 else " "
        return joiner.join(parts[:k] + [note] + parts[k:])
    if kind == "refusal":
        refusal = rng.choice(REFUSALS)
        if rng.random() < 0.5:
            return refusal
        cut = _sentences(target)
        return " ".join(cut[:max(1, len(cut) // 2)]) + rng.choice(["\n\n", " "]) + refusal
    if kind == "chat":
        chat = " ".join(rng.sample(CHATS, rng.randint(1, 2)))
        return target + rng.choice(["\n\n", " ", "\n"]) + chat
    raise ValueError(kind)


def build(source: str = "fr", docs: int = 1000, rate: float = 0.03, seed: int = 0,
          kinds: tuple[str, ...] = LEFTOVERS + ("quotation",), misaligned: float = 0.0) -> Corpus:
    """`docs` documents of 1-4 sentence pairs, `rate` x docs of each kind; `misaligned`: the share of
    documents whose translation is another document's with this source's numbers in its digits."""
    rng = random.Random(seed)
    pairs = sentence_pairs(source)
    hard, quotes = HARD[source], QUOTATIONS[source]
    rows, seen = [], set()
    while len(rows) < docs:
        k = rng.randint(1, 4)
        key = tuple(sorted(rng.sample(range(len(pairs)), k)))
        if key in seen:
            continue
        seen.add(key)
        units = [pairs[j] for j in key]
        if rng.random() < 0.1:
            units.insert(rng.randint(0, len(units)), rng.choice(hard))
        joiner = "\n\n" if rng.random() < 0.5 and len(units) > 1 else " "
        rows.append([joiner.join(s for s, _ in units), joiner.join(t for _, t in units)])
    labels = [""] * docs
    order = list(range(docs))
    rng.shuffle(order)
    per_kind = max(2, int(rate * docs))
    for kind in kinds:
        for _ in range(per_kind):
            i = order.pop()
            if kind == "quotation":
                s, t = rng.choice(quotes)
                joiner = rng.choice([" ", "\n\n"])
                at_end = rng.random() < 0.5
                rows[i] = [rows[i][0] + joiner + s, rows[i][1] + joiner + t] if at_end else \
                    [s + joiner + rows[i][0], t + joiner + rows[i][1]]
            else:
                rows[i][1] = leftover(kind, rows[i][1], rng)
            labels[i] = kind
    for _ in range(int(misaligned * docs)):
        i = order.pop()
        count = len(re.findall(r"\d+", rows[i][0]))
        donors = [j for j in order if len(re.findall(r"\d+", rows[j][1])) == count]
        if not donors:
            continue
        labels[i] = "misaligned_same_numbers"
        rows[i][1] = same_numbers(rows[rng.choice(donors)][1], rows[i][0])
    n = len(rows)
    table = pa.table({"id": [f"doc{i:05d}" for i in range(n)], "source_title": [""] * n,
                      "source_text": [r[0] for r in rows], "target_title": [""] * n,
                      "target_text": [r[1] for r in rows]})
    return Corpus(table, labels)


def same_numbers(target: str, source: str) -> str:
    """`target` (with as many digit runs as `source`) with `source`'s numbers, in order: the numbers
    check sees the same numbers on both sides."""
    numbers = iter(re.findall(r"\d+", source))
    return re.sub(r"\d+", lambda m: next(numbers), target)
