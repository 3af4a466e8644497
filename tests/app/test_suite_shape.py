"""The suite's own shape: a test that asserts only inside loops over something computed can pass by
running its loop zero times, so every such test asserts outside the loop too (what it iterates is not
empty, or a count after the loop). A loop over a literal tuple or list always runs.

And the package's: options modules load no heavy library, function bodies are short, and few modules
hard-code bBSARD's language codes (fr, nl) in their logic."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
EXPECTING = ("raises", "warns")


def _asserts(node: ast.AST, in_loop: bool = False) -> list[bool]:
    """For each assert under `node`: whether it sits inside a loop that may run zero times."""
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Assert):
            found.append(in_loop)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        elif isinstance(child, (ast.For, ast.AsyncFor)):
            literal = isinstance(child.iter, (ast.Tuple, ast.List)) and child.iter.elts
            found += _asserts(child, in_loop or not literal)
        elif isinstance(child, ast.While):
            found += _asserts(child, True)
        else:
            found += _asserts(child, in_loop)
    return found


def _expects_otherwise(test: ast.FunctionDef) -> bool:
    """pytest.raises/warns, or a helper named check_*/assert_*/expect_* called outside any loop body."""
    for node in ast.walk(test):
        if isinstance(node, ast.With) and any(
                isinstance(i.context_expr, ast.Call) and getattr(i.context_expr.func, "attr", "") in EXPECTING
                for i in node.items):
            return True
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", "")
            if name.startswith(("check", "assert", "_assert", "expect", "_check")):
                return True
    return False


def loop_only_tests() -> list[str]:
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                where = _asserts(node)
                if where and all(where) and not _expects_otherwise(node):
                    found.append(f"{path.relative_to(TESTS)}:{node.lineno} {node.name}")
    return found


def test_the_scanner_sees_a_loop_only_test():
    tree = ast.parse("def test_x(rows):\n    for r in rows:\n        assert r\n")
    assert all(_asserts(tree.body[0])) and _asserts(tree.body[0])
    literal = ast.parse("def test_y():\n    for r in (1, 2):\n        assert r\n")
    assert _asserts(literal.body[0]) == [False]


def test_no_test_asserts_only_inside_a_loop_that_may_run_zero_times():
    assert loop_only_tests() == []


HEAVY = ("pandas", "numpy", "pyarrow", "torch")
"""Libraries an options module must not load: the command line reads its defaults at import time."""


def options_modules() -> list[str]:
    """Every options module of the package: `options.py` and `*_options.py`, wherever they are."""
    root = TESTS.parent
    found = []
    for path in sorted(root.rglob("*options.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in ("app", "base", "audit", "annotations", "eval") and rel.stem.endswith("options"):
            found.append("bbsard_audit." + ".".join(rel.with_suffix("").parts))
    return found


def test_importing_an_options_module_loads_no_heavy_library():
    """Each options module alone in a fresh interpreter: none of `HEAVY` is loaded."""
    modules = options_modules()
    assert {"bbsard_audit.audit.options", "bbsard_audit.audit.corpus.options", "bbsard_audit.audit.judge.options",
            "bbsard_audit.eval.options", "bbsard_audit.base.cli_options"} <= set(modules)
    loaded = {}
    for name in modules:
        res = subprocess.run([sys.executable, "-c", f"import sys, {name}; print(*[m for m in {HEAVY!r} "
                              "if m in sys.modules])"], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
        loaded[name] = res.stdout.split()
    assert loaded == {name: [] for name in modules}


PACKAGE_FOLDERS = ("app", "base", "audit", "annotations", "eval")
LONG_BODY, LONG_COMMAND = 60, 40
"""A function body over `LONG_BODY` lines is a list of steps without names (at most 3 are left); a body in a
command module (`<layer>/cli.py`, `<layer>/cli/*.py`) over `LONG_COMMAND` lines decides what the library
should (architecture.md, "Commands")."""


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the last; a nested function or class counts
    as its own body, not in the enclosing one (a typer `register` holding its commands)."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body:
        return 0
    lines = set(range(body[0].lineno, body[-1].end_lineno + 1))
    for stmt in body:
        for sub in ast.walk(stmt):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                start = min([sub.lineno, *(d.lineno for d in sub.decorator_list)])
                lines -= set(range(start, sub.end_lineno + 1))
    return len(lines)


def function_bodies() -> list[tuple[int, str, bool]]:
    """(body lines, `path:line name`, in a command module) of every function of the package, longest first."""
    root = TESTS.parent
    found = []
    for folder in PACKAGE_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root)
            command = "cli" in rel.parts[:-1] or rel.stem == "cli"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.append((body_lines(node), f"{rel}:{node.lineno} {node.name}", command))
    return sorted(found, reverse=True)


def test_the_body_counter_counts_statements_not_nested_functions():
    tree = ast.parse("def f():\n    '''doc'''\n    a = 1\n    def g():\n        return 2\n    return a\n")
    assert body_lines(tree.body[0]) == 2 and body_lines(tree.body[0].body[2]) == 1


def test_function_bodies_are_short_and_commands_shorter():
    bodies = function_bodies()
    assert len(bodies) > 500
    long = [where for n, where, _ in bodies if n > LONG_BODY]
    assert len(long) <= 3, long
    commands = [(n, where) for n, where, command in bodies if command]
    assert commands and max(commands)[0] <= LONG_COMMAND, [c for c in commands if c[0] > LONG_COMMAND]


# ------------------------------------------------------------------ fr/nl hard-coded in the package

CODES = {"fr", "nl"}
ALLOWED = {
    "base/sources/bsard_csv.py": "bBSARD's source: questions_{fr,nl}_*.csv, articles_{fr,nl}.csv",
    "base/sources/hf_bsard.py": "bBSARD's source: its hub splits fr/nl",
    "base/sources/sample.py": "bBSARD's source: the embedded sample and its shipped file names",
    "base/languages/": "the language packs and bBSARD's pair, defined once",
    "audit/selftest.py": "fr->nl only: the self-test's corruptions are Dutch words",
    "app/simulation.py": "fr->nl only: the clustered oracle rejects Dutch renderings",
    "audit/learn.py": "fr->nl only: learned rules pair a French term with Dutch renderings",
    "base/contracts/learned.py": "fr->nl only: the learned rules' `fr` column",
    "app/report/simulation_section.py": "fr->nl only: the learned rules' table",
    "audit/glossary.py": "fr->nl only: the first (fr/nl) glossary format",
    "audit/glossary_mining.py": "fr->nl only: glossary mining",
    "audit/cli/glossary.py": "fr->nl only: the glossary mining command",
    "eval/retrievers.py": "fr/nl only: the built-in BM25's analyzers (another language is refused)",
}
"""Modules that may name fr/nl: bBSARD's sources, the language packs and the fr->nl-only features."""
MAX_HARD_CODED = 8
"""Modules outside ALLOWED that still hard-code fr/nl (20 before the roles rename, issue 35; now 8, its target):
the count may only go down."""


def codes_named(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of each place the code names fr or nl: an identifier with a part `fr`/`nl` (text_fr,
    meta_nl, fr), or a string without spaces with one (a key, column or file name: "nl", "corrected_nl").
    Docstrings and prose (messages, help) are not logic and do not count."""
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            names = [node.value] if isinstance(node.value, str) and id(node) not in docs and not re.search(r"\s", node.value) else []
        else:
            names = [getattr(node, a, None) for a in ("id", "attr", "arg", "name")]
        found += [(node.lineno, n) for n in names if isinstance(n, str) and set(re.split(r"[^a-z0-9]+", n.lower())) & CODES]
    return found


def hard_coded_pair_modules() -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.split("/")[0] in ("tests", "benchmarks") or rel.startswith(".") or any(rel.startswith(a) for a in ALLOWED):
            continue
        if codes_named(ast.parse(path.read_text(encoding="utf-8"))):
            found.append(rel)
    return found


def test_the_code_scanner_sees_names_and_keys_but_not_prose():
    tree = ast.parse('"""Dutch (nl) docs."""\nx = corpus.text_fr\ny = {"nl": 1}\nraise E("no fr here")\n'
                     'def f(meta_nl): return g(lang="fr_nl_gap.csv", frame=nlp)\n')
    assert codes_named(tree) == [(2, "text_fr"), (3, "nl"), (5, "meta_nl"), (5, "fr_nl_gap.csv")]


def test_few_modules_outside_bbsard_sources_packs_and_fr_nl_features_hard_code_fr_nl():
    found = hard_coded_pair_modules()
    assert len(found) <= MAX_HARD_CODED, found
