"""Signal 4: classic translation-QA consistency checks between a French question and its Dutch version.

Each check compares something that must survive translation (numbers, negation, regions,
institutions, party roles, sentences, the question mark) and says what changed. They are cheap,
explainable and complementary to the glossary: a swapped 'huurder'/'verhuurder' or a lost 'niet'
keeps every legal term right but inverts the question. Documented in docs/glossary.md.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
import pandas as pd

from .findings import Finding
from .termmatch import LEMMAS, TermMatcher, Tokens, fold, longest_first, tokenize

FLAGS: dict[str, str] = {
    "number_mismatch": "A number, amount, date, age, duration or percentage differs between French and Dutch "
                       "(digits, number words and ordinals are compared as values: '3 mois' = 'drie maanden').",
    "negation_mismatch": "One side is negated and the other is not (ne…pas/jamais/aucun/sans/ni vs "
                         "niet/geen/nooit/zonder/noch); 'ne … que' (= only) is not a negation.",
    "region_mismatch": "A Belgian region or city (Wallonie, Bruxelles, Flandre, Belgique) is named on one side "
                       "but not on the other.",
    "institution_mismatch": "A public body (CPAS/OCMW, ONEM/RVA, SPF/FOD, Office des étrangers/DVZ, "
                            "INAMI/RIZIV, mutuelle/ziekenfonds, commune/gemeente, …) is named on one side only.",
    "role_mismatch": "A party role was swapped for its counterpart (tenant/landlord, employer/employee, "
                     "creditor/debtor, buyer/seller, …): the Dutch has more of one role and fewer of the other.",
    "omission": "The Dutch is much shorter than the French relative to the batch (robust z-score of the log "
                "length ratio) or has fewer sentences while also being shorter than usual.",
    "addition": "The Dutch is much longer than the French relative to the batch, or has more sentences while "
                "also being longer than usual.",
    "untranslated": "French was left in the Dutch: language id says French, or French-only function words "
                    "appear outside quotes, parentheses and proper names.",
    "identical_to_source": "The Dutch text is the French text (after case/accent folding).",
    "not_a_question": "The French is a question (ends with '?' or starts with an interrogative) but the Dutch "
                      "is a statement.",
}

# ------------------------------------------------------------------ vocabularies (also used by the selftest)

REGIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # concept: (French forms, Dutch forms)
    "wallonia": (("wallonie", "wallon", "wallonne", "région wallonne"), ("wallonië", "waals", "waalse", "waals gewest")),
    "brussels": (("bruxelles", "bruxelles-capitale", "bruxellois", "bruxelloise"),
                 ("brussel", "brussels", "brusselse", "brussels hoofdstedelijk gewest", "hoofdstedelijk")),
    "flanders": (("flandre", "flandres", "région flamande"), ("vlaanderen", "vlaams gewest", "vlaamse gewest")),
    "belgium": (("belgique",), ("belgië",)),
}
REGIONS_NL: list[str] = ["Wallonië", "Brussel", "Vlaanderen"]

INSTITUTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cpas": (("cpas", "centre public d'action sociale"), ("ocmw", "openbaar centrum voor maatschappelijk welzijn")),
    "onem": (("onem", "office national de l'emploi"), ("rva", "rijksdienst voor arbeidsvoorziening")),
    "spf": (("spf", "service public fédéral"), ("fod", "federale overheidsdienst")),
    "office_etrangers": (("office des étrangers",), ("dienst vreemdelingenzaken", "dvz")),
    "inami": (("inami",), ("riziv", "rijksinstituut voor ziekte- en invaliditeitsverzekering")),
    "mutuelle": (("mutuelle", "mutualité", "mutuelles", "mutualités"), ("ziekenfonds", "mutualiteit", "ziekenfondsen")),
    "commune": (("administration communale", "maison communale", "commune", "communal", "communale"),
                ("gemeente", "gemeentebestuur", "gemeentehuis", "gemeentelijk", "gemeentelijke")),
    "secal": (("secal",), ("davo", "dienst voor alimentatievorderingen")),
    "cgra": (("cgra",), ("cgvs",)),
    "onss": (("onss",), ("rsz",)),
    "parquet": (("parquet",), ("parket",)),
    "police": (("police",), ("politie",)),
    "police_court": (("tribunal de police", "juge de police"), ("politierechtbank", "politierechter")),
}
INSTITUTIONS_NL: list[tuple[str, str]] = [
    ("OCMW", "RVA"), ("RVA", "RIZIV"), ("ziekenfonds", "OCMW"), ("gemeente", "OCMW"),
    ("Dienst Vreemdelingenzaken", "gemeente"), ("RIZIV", "RVA"), ("parket", "politie"),
]

ROLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "tenant": (("locataire", "preneur", "colocataire", "sous-locataire"), ("huurder", "medehuurder", "onderhuurder")),
    "landlord": (("bailleur", "bailleresse", "propriétaire"), ("verhuurder", "eigenaar", "eigenares")),
    "employer": (("employeur", "patron"), ("werkgever",)),
    "employee": (("travailleur", "travailleuse", "salarié", "salariée", "employé", "employée", "ouvrier", "ouvrière"),
                 ("werknemer", "arbeider", "bediende")),
    "creditor": (("créancier", "créancière"), ("schuldeiser",)),
    "debtor": (("débiteur", "débitrice"), ("schuldenaar", "schuldenares", "debiteur")),
    "buyer": (("acheteur", "acquéreur", "acheteuse"), ("koper",)),
    "seller": (("vendeur", "vendeuse"), ("verkoper",)),
    "insurer": (("assureur",), ("verzekeraar", "verzekeringsmaatschappij")),
    "insured": (("assuré", "assurée"), ("verzekerde", "verzekeringnemer")),
    "father": (("père",), ("vader",)),
    "mother": (("mère", "maman"), ("moeder", "mama")),
    "victim": (("victime",), ("slachtoffer",)),
    "offender": (("auteur",), ("dader",)),
}
ROLE_COUNTERPARTS: list[tuple[str, str]] = [
    ("tenant", "landlord"), ("employer", "employee"), ("creditor", "debtor"), ("buyer", "seller"),
    ("insurer", "insured"), ("father", "mother"), ("victim", "offender"),
]
ROLE_PAIRS_NL: list[tuple[str, str]] = [
    ("huurder", "verhuurder"), ("werkgever", "werknemer"), ("schuldeiser", "schuldenaar"),
    ("koper", "verkoper"), ("verzekeraar", "verzekerde"), ("vader", "moeder"), ("slachtoffer", "dader"),
]

NEGATORS_FR = ("pas", "jamais", "aucun", "aucune", "sans", "ni", "rien", "nullement", "guère")
NEGATORS_NL: list[str] = ["niet", "geen", "nooit", "zonder", "noch", "niets", "niemand", "nergens"]
_COORDINATION_WINDOW = 6  # a "ni"/"noch" this close after another negator continues it
_NE_COMPLEMENTS = ("plus", "personne")  # negators only after ne/n' in the same clause ("ne … plus")
# lexicalised: "sans-abri" = dakloos, "classé sans suite" = geseponeerd, "sans emploi" = werkloos
_NOT_NEGATION_FR = {("sans", "abri"), ("sans", "suite"), ("sans", "emploi"), ("sans", "travail")}

# French function words that are not also Dutch words (so 'de', 'en', 'met', 'die' are not here)
# ('je', 'pas', 'mes', 'les', 'ton', 'ma' are Dutch words too; 'des' stays in "procureur des Konings")
FRENCH_ONLY_WORDS = frozenset(
    "le la du une est sont et pour dans avec qui que quel quelle quels quelles sur au aux mon "
    "ta tes son sa ses notre nos votre vos leur leurs tu il elle nous vous ils elles ce cette ces "
    "ne peut puis dois doit faut quand comment pourquoi parce lorsque chez entre sous avoir être fait "
    "suis ai mais ou donc car".split())
_LANGS = ["fr", "nl", "en", "de"]
TEXT_FRENCH_PROB = 0.9
"""py3langid P(French) of the whole Dutch text above which it is called untranslated."""
WINDOW_FRENCH_PROB = 0.75
"""... or of the 3-word window starting at a French-only function word ("pour motif grave")."""

# ------------------------------------------------------------------ numbers

_FR_UNITS = ["zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix", "onze",
             "douze", "treize", "quatorze", "quinze", "seize", "dix-sept", "dix-huit", "dix-neuf"]
_FR_TENS = {20: "vingt", 30: "trente", 40: "quarante", 50: "cinquante", 60: "soixante"}
_NL_UNITS = ["nul", "een", "twee", "drie", "vier", "vijf", "zes", "zeven", "acht", "negen", "tien", "elf",
             "twaalf", "dertien", "veertien", "vijftien", "zestien", "zeventien", "achttien", "negentien"]
_NL_TENS = {20: "twintig", 30: "dertig", 40: "veertig", 50: "vijftig", 60: "zestig", 70: "zeventig",
            80: "tachtig", 90: "negentig"}


def _french_number_words() -> dict[str, float]:
    words = {w: i for i, w in enumerate(_FR_UNITS)}
    for tens, word in _FR_TENS.items():
        words[word] = tens
        for unit in range(1, 10):
            words[f"{word}{'-et-' if unit == 1 else '-'}{_FR_UNITS[unit]}"] = tens + unit
    for base, word in ((60, "soixante"), (80, "quatre-vingt")):
        for unit in range(0 if base == 80 else 10, 20):
            sep = "-et-" if unit in (1, 11) and base == 60 else "-"
            words[f"{word}{sep}{_FR_UNITS[unit]}" if unit else "quatre-vingts"] = base + unit
    words.update({"cent": 100, "mille": 1000, "million": 1e6, "millions": 1e6, "premier": 1, "première": 1,
                  "second": 2, "seconde": 2, "deuxième": 2, "troisième": 3, "quatrième": 4, "cinquième": 5,
                  "dixième": 10, "demi": 0.5, "moitié": 0.5, "quart": 0.25})
    return {fold(k).replace("-", " "): v for k, v in words.items()}


def _dutch_number_words() -> dict[str, float]:
    words = {w: i for i, w in enumerate(_NL_UNITS)}
    for tens, word in _NL_TENS.items():
        words[word] = tens
        for unit in range(1, 10):
            link = "ën" if _NL_UNITS[unit].endswith("e") else "en"
            words[f"{_NL_UNITS[unit]}{link}{word}"] = tens + unit
    words.update({"honderd": 100, "duizend": 1000, "miljoen": 1e6, "eerste": 1, "tweede": 2, "derde": 3,
                  "vierde": 4, "vijfde": 5, "tiende": 10, "beide": 2, "beiden": 2, "tweeën": 2, "half": 0.5, "halve": 0.5, "helft": 0.5, "kwart": 0.25,
                  "één": 1})
    return {fold(k): v for k, v in words.items()}


NUMBER_WORDS = {"fr": _french_number_words(), "nl": _dutch_number_words()}
# 'un'/'une'/'een' are articles far more often than numbers: 1 is only compared when written as a digit
_ARTICLE_ONE = {"fr": {"un", "une"}, "nl": {"een"}}
_NL_COMPOUND_SUFFIXES = ("lijns", "jarige", "jarig", "maandelijks", "daags", "daagse", "maands", "voudig", "wekelijks",
                         "tal", "jaar", "jaren", "maanden", "dagen", "weken")
_DIGITS = re.compile(r"(?<![\w.,])(\d{1,3}(?:[ .\u00a0\u202f]\d{3})+|\d+)(?:,(\d+))?(?:\s?(?:er|ère|e|ème|de|ste|ste)\b)?")


_FIRST_NUMBER_WORDS = {lang: {phrase.split()[0] for phrase in words} for lang, words in NUMBER_WORDS.items()}
_NL_NUMBER_COMPOUND = re.compile(
    "(" + "|".join(sorted(map(re.escape, NUMBER_WORDS["nl"]), key=len, reverse=True)) + ")"
    "(" + "|".join(_NL_COMPOUND_SUFFIXES) + ")")


def _number_values(tokens: Tokens) -> Counter:
    """Values of digits, number words and ordinals ('1.500' = '1 500' = '1500'; 'drie' = 3;
    '4 ans et demi' = 'vierenhalf jaar' = 4.5)."""
    lang = tokens.lang
    found: list[tuple[int, float]] = []  # (character offset, value), in text order
    for m in _DIGITS.finditer(tokens.text):
        integer = re.sub(r"\D", "", m.group(1))
        found.append((m.start(), float(integer + ("." + m.group(2) if m.group(2) else ""))))
    words, first_words, articles = NUMBER_WORDS[lang], _FIRST_NUMBER_WORDS[lang], _ARTICLE_ONE[lang]
    surfaces, spans = tokens.surfaces, tokens.spans
    i = 0
    while i < len(surfaces):
        w, start = surfaces[i], spans[i][0]
        i += 1
        if w in articles or (w == "acht" and surfaces[i - 2:i - 1] == ("in",)):  # "in acht nemen" = observe
            continue
        if w in first_words:
            # longest French multi-word number first ("dix huit", "quatre vingt dix")
            for span in (3, 2, 1):
                phrase = " ".join(surfaces[i - 1:i - 1 + span])
                if phrase in words and len(surfaces[i - 1:i - 1 + span]) == span:
                    found.append((start, words[phrase]))
                    i += span - 1
                    break
        elif lang == "nl" and (m := _NL_NUMBER_COMPOUND.fullmatch(w)):
            found.append((start, words[m.group(1)]))  # "negenjarige" = 9, "tweedelijns" = 2
        elif lang == "nl" and w.endswith("enhalf") and w[:-6] in words:
            found.append((start, words[w[:-6]] + 0.5))  # "vierenhalf" = 4.5
    found.sort()
    values: Counter = Counter()
    for k, (start, value) in enumerate(found):
        # "4 ans et demi": the half belongs to the number before it
        if value == 0.5 and k and re.search(r"\bet\s*$|\ben\s*$", tokens.text[:start]) and values[found[k - 1][1]]:
            values[found[k - 1][1]] -= 1
            values[found[k - 1][1] + 0.5] += 1
            continue
        values[value] += 1
    return +values


# ------------------------------------------------------------------ per-text features, computed once


@dataclass(frozen=True)
class _Side:
    tokens: Tokens
    numbers: Counter
    negations: int
    lexical_negations: int
    regions: Counter
    institutions: Counter
    roles: Counter
    sentences: int
    is_question: bool


_SENTENCE_END = re.compile(r"[.!?]+(?=\s+[A-ZÀ-ÖØ-Þ«\"(]|\s*$)")
_ABBREVIATIONS = re.compile(r"\b(?:art|e\.a|p\.ex|ex|cf|etc|n°|nr|bv|m\.a\.w|o\.a|blz|p|al|enz|dhr|mr|mme|me)\.", re.I)
_FR_INTERROGATIVE = {"quel", "quelle", "quels", "quelles", "comment", "pourquoi", "qui", "que", "qu", "quand", "ou",
                     "combien", "est", "lequel", "laquelle", "lesquels", "a", "puis", "dois", "peut", "faut"}
_NL_INTERROGATIVE = {"wat", "wie", "hoe", "wanneer", "waar", "waarom", "welk", "welke", "hoeveel", "waarvoor",
                     "kan", "mag", "moet", "ben", "is", "zijn", "heb", "heeft", "hebben", "kunnen", "moeten",
                     "mogen", "wordt", "worden", "zal", "zullen", "krijg", "krijgt", "bestaat", "geldt", "valt",
                     "waarop", "waarmee", "vanaf", "tot", "wiens", "welk"}


def _count_sentences(text: str) -> int:
    masked = _ABBREVIATIONS.sub(lambda m: m.group().replace(".", "_"), text.strip())
    return max(1, len(_SENTENCE_END.findall(masked)) + (0 if re.search(r"[.!?]\W*$", masked) else 1))


def _is_question(tokens: Tokens, lang: str) -> bool:
    text = tokens.text.strip()
    if "?" in text:
        return True
    first = tokens.surfaces[:1]
    if lang == "fr":
        # "Puis-je …", "Quel …" without the question mark still asks something
        return bool(first) and (first[0] in _FR_INTERROGATIVE or bool(re.match(r"^\w+-(?:je|tu|il|elle|on|nous|vous|ils|elles)\b", text, re.I)))
    return bool(first) and first[0] in _NL_INTERROGATIVE


def _count_negations(tokens: Tokens) -> tuple[int, int]:
    """(clause negations, lexical negations): "ne … pas", "niet" vs "non officiel", "niet-begeleid".

    A lexical negation negates one word and is rendered either way ("non légal" -> "niet wettelijk"
    or "niet-wettelijk"), so it only counts to tell whether both sides negate something.
    """
    s, text = tokens.surfaces, tokens.text

    def hyphenated(i: int) -> bool:
        end = tokens.spans[i][1]
        return text[end:end + 1] == "-"

    def standalone(i: int) -> bool:  # "… ou non ?" vs "bail non officiel"
        return i + 1 == len(s) or not re.match(r"\s*\w", text[tokens.spans[i][1]:])

    def continues(i: int, negators) -> bool:  # "sans préavis ni indemnité", "noch ik noch de moeder"
        return any(w in negators for w in s[max(0, i - _COORDINATION_WINDOW):i])

    clause = lexical = 0
    if tokens.lang == "nl":
        for i, w in enumerate(s):
            if w in NEGATORS_NL:
                if w == "niet" and hyphenated(i):
                    lexical += 1
                elif not (w == "noch" and continues(i, NEGATORS_NL)):
                    clause += 1
        return clause, lexical
    ne_open = False
    for i, w in enumerate(s):
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if w in ("ne", "n"):
            ne_open = True
        elif w == "pas" and (s[i - 1:i] == ("faux",) or s[i + 1:i + 3] == ("a", "pas") or s[max(i - 2, 0):i] == ("pas", "a")):
            continue  # "faux pas", "pas à pas"
        elif w in NEGATORS_FR and (w, nxt) not in _NOT_NEGATION_FR:
            if not (w == "ni" and continues(i, NEGATORS_FR)):
                clause += 1
            ne_open = False
        elif w in _NE_COMPLEMENTS and ne_open:
            clause += 1
            ne_open = False
        elif w == "non":
            if standalone(i):
                clause += 1
            else:
                lexical += 1
        elif w == "que" and ne_open:  # "ne … que" = only: a restriction, not a negation
            ne_open = False
    return clause, lexical


class _Concepts:
    """Counts occurrences of named concepts (regions, institutions, roles) on either side."""

    def __init__(self, table: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]):
        self.fr = TermMatcher(((k, t) for k, (fr, _) in table.items() for t in fr), "fr")
        self.nl = TermMatcher(((k, t) for k, (_, nl) in table.items() for t in nl), "nl", "head")

    def count(self, tokens: Tokens) -> Counter:
        matcher = self.fr if tokens.lang == "fr" else self.nl
        return Counter(m.key for m in longest_first(matcher.find(tokens)))


_DETERMINERS_BEFORE_COMMUNE = {"la", "une", "ma", "sa", "ta", "votre", "notre", "leur", "cette", "chaque", "l"}


@lru_cache(maxsize=1)
def _concepts() -> tuple[_Concepts, _Concepts, _Concepts]:
    return _Concepts(REGIONS), _Concepts(INSTITUTIONS), _Concepts(ROLES)


def _institutions(tokens: Tokens, concepts: _Concepts) -> Counter:
    counts = concepts.count(tokens)
    if tokens.lang == "fr" and counts.get("commune"):
        # 'commune' is also the adjective "commun(e)" ("la vie commune"): count the noun only
        s = tokens.surfaces
        adjective = sum(1 for i, w in enumerate(s) if w == "commune" and (i == 0 or s[i - 1] not in _DETERMINERS_BEFORE_COMMUNE))
        counts["commune"] -= adjective
        if counts["commune"] <= 0:
            del counts["commune"]
    return counts


def _side(text: str, lang: str) -> _Side:
    tokens = tokenize(text, lang)
    regions, institutions, roles = _concepts()
    negations = _count_negations(tokens)
    return _Side(
        tokens=tokens,
        numbers=_number_values(tokens),
        negations=negations[0],
        lexical_negations=negations[1],
        regions=regions.count(tokens),
        institutions=_institutions(tokens, institutions),
        roles=roles.count(tokens),
        sentences=_count_sentences(text),
        is_question=_is_question(tokens, lang),
    )


# ------------------------------------------------------------------ language id

@lru_cache(maxsize=1)
def _language_identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(_LANGS)
    return identifier


DUTCH_FUNCTION_WORDS = frozenset(
    "de het een van en ik is in op te niet mijn kan wat hoe wie welke als of er voor met aan bij naar dat die "
    "zijn ben heb moet mag wordt om geen ook nog door zal ze we hij zij u".split())


def _french_probability(nl_text: str, tokens: Tokens, french_words: list) -> float:
    """py3langid's P(French) for the Dutch text; only asked when there is some sign of French.

    Loading the language-id model costs ~1 s, and a text with Dutch function words and no
    French-only word cannot be mostly French, so it gets 0 without asking.
    """
    if not nl_text.strip() or (not french_words and DUTCH_FUNCTION_WORDS & set(tokens.surfaces)):
        return 0.0
    return dict(_language_identifier().rank(nl_text)).get("fr", 0.0)


_QUOTED = re.compile(r"«[^»]*»|\"[^\"]*\"|“[^”]*”|„[^”“]*[”“]|'[^']{3,}'|\([^)]*\)|\[[^\]]*\]")


def _french_words_outside_names(nl_text: str) -> list[tuple[str, str]]:
    """French-only function words in the Dutch, ignoring quotes, parentheses and Capitalised names:
    (word, the 3-word window it starts) pairs."""
    stripped = _QUOTED.sub(" ", nl_text)
    words = re.findall(r"[^\W\d_]+", stripped.replace("\u2019", "'"))
    found = []
    for i, w in enumerate(words):
        if fold(w) not in FRENCH_ONLY_WORDS:
            continue
        inside_name = 0 < i < len(words) - 1 and words[i - 1][:1].isupper() and words[i + 1][:1].isupper()
        capitalised_mid_sentence = w[:1].isupper() and i > 0  # "La Louvière", "Le Forem"
        if not inside_name and not capitalised_mid_sentence:
            found.append((w, " ".join(words[i:i + 3])))
    return found


def _untranslated_windows(french_words: list[tuple[str, str]]) -> list[str]:
    """Windows that language id reads as French: "pour motif grave" left in a Dutch sentence."""
    if not french_words:
        return []
    identifier = _language_identifier()
    return [window for _, window in french_words
            if len(window.split()) > 1 and dict(identifier.rank(window)).get("fr", 0.0) >= WINDOW_FRENCH_PROB]


# ------------------------------------------------------------------ length statistics

# Median and robust scale (1.4826·MAD) of log(len_nl/len_fr) in characters, measured on the bBSARD
# train split; used when a batch is too small (< MIN_BATCH_FOR_STATS pairs) to estimate its own.
REFERENCE_LOG_RATIO = (0.02, 0.12)
MIN_BATCH_FOR_STATS = 50
LENGTH_Z = 3.5
MIN_CHARS = 40
"""A length outlier must also miss (or add) at least this many characters: "Qu'est-ce que la traite
d'êtres humains ?" -> "Wat is mensenhandel?" is half as long and still complete."""
OMISSION_SENTENCE_Z = 0.0
"""Fewer Dutch sentences flags an omission when the Dutch is also shorter than the batch median
(a dropped sentence shortens it; two sentences merged into one keep the usual length)."""
ADDITION_SENTENCE_Z = 1.5
"""More Dutch sentences flags an addition only when clearly longer (GPT-4o often splits a sentence)."""


def _length_stats(log_ratio: np.ndarray) -> tuple[float, float]:
    if len(log_ratio) < MIN_BATCH_FOR_STATS:
        return REFERENCE_LOG_RATIO
    median = float(np.median(log_ratio))
    scale = float(1.4826 * np.median(np.abs(log_ratio - median)))
    return median, max(scale, 0.05)


# ------------------------------------------------------------------ the batch check

COLUMNS = ["qa_numbers_fr", "qa_numbers_nl", "qa_numbers_differ", "qa_neg_fr", "qa_neg_nl", "qa_regions_differ",
           "qa_institutions_differ", "qa_roles_swapped", "qa_sentences_fr", "qa_sentences_nl", "qa_len_ratio",
           "qa_len_z", "qa_nl_french_prob", "qa_french_words", "qa_identical", "qa_question_lost"]


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _concept_diff(fr: Counter, nl: Counter, table, flag: str) -> list[Finding]:
    out = []
    for key in sorted(set(fr) | set(nl)):
        if (fr[key] > 0) != (nl[key] > 0):
            fr_name, nl_name = table[key][0][0], table[key][1][0]
            where = f"FR names '{fr_name}' but NL has no '{nl_name}'" if fr[key] else \
                f"NL names '{nl_name}' but FR has no '{fr_name}'"
            out.append(Finding(flag, where))
    return out


def check_pairs(pairs: Sequence[tuple[str, str]]) -> tuple[list[list[Finding]], pd.DataFrame]:
    """Run every QA check on (French, Dutch) pairs: one findings list per pair + `qa_*` columns."""
    sides = [(_side(fr, "fr"), _side(nl, "nl")) for fr, nl in pairs]
    n = len(sides)
    fr_len = np.array([max(len(fr.strip()), 1) for fr, _ in pairs], dtype=float)
    nl_len = np.array([max(len(nl.strip()), 1) for _, nl in pairs], dtype=float)
    log_ratio = np.log(nl_len / fr_len) if n else np.zeros(0)
    median, scale = _length_stats(log_ratio)
    z = (log_ratio - median) / scale
    findings: list[list[Finding]] = []
    rows = []
    for k, ((fr_text, nl_text), (fr, nl)) in enumerate(zip(pairs, sides)):
        out: list[Finding] = []
        # numbers
        missing = fr.numbers - nl.numbers
        added = nl.numbers - fr.numbers
        missing = Counter({v: c for v, c in missing.items() if v != 1})  # "un"/"een" vs "1"
        added = Counter({v: c for v, c in added.items() if v != 1})
        if missing or added:
            parts = []
            if missing:
                parts.append("FR has " + ", ".join(_fmt(v) for v in sorted(missing)) + " not in NL")
            if added:
                parts.append("NL has " + ", ".join(_fmt(v) for v in sorted(added)) + " not in FR")
            out.append(Finding("number_mismatch", "; ".join(parts)))
        # negation
        fr_any, nl_any = fr.negations + fr.lexical_negations, nl.negations + nl.lexical_negations
        if ((fr.negations > 0) != (nl.negations > 0) and (fr_any > 0) != (nl_any > 0)) or (fr.negations != nl.negations and fr_any != nl_any):
            out.append(Finding("negation_mismatch", f"FR has {fr.negations} negation(s), NL has {nl.negations}"))
        out += _concept_diff(fr.regions, nl.regions, REGIONS, "region_mismatch")
        out += _concept_diff(fr.institutions, nl.institutions, INSTITUTIONS, "institution_mismatch")
        swapped = 0
        for a, b in ROLE_COUNTERPARTS:
            for x, y in ((a, b), (b, a)):
                if fr.roles[x] > nl.roles[x] and nl.roles[y] > fr.roles[y]:
                    swapped += 1
                    out.append(Finding("role_mismatch", f"FR '{ROLES[x][0][0]}' ({fr.roles[x]}×) became NL "
                                                        f"'{ROLES[y][1][0]}' ({nl.roles[y]}× vs {fr.roles[y]}× in FR)"))
        # length and sentences
        # characters the Dutch lacks (or adds) against a typical translation of this French
        excess = nl_len[k] - fr_len[k] * np.exp(median)
        if (z[k] <= -LENGTH_Z and -excess >= MIN_CHARS) or (nl.sentences < fr.sentences and z[k] <= -OMISSION_SENTENCE_Z):
            out.append(Finding("omission", f"NL is {nl_len[k] / fr_len[k]:.0%} of the French length "
                                           f"(z = {z[k]:.1f}); sentences FR {fr.sentences}, NL {nl.sentences}"))
        elif (z[k] >= LENGTH_Z and excess >= MIN_CHARS) or (nl.sentences > fr.sentences and z[k] >= ADDITION_SENTENCE_Z):
            out.append(Finding("addition", f"NL is {nl_len[k] / fr_len[k]:.0%} of the French length "
                                           f"(z = {z[k]:.1f}); sentences FR {fr.sentences}, NL {nl.sentences}"))
        # untranslated / identical
        identical = fold(fr_text.strip()) == fold(nl_text.strip()) and bool(fr_text.strip())
        french_words = _french_words_outside_names(nl_text)
        french_prob = _french_probability(nl_text, nl.tokens, french_words)
        windows = _untranslated_windows(french_words) if len(french_words) == 1 else []
        if identical:
            out.append(Finding("identical_to_source", "the Dutch is the French text unchanged"))
        elif french_prob >= TEXT_FRENCH_PROB or len(french_words) >= 2 or windows:
            detail = ""
            if len(french_words) >= 2:
                detail = f"French words: {', '.join(dict.fromkeys(w for w, _ in french_words))}"
            elif french_words and windows:
                detail = f"French left in: '{windows[0]}'"
            out.append(Finding("untranslated", "; ".join(x for x in (
                f"language id: French {french_prob:.2f}" if french_prob >= 0.5 else "", detail) if x)))
        # question
        question_lost = fr.is_question and not nl.is_question
        if question_lost:
            out.append(Finding("not_a_question", "the French asks a question; the Dutch is a statement"))
        findings.append(out)
        rows.append((sum(fr.numbers.values()), sum(nl.numbers.values()), sum(missing.values()) + sum(added.values()),
                     fr.negations, nl.negations,
                     sum((fr.regions[x] > 0) != (nl.regions[x] > 0) for x in set(fr.regions) | set(nl.regions)),
                     sum((fr.institutions[x] > 0) != (nl.institutions[x] > 0)
                         for x in set(fr.institutions) | set(nl.institutions)),
                     swapped, fr.sentences, nl.sentences, nl_len[k] / fr_len[k], z[k], french_prob,
                     len(french_words), int(identical), int(question_lost)))
    LEMMAS.flush()
    columns = pd.DataFrame(rows, columns=COLUMNS)
    return findings, columns
