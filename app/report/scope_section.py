"""The audit section's "What this audit can and cannot see": the evidence this audit ran with (its
audit.meta.json), and what the built-in checks catch of real MT errors per MQM category, measured on
another dataset (the packaged audit/data/scope.json, labelled with its dataset and scope)."""

from __future__ import annotations

from bbsard_audit.audit import scope as measured
from bbsard_audit.base.contracts.scope import Scope, evidence

from .document import Details, Section, Table, Text
from .loaders import Workdir

TITLE = "What this audit can and cannot see"
MODEL_EVIDENCE = ("LLM judge", "COMET / QE")


def add_scope(sec: Section, wd: Workdir) -> None:
    """The subsection, under the audit section (only with an audit.csv); the scope file is read strictly:
    a malformed one is one line naming it."""
    scope = Scope.read(measured.SCOPE_FILE)
    ran = evidence(wd.sidecars.get("audit.meta.json") or {})
    models = tuple(e.name for e in ran if e.ran and e.name in MODEL_EVIDENCE)
    sub = sec.sub(TITLE, key="audit-scope")
    dev = {e.name: e.ran for e in scope.evidence}
    blind = [c for c in scope.categories if not c.above_chance]
    if blind and not models:
        names = measured.listed([c.category.split("/")[-1].lower() for c in blind])
        sub.add(Text(f"No model ran: {names} are essentially invisible to this audit (real MT errors, below); they "
                     f"need {measured.MODELS}."))
    judged_only = _judged_only(wd)
    if judged_only:
        sub.add(Text(judged_only))
    pair = wd.layout.pair
    blocks = [Text("The evidence this audit had beyond the built-in surface checks (numbers, negation, names, roles, "
                   "length, language, glossary, cross-lingual similarity), from its audit.meta.json:"),
              Table("Evidence on this audit", ("evidence", "on this audit"), tuple((e.name, e.status) for e in ran)),
              Text(f"What the built-in checks catch of real MT errors was measured on another dataset, not on this "
                   f"audit's ({pair.source}→{pair.target}): {measured.dev_set(scope)}. {measured.summary(scope)} "
                   "Read the table as which kinds of error the built-in checks see, not as this audit's recall."),
              Table(f"Per MQM category, on {scope.dev_set.name} {scope.dev_set.source}→{scope.dev_set.target} "
                    "(audit/data/scope.json)", measured.COLUMNS, tuple(measured.rows(scope, models)))]
    extra = [e.name for e in ran if e.ran and not dev[e.name]]
    if extra:
        blocks.append(Text(f"This audit also ran {measured.listed(extra)}, which the dev set's audit did not: what "
                           "that evidence adds on these categories was not measured; the figures above are without it."))
    missing = [e.name for e in ran if not e.ran and dev[e.name]]
    if missing:
        blocks.append(Text(f"The dev set's figures include {measured.listed(missing)}, which this audit ran without."))
    # folded: the sentence above is the conclusion, the tables its evidence (the report stays conclusions-first)
    sub.add(Details(f"Evidence on this audit, and per MQM category what the built-in checks caught on "
                    f"{scope.dev_set.name}", tuple(blocks)))


def _judged_only(wd: Workdir) -> str:
    """When the judge read only some pairs: it cannot find what it did not read."""
    judge = (wd.sidecars.get("audit.meta.json") or {}).get("judge") or {}
    if judge.get("on") in (None, "all"):
        return ""
    selected = judge.get("selected")
    return (f"The judge read only the {f'{selected:,} ' if isinstance(selected, int) else ''}pairs "
            f"`--judge-on {judge['on']}` selected: an error in a pair it did not read stays invisible unless the "
            "built-in checks flag it.")
