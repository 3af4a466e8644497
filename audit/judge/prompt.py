"""The judge's prompt: GEMBA-MQM (Kocmi & Federmann, 2023) adapted to a translated legal question,
with the pair's languages, the domain (Belgian statutory law) and the answer's JSON schema.

Changing the wording, the schema or the domain changes what a model answers: bump PROMPT_VERSION,
which is part of every cache key, so no answer to an older prompt is reused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from bbsard_audit.base.contracts.audit import SPAN_CATEGORIES
from bbsard_audit.base.languages.pair import language_name

PROMPT_VERSION = "gemba-mqm-legal-1"
SEVERITIES = ("minor", "major", "critical")
SIDES = ("target", "source")
MAX_TOKENS = 1024
"""Upper bound on an answer's length (the request's max_tokens): a dozen error objects fit."""

SCHEMA = {
    "type": "object",
    "properties": {"errors": {"type": "array", "items": {
        "type": "object",
        "properties": {
            "span": {"type": "string"},
            "side": {"type": "string", "enum": list(SIDES)},
            "category": {"type": "string", "enum": list(SPAN_CATEGORIES)},
            "severity": {"type": "string", "enum": list(SEVERITIES)},
            "explanation": {"type": "string"},
        },
        "required": ["span", "side", "category", "severity", "explanation"],
        "additionalProperties": False,
    }}},
    "required": ["errors"],
    "additionalProperties": False,
}
"""The answer's shape. Sent as `response_format` (servers with constrained decoding then cannot
break it); every field is required there, while the parser also accepts a missing `side` (target)."""


@dataclass(frozen=True)
class Domain:
    """What the texts are about, said to the judge so it weighs legal meaning, not style."""

    field: str = "Belgian statutory law (federal and regional codes and statutes)"
    jurisdiction: str = "Belgium"
    texts: str = "a question a citizen asked about their legal situation"
    use: str = "Jurists will use the {tgt} translation to\nretrieve the statutory articles that answer it"
    noun: str = "question"
    name: str = ""
    """Appended to PROMPT_VERSION in the cache key (empty for the questions' domain, whose keys predate it)."""

    def version(self) -> str:
        return f"{PROMPT_VERSION}+{self.name}" if self.name else PROMPT_VERSION


ARTICLES = Domain(texts="a statutory article (its text) of the legislation",
                  use="Retrieval systems and jurists will use the {tgt} translation as the article itself",
                  noun="article", name="article")
"""The corpus audit's domain: the documents are statutory articles."""


SYSTEM = ("You are an expert legal translator and translation-quality annotator. You annotate errors "
          "with the MQM framework and answer with JSON only.")

INSTRUCTIONS = """\
The {src} source is {texts}, in the domain of {field}. {use}, so what matters is that the translation keeps the
{noun}'s legal meaning under the law of {jurisdiction}: the legal terms must be the ones the
legislation of {jurisdiction} uses in {tgt} (not another country's), and the facts (who, what,
amounts, dates, deadlines, negations, named bodies) must be the same.

{src} source:
```{source}```
{tgt} translation:
```{target}```

Based on the source and the translation surrounded with triple backticks, identify the errors in the
translation and classify them. Categories: terminology (a legal term that is not the one the law of
{jurisdiction} uses), mistranslation, omission (something of the source is missing), addition,
untranslated (left in {src}), number (amount, date, duration or article number changed), negation
(polarity flipped), entity (person, body, place or law renamed), role (who does what to whom
changed), other. Severity: critical = the legal meaning changes (a jurist would retrieve or apply
other law); major = the meaning is distorted but the {noun} is still recognisable; minor = an
imperfection that does not change the meaning.
For each error give `span`: an exact, verbatim substring of the translation, or for an omission of
the source with `side` "source" (otherwise `side` "target"), a `category`, a `severity` and a short
`explanation` in English. Quote the smallest span that shows the error. If the translation has no
error, answer {{"errors": []}}."""

SCHEMA_IN_PROMPT = "\n\nAnswer with one JSON object, no other text, that follows this JSON schema:\n{schema}"


def messages(source: str, target: str, pair: tuple[str, str], *, schema_in_prompt: bool,
             domain: Domain = Domain()) -> list[dict]:
    """The chat messages for one pair; the schema goes into the text when the server cannot take
    `response_format`."""
    src, tgt = (language_name(code) for code in pair)
    user = INSTRUCTIONS.format(src=src, tgt=tgt, source=source, target=target, texts=domain.texts,
                               field=domain.field, jurisdiction=domain.jurisdiction, noun=domain.noun,
                               use=domain.use.format(tgt=tgt))
    if schema_in_prompt:
        user += SCHEMA_IN_PROMPT.format(schema=json.dumps(SCHEMA, separators=(",", ":")))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


FORMATS = ("json_schema", "json_object", "prompt")
"""How the schema reaches the server, in the order tried: OpenAI's `response_format` json_schema (vLLM,
Ollama, llama.cpp's llama-server, OpenAI); llama-cpp-python's `{"type": "json_object", "schema": ...}`
(grammar-constrained there; the schema is in the prompt too, for servers that ignore the key); the
schema in the prompt only."""


def body(model: str, source: str, target: str, pair: tuple[str, str], *, form: str = "json_schema",
         domain: Domain = Domain()) -> dict:
    """One chat-completions request with deterministic decoding, the schema sent the `form` way."""
    out = {"model": model, "temperature": 0, "max_tokens": MAX_TOKENS,
           "messages": messages(source, target, pair, schema_in_prompt=form != "json_schema", domain=domain)}
    if form == "json_schema":
        out["response_format"] = {"type": "json_schema",
                                  "json_schema": {"name": "mqm_errors", "strict": True, "schema": SCHEMA}}
    elif form == "json_object":
        out["response_format"] = {"type": "json_object", "schema": SCHEMA}
    return out


REPAIR = "Your answer could not be used: {problem}. Answer again with one JSON object, no other text, that follows this JSON schema:\n{schema}"


def repair(request: dict, answer: str | None, problem: str) -> dict:
    """The request asked again after a malformed answer: the answer and what was wrong with it, and
    the schema spelled out (asking the same thing again at temperature 0 would get the same answer)."""
    turns = [{"role": "assistant", "content": answer[:4000]}] if answer else []
    turns.append({"role": "user", "content": REPAIR.format(problem=problem,
                                                           schema=json.dumps(SCHEMA, separators=(",", ":")))})
    return {**request, "messages": [*request["messages"], *turns]}


def estimate_tokens(request: dict) -> int:
    """A rough prompt size: characters / 4 (no tokenizer is assumed; French and Dutch legal text runs
    about 3.5-4 characters per token in GPT-4-class tokenizers, so this errs a little low)."""
    chars = sum(len(m["content"]) for m in request["messages"])
    if "response_format" in request:  # servers turn the schema into grammar or prompt text
        chars += len(json.dumps(request["response_format"]))
    return -(-chars // 4)
