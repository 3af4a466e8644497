"""Back-translation signal: Dutch -> French by a Translator, then compared with the original French.

A faithful Dutch translation back-translates into something close to the French; a dropped clause,
a swapped party or a wrong legal concept shows up as lost surface overlap (chrF++, BLEU, TER, from
sacrebleu, each score carrying its signature) and as a lower embedding cosine.
Backends: `FileTranslator` (precomputed by DeepL, an LLM, ...) and `TransformersTranslator`
(Marian / NLLB / M2M100 seq2seq models, from the hub or a local folder; the `ml` extra).
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

import numpy as np
import pandas as pd
from sacrebleu.metrics import BLEU, CHRF, TER

from bbsard_audit.base.contracts.files import decode, read_bytes
from bbsard_audit.base.contracts.table import STRING_ID
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import LanguagePair
from bbsard_audit.base.untrusted import load_json, nfc, text_lines, text_problem

from bbsard_audit.base.embeddings import Embedder
from .findings import Finding
from .options import MAX_QUESTION_CHARS
from .signal_cache import fingerprint
from .signals import Batch, Rule, ScorerSignal, SignalResult

TEXT_FIELDS = ("backtranslation", "text", "translation", "fr")

FLAGS = {
    "bt_divergent": "The back-translation (Dutch -> French) shares little wording with the French "
                    "original: sentence chrF++ below the configured threshold. Omissions, additions and "
                    "changed terms lower it; a free but faithful paraphrase can too, so it weighs less "
                    "than a terminology or QA flag.",
    "bt_meaning_drift": "The back-translation's sentence embedding is far from the French original's "
                        "(cosine below the configured threshold): the meaning, not only the wording, moved.",
}


class Translator(Protocol):
    """Dutch -> French. `ids` let precomputed backends look texts up; live models ignore them."""

    model_id: str

    def translate(self, texts: Sequence[str], ids: Sequence[int]) -> list[str]: ...


class FileTranslator:
    """Back-translations read from a JSONL (`{"id", "backtranslation"|"text"}` per line) or CSV file."""

    def __init__(self, path: str | Path, string_ids: bool = False, max_chars: int = MAX_QUESTION_CHARS) -> None:
        self.path, self.string_ids = Path(path), string_ids
        """`string_ids`: the dataset's ids are strings (BEIR's `PLAIN-2`), so are the file's; else integers.
        `max_chars`: a back-translation is a question, bounded as the questions are (`--max-question-chars`):
        a longer one is refused in one line as the file is read (one of 0.9 MB made a 40-pair audit take
        337 s in the surface and embedding scores)."""
        raw = read_bytes(self.path)  # hashed as parsed: the id names the bytes read, even if the file changes
        self.model_id = f"file:{self.path.name}#sha256:{hashlib.sha256(raw).hexdigest()[:12]}"
        text = decode(raw, self.path)
        rows = self._csv_rows(text) if self.path.suffix.lower() == ".csv" else self._jsonl_rows(text)
        self.texts: dict[int | str, str] = {}
        for row, record in rows:
            qid = self._id(record, row)
            value = next((record[f] for f in TEXT_FIELDS if f in record), None)
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"no back-translation text (expected one of {', '.join(TEXT_FIELDS)})",
                                 file=str(self.path), row=row, id=qid)
            if text_problem(value):
                raise InputError(f"back-translation {text_problem(value)}", file=str(self.path), row=row, id=qid)
            if len(value) > max_chars:
                raise InputError(f"back-translation of {len(value):,} characters is longer than --max-question-chars "
                                 f"{max_chars:,}; refused (raise --max-question-chars if it is one)",
                                 file=str(self.path), row=row, id=qid)
            if qid in self.texts:
                raise InputError("duplicate id", file=str(self.path), row=row, id=qid)
            self.texts[qid] = nfc(value.strip())  # compared with NFC questions
        if not self.texts:
            raise InputError("back-translation file is empty", file=str(self.path))

    def _jsonl_rows(self, text: str):
        for line_no, line in enumerate(text_lines(text), start=1):
            if not line.strip():
                continue
            try:
                record = load_json(line)
            except ValueError as exc:
                raise InputError(f"not valid JSON ({getattr(exc, 'msg', exc)})", file=str(self.path),
                                 row=line_no) from None
            if not isinstance(record, dict):
                raise InputError("expected a JSON object", file=str(self.path), row=line_no)
            yield line_no, record

    def _csv_rows(self, text: str):
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not reader.fieldnames or "id" not in reader.fieldnames:
            raise InputError("CSV needs an `id` column and a text column", file=str(self.path), row=1)
        for line_no, record in enumerate(reader, start=2):
            yield line_no, record

    def _id(self, record: Mapping, row: int) -> int | str:
        """An integer id (also `7.0` or `"7"`), or, for a dataset with string ids, a string id as its text."""
        value = record.get("id")
        if self.string_ids and isinstance(value, str) and STRING_ID.fullmatch(value.strip()) and not _number(value):
            return value.strip()
        try:
            if isinstance(value, bool) or value is None or float(value) != int(float(value)):
                raise ValueError
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            what = "an integer or a string id" if self.string_ids else "an integer"
            raise InputError(f"id must be {what}, got {value!r}", file=str(self.path), row=row) from None

    def translate(self, texts: Sequence[str], ids: Sequence[int | str]) -> list[str]:
        keys = [i if isinstance(i, str) and not _number(i) else int(i) for i in ids]
        missing = [k for k in keys if k not in self.texts]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise InputError(f"no back-translation for this question{more}", file=str(self.path), id=missing[0])
        return [self.texts[k] for k in keys]


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class TransformersTranslator:
    """A seq2seq MT model (Marian, NLLB, M2M100) from a hub id or a local folder, batched.

    NLLB and M2M100 are many-to-many: they need source/target language codes (defaults: the dataset
    `pair` backwards, target -> source: nld_Latn -> fra_Latn for NLLB, nl -> fr for M2M100 on bBSARD);
    Marian models are one direction and need none.
    """

    def __init__(self, model: str, *, pair: LanguagePair, device: str | None = None, batch_size: int = 16,
                 src_lang: str | None = None, tgt_lang: str | None = None, num_beams: int = 4,
                 max_new_tokens: int = 256) -> None:
        try:
            import torch
            from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
        except ImportError as exc:
            raise InputError("--translator needs torch + transformers: pip install 'bbsard-audit[ml]'") from exc
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model)
            self.model = AutoModelForSeq2SeqLM.from_pretrained(model)
        except Exception as exc:  # hub/network/format errors all mean: this model cannot be used
            raise InputError(f"cannot load translation model {model!r}: {str(exc).splitlines()[0]}") from exc
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device).eval()
        self.batch_size, self.num_beams, self.max_new_tokens = batch_size, num_beams, max_new_tokens
        self._generate_kwargs: dict = {}
        if self.model.config.model_type == "m2m_100":
            nllb = "nllb" in type(self.tokenizer).__name__.lower()
            back = pair.back()
            src_lang = src_lang or (back.nllb()[0] if nllb else back.source)
            tgt_lang = tgt_lang or (back.nllb()[1] if nllb else back.target)
            self.tokenizer.src_lang = src_lang
            bos = self.tokenizer.convert_tokens_to_ids(tgt_lang if nllb else f"__{tgt_lang}__")
            if bos is None or bos == self.tokenizer.unk_token_id:
                raise InputError(f"model {model!r} does not know target language code {tgt_lang!r}")
            self._generate_kwargs["forced_bos_token_id"] = bos
        revision = getattr(self.model.config, "_commit_hash", None)
        langs = f"[{src_lang}->{tgt_lang}]" if src_lang else ""
        self.model_id = f"transformers:{model}{langs}" + (f"@{revision}" if revision else "")

    def translate(self, texts: Sequence[str], ids: Sequence[int] = ()) -> list[str]:
        out: list[str] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start:start + self.batch_size])
            enc = self.tokenizer(batch, return_tensors="pt", padding=True, truncation=True).to(self.device)
            with self._torch.inference_mode():
                generated = self.model.generate(**enc, num_beams=self.num_beams,
                                                max_new_tokens=self.max_new_tokens, **self._generate_kwargs)
            bos = self._generate_kwargs.get("forced_bos_token_id")
            if bos is not None:  # the forced target-language token is not text
                generated = generated.masked_fill(generated == bos, self.tokenizer.pad_token_id)
            out.extend(t.strip() for t in self.tokenizer.batch_decode(generated, skip_special_tokens=True))
        return out


def get_translator(backtranslations: str | Path | None = None, model: str | None = None,
                   string_ids: bool = False, *, max_chars: int = MAX_QUESTION_CHARS, **kwargs) -> Translator | None:
    """`--backtranslations FILE` or `--translator MODEL` (at most one) -> a Translator, or None;
    `string_ids`: the dataset's ids are strings (the file's are read so); `max_chars`: the file's bound."""
    if backtranslations and model:
        raise InputError("give either --backtranslations or --translator, not both")
    if backtranslations:
        return FileTranslator(backtranslations, string_ids, max_chars)
    if model:
        return TransformersTranslator(model, **kwargs)
    return None


@dataclass(frozen=True)
class BackTranslationThresholds:
    """A pair is reported when its back-translation falls below these (chrF++ 0-100, cosine)."""

    chrf: float = 40.0
    cosine: float = 0.85


class BackTranslationScorer:
    """Sentence-level chrF++, BLEU (effective order) and TER of back-translation vs source, plus cosine.
    `languages`: the pair whose source the back-translation returns to (its reasons name it)."""

    def __init__(self, embedder: Embedder | None = None,
                 thresholds: BackTranslationThresholds = BackTranslationThresholds()) -> None:
        self.embedder, self.thresholds = embedder, thresholds
        self.chrf, self.bleu, self.ter = CHRF(word_order=2), BLEU(effective_order=True), TER()
        for metric in (self.chrf, self.bleu, self.ter):  # fixes nrefs:1, so signatures exist before scoring
            metric.sentence_score("x", ["x"])

    def signatures(self) -> dict[str, str]:
        sigs = {"chrf": str(self.chrf.get_signature()), "bleu": str(self.bleu.get_signature()),
                "ter": str(self.ter.get_signature())}
        if self.embedder is not None:
            sigs["cosine"] = f"{self.embedder.model_id}|kind:query"
        return sigs

    def score(self, source: Sequence[str], back: Sequence[str], languages: LanguagePair
              ) -> tuple[list[list[Finding]], pd.DataFrame]:
        """backtranslation, bt_chrf, bt_bleu, bt_ter (+ bt_cosine with an embedder), one row per pair."""
        findings, columns = self.surface_scores(source, back, languages)
        if self.embedder is not None:
            more, cosine = self.cosine_scores(source, back, languages)
            findings = [a + b for a, b in zip(findings, more)]
            columns = pd.concat([columns, cosine], axis=1)
        return findings, columns

    def surface_scores(self, source: Sequence[str], back: Sequence[str], languages: LanguagePair
                       ) -> tuple[list[list[Finding]], pd.DataFrame]:
        if len(source) != len(back):
            raise ValueError("source texts and back-translations differ in length")
        columns = pd.DataFrame({
            "backtranslation": list(back),
            "bt_chrf": [self.chrf.sentence_score(b, [s]).score for s, b in zip(source, back)],
            "bt_bleu": [self.bleu.sentence_score(b, [s]).score for s, b in zip(source, back)],
            "bt_ter": [self.ter.sentence_score(b, [s]).score for s, b in zip(source, back)],
        })
        limit, name = self.thresholds.chrf, languages.names[0]
        findings = [[Finding("bt_divergent", f"back-translation '{b}' diverges from the {name} "
                             f"(chrF++ {c:.1f} < {limit:g})")] if c < limit else []
                    for b, c in zip(back, columns["bt_chrf"])]
        return findings, columns

    def cosine_scores(self, source: Sequence[str], back: Sequence[str], languages: LanguagePair
                      ) -> tuple[list[list[Finding]], pd.DataFrame]:
        src_vec = self.embedder.encode(list(source), "query")
        bt_vec = self.embedder.encode(list(back), "query")
        cosine = np.einsum("ij,ij->i", src_vec, bt_vec) if len(back) else np.zeros(0)
        limit, name = self.thresholds.cosine, languages.names[0]
        findings = [[Finding("bt_meaning_drift", f"back-translation's meaning drifts from the {name} "
                             f"(cosine {c:.3f} < {limit:g})")] if c < limit else [] for c in cosine]
        return findings, pd.DataFrame({"bt_cosine": cosine})


def _score_bt_rows(batch: Batch, score: Callable[[list[str], list[str], LanguagePair],
                                                 tuple[list[list[Finding]], pd.DataFrame]],
                   keep: Sequence[str] | None = None) -> SignalResult:
    """`score(sources, back-translations, pair)` of the rows that have a back-translation (its `keep`
    columns); the other rows get no findings and NaN columns (no evidence), a batch without any
    back-translations nothing at all."""
    if batch.bt is None:
        return SignalResult.empty(len(batch))
    have = [i for i, b in enumerate(batch.bt) if b]
    findings, columns = score([batch.source[i] for i in have], [batch.bt[i] for i in have], batch.pair)
    columns = columns[list(keep)] if keep is not None else columns
    full = pd.DataFrame(np.nan, index=range(len(batch)), columns=columns.columns)
    if have:
        full.loc[have, columns.columns] = columns.to_numpy()
    by_row = dict(zip(have, findings))
    return SignalResult([by_row.get(i, []) for i in range(len(batch))], full)


class BackTranslationSurfaceSignal(ScorerSignal[BackTranslationScorer]):
    """chrF++ / BLEU / TER of back-translation vs source (signal-cached); adds the `backtranslation`
    column. A batch without back-translations gets nothing."""

    name = "bt_surface"
    flags = {"bt_divergent": FLAGS["bt_divergent"]}
    categories = {"bt_divergent": "mistranslation"}
    rules = (Rule("bt_chrf", "bt_divergent", threshold=40.0, scale=6.0, weight=0.35, order=10),)
    reads = ("source", "bt")

    def signature(self) -> str:
        sigs = {k: v for k, v in self.scorer.signatures().items() if k != "cosine"}
        return fingerprint([Path(__file__)], ("sacrebleu",), [sigs, self.scorer.thresholds.chrf])

    def score(self, batch: Batch) -> SignalResult:
        result = _score_bt_rows(batch, self.scorer.surface_scores, ["bt_chrf", "bt_bleu", "bt_ter"])
        if batch.bt is not None:
            result.columns.insert(0, "backtranslation", [b or "" for b in batch.bt])
        return result


class BackTranslationCosineSignal(ScorerSignal[BackTranslationScorer]):
    """Embedding cosine of back-translation vs source (embeddings are cached by the embedder)."""

    name = "bt_cosine"
    flags = {"bt_meaning_drift": FLAGS["bt_meaning_drift"]}
    categories = {"bt_meaning_drift": "mistranslation"}
    rules = (Rule("bt_cosine", "bt_meaning_drift", threshold=0.93, scale=0.01, weight=0.45, order=20),)
    reads = ("source", "bt")

    def score(self, batch: Batch) -> SignalResult:
        return _score_bt_rows(batch, self.scorer.cosine_scores)
