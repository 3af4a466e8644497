"""Typer pieces every stage's CLI shares (base layer: stages import this, never `bbsard_audit.app.cli`)."""

from __future__ import annotations

import contextlib
import contextvars
import os
from typing import Annotated, Iterable

import typer
from typer.core import TyperGroup

from .errors import InputError
from .io import OutputGuard, guard_outputs, reads_scope
from .transactions import disk_problem
from .redact import redact, secrets_scope

DATASET_SOURCES = ("SRC: `sample` (embedded), a CSV folder (its layout: `bbsard-audit validate --help`), "
                   "`hf:clips/bBSARD[@REV]` (REV: a hub commit or tag) or a manifest `FILE.yaml` joining two BEIR "
                   "sides (docs/formats.md, \"Dataset sources\").")


def dataset_option(purpose: str = "", short: bool = True) -> typer.models.OptionInfo:
    """`--dataset SRC`: what this command reads it for, then the sources, worded the same in every command
    (`short`: also `-d`, which a command that never had it keeps out of its narrow help layout)."""
    return typer.Option("--dataset", *(["-d"] if short else []), metavar="SRC",
                        help=f"{purpose} {DATASET_SOURCES}".strip())


DatasetOption = Annotated[str, dataset_option()]

SEEDS = 2**32
"""Seeds are 0 <= seed < 2**32: what numpy's generators and the recorded campaign draws accept."""


def check_seed(value: int, option: str = "--seed", count: int = 1) -> int:
    """`value` (and the `count` seeds from it), or one line: checked on the command line, before any work,
    since numpy refuses a negative seed only when it first draws (after an audit, or on every later `--next`)."""
    if not (0 <= value and value + max(count, 1) - 1 < SEEDS):
        span = f" (with {count} seeds, up to {value + count - 1})" if count > 1 else ""
        raise InputError(f"{option} must be an integer from 0 to {SEEDS - 1:,}, not {value}{span}")
    return value


def seed_option(help: str, *names: str, **kwargs) -> typer.models.OptionInfo:
    """A `--seed` option checked by `check_seed` as it is parsed (one line, exit 2, nothing run)."""
    def checked(ctx: typer.Context, param: typer.CallbackParam, value: int) -> int:
        return value if ctx.resilient_parsing else check_seed(value, param.opts[0] if param.opts else "--seed")
    return typer.Option(*names, callback=checked, help=help, **kwargs)


OLD_SPELLINGS: dict[str, dict[str, str]] = {
    "annotate push": {"--config": "--ls-config", "--batch-size": "--request-size"},
    "annotate pull": {"--config": "--ls-config"},
    "annotate status": {"--config": "--ls-config"},
    "audit": {"--runs-fr": "--runs-source", "--runs-nl": "--runs-target",
              "--src-lang": "--translator-src-lang", "--tgt-lang": "--translator-tgt-lang"},
    "audit corpus": {"--batch-size": "--docs-per-batch"},
    "campaign simulate": {"--budget": "--reviews"},
}
"""Option names renamed so that one name has one meaning across commands: command -> {old: new}. An old
spelling still works (command lines written before the rename keep working) and is not shown in --help;
docs/cli.md lists them."""


def _values(command, name: str) -> int:
    """How many of the next arguments option `name` of `command` takes as its value (0: a flag or no option)."""
    for param in getattr(command, "params", ()):
        if name in param.opts or name in param.secondary_opts:
            return 0 if getattr(param, "is_flag", False) or getattr(param, "count", False) else param.nargs
    return 0


def modernise(args: list[str], group) -> list[str]:
    """`args` with each old option spelling of the command they invoke replaced by its new name
    (`--config X`, `--config=X`); an option's value is never renamed (`--project --config`), nor
    anything after `--`."""
    path, command, i = [], group, 0
    while i < len(args) and args[i] in getattr(command, "commands", {}):
        command = command.commands[args[i]]
        path.append(args[i])
        i += 1
    renamed = OLD_SPELLINGS.get(" ".join(path), {})
    out, k = list(args[:i]), i
    while k < len(args):
        if args[k] == "--":
            return out + list(args[k:])
        name, eq, value = args[k].partition("=")
        out.append(renamed[name] + eq + value if name in renamed else args[k])
        skip = 0 if eq else _values(command, renamed.get(name, name))
        out += args[k + 1:k + 1 + skip]
        k += 1 + skip
    return out


def _valueless(param):
    if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
        param.metavar = ""  # typer shows a flag's type (`<bool>`) in --help as if it took a value
    return param


def _valueless_flags(command) -> None:
    """Every flag of the command tree, --help (made afresh per call) included, shows no value in --help."""
    for param in command.params:
        _valueless(param)
    make_help = command.get_help_option
    command.get_help_option = lambda ctx: _valueless(make_help(ctx))
    for sub in getattr(command, "commands", {}).values():
        _valueless_flags(sub)


class OneLineErrors(TyperGroup):
    """Bad input becomes one line on stderr and exit code 2, never a traceback (nor a credential)."""

    def make_context(self, info_name, args, parent=None, **extra):
        if parent is None:  # the root, before any --help of the tree is rendered
            _valueless_flags(self)
            args = modernise(list(args), self)
        return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx):
        if ctx.parent is not None:
            return self._invoke(ctx)
        with secrets_scope(), reads_scope():  # the keys read are masked in its messages, inputs named as read
            return self._invoke(ctx)

    def _invoke(self, ctx):
        try:
            with contextlib.ExitStack() as resources:  # closed when the command returns or fails (commits, rolls back)
                token = _RESOURCES.set(resources)
                try:
                    return super().invoke(ctx)
                finally:
                    _RESOURCES.reset(token)
        except InputError as exc:
            typer.echo(f"error: {redact(exc.one_line())}", err=True)
            raise typer.Exit(2) from None
        except OSError as exc:  # a write outside io's writers (e.g. `datasets`) on a full disk
            reason = disk_problem(exc)
            if reason is None:
                raise
            where = exc.filename or "the output"
            typer.echo(f"error: {redact(f'cannot write {where}: {reason}')}", err=True)
            raise typer.Exit(2) from None


_RESOURCES: contextvars.ContextVar[contextlib.ExitStack | None] = contextvars.ContextVar("bbsard_cli_resources",
                                                                                         default=None)


def guard_out(out: str | os.PathLike, *, command: str, inputs: Iterable[str | os.PathLike | None] = (),
              names: Iterable[str] = (), folder: bool = True, preserve: Iterable[str] = ()) -> OutputGuard:
    """One call near the top of a command: its writes run under `bbsard_audit.base.io.guard_outputs` until it returns."""
    resources = _RESOURCES.get()
    if resources is None:
        raise RuntimeError("guard_out is for commands run through the bbsard-audit CLI")
    return resources.enter_context(guard_outputs(out, command=command, inputs=inputs, names=names, folder=folder,
                                                 preserve=preserve))
