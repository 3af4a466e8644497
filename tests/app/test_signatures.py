"""Long parameter lists (issue 25): no function of the package takes more than 8 parameters (self/cls not
counted), except the typer commands, whose parameters are the command line; a long command builds
one options object (AuditOptions, CorpusOptions, EvalConfig, ...) for the library, with the defaults
in that class only."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import typer.main

from bbsard_audit.app.cli import app
from bbsard_audit.audit.corpus.run import CorpusOptions
from bbsard_audit.audit.options import AuditOptions, SelftestOptions

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "audit", "annotations", "base", "eval")
MAX_PARAMETERS = 8


def _typer_commands() -> set[tuple[Path, str, int]]:
    """(file, name, first line) of every function typer runs as a command or a group callback."""
    found, apps = set(), [app]
    while apps:
        current = apps.pop()
        infos = [*current.registered_commands, *current.registered_groups, current.registered_callback]
        for info in infos:
            if callable(getattr(info, "callback", None)) and hasattr(info.callback, "__code__"):  # not a placeholder
                code = inspect.unwrap(info.callback).__code__
                found.add((Path(code.co_filename).resolve(), code.co_name, code.co_firstlineno))
        apps += [group.typer_instance for group in current.registered_groups]
    return found


def long_signatures(source: str, path: str, typer_commands: set[tuple[Path, str, int]] = frozenset()) -> dict[str, int]:
    """`path:qualname` -> parameter count of each function over MAX_PARAMETERS that is not a typer command."""
    long: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = prefix + child.name
                a = child.args
                names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None]
                count = len(names) - (names[:1] in (["self"], ["cls"]))
                lines = range(min([child.lineno, *(d.lineno for d in child.decorator_list)]), child.lineno + 1)
                is_command = any(f == (ROOT / path).resolve() and name == child.name and line in lines
                                 for f, name, line in typer_commands)
                if count > MAX_PARAMETERS and not is_command:
                    long[f"{path}:{qualname}"] = count
                visit(child, qualname + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return long


def test_no_function_outside_the_typer_commands_takes_more_than_8_parameters():
    commands = _typer_commands()
    assert {name for _, name, _ in commands} >= {"audit", "corpus", "selftest", "release", "eval_command"}
    long: dict[str, int] = {}
    files = [p for top in PACKAGES for p in sorted((ROOT / top).rglob("*.py"))]
    assert len(files) > 100
    for path in files:
        long.update(long_signatures(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), commands))
    assert not long, f"pass an options object (audit/options.py, like eval's EvalConfig) instead: {long}"


def test_the_count_leaves_out_self_and_flags_a_ninth_parameter():
    source = ("class C:\n    def m(self, a, b, c, d, e, f, g, h): ...\n    def n(self, a, b, c, d, e, f, g, h, i): ...\n"
              "def k(a, *rest, b=1, c=2, d=3, e=4, f=5, g=6, **kw): ...\n"
              "def outer():\n    def inner(a, b, c, d, e, f, g, h, i): ...\n")
    assert long_signatures(source, "x.py") == {"x.py:C.n": 9, "x.py:k": 9, "x.py:outer.inner": 9}


def _defaults(command: list[str]) -> dict[str, object]:
    group = typer.main.get_command(app)
    for word in command:
        group = group.commands[word]
    return {p.name: p.default for p in group.params}


def test_the_commands_defaults_are_the_options_classes_defaults():
    """The typer signature shows the same default the library applies when the option is left out."""
    for command, options, renamed in ((["audit"], AuditOptions(), {}), (["audit", "selftest"], SelftestOptions(), {}),
                                      (["audit", "corpus"], CorpusOptions(), {})):
        shown = _defaults(command)
        fields = {f.name for f in dataclasses.fields(options)} & set(shown)
        assert len(fields) >= 6, (command, fields)
        for name in fields:
            default = getattr(options, name)
            if isinstance(default, tuple) and not default:  # a repeatable option: none given is ()
                assert shown[name] in (None, []), (command, name)
                continue
            assert shown[name] == (str(default) if isinstance(default, Path) else default), (command, name)
    audit = _defaults(["audit"])
    assert (audit["src_lang"], audit["tgt_lang"]) == AuditOptions().translator_langs
