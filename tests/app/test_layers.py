"""Layering (issue 10): application > stages (audit | annotations | eval, independent) > base, checked
by the import-linter contract of pyproject.toml; every entry point imports alone in a fresh process;
a foreign top-level `audit` / `eval` / `annotations` package first on sys.path changes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import need

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("audit", "eval", "annotations")
PACKAGES = ("app", "base", *STAGES)
"""The folders under the repository root that are subpackages of `bbsard_audit`."""

LINT = ("from importlinter.cli import lint_imports; "
        "raise SystemExit(lint_imports(config_filename={config!r}, no_cache=True))")


def _installed_tree(target: Path) -> Path:
    """A copy of the package as a user's tree would hold it, for tests that drop a module into it."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    (target / "bbsard_audit").mkdir(parents=True)
    shutil.copy(ROOT / "__init__.py", target / "bbsard_audit" / "__init__.py")
    for folder in PACKAGES:
        shutil.copytree(ROOT / folder, target / "bbsard_audit" / folder, ignore=ignore)
    return target


def _run(code: str, cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_import_linter_layers_contract_holds_on_the_installed_package(tmp_path):
    """import-linter finds `bbsard_audit` as installed (the root folder, by its one package-dir entry)
    and lints it in place: nothing is copied."""
    need("importlinter", "import-linter is in the test extra")
    res = _run(LINT.format(config=str(ROOT / "pyproject.toml")), tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "2 kept, 0 broken" in res.stdout


def test_no_import_loop_between_modules():
    """No strongly connected component of more than one module in the import graph (imports inside
    functions count; annotation-only TYPE_CHECKING imports, which never run, do not)."""
    need("grimp", "grimp comes with import-linter")
    import grimp

    graph = grimp.build_graph("bbsard_audit", cache_dir=None, exclude_type_checking_imports=True)
    loops: list[list[str]] = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    for root in sorted(graph.modules):  # Tarjan's algorithm, iterative
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    loops.append(sorted(component))
    assert not loops, loops


def test_import_linter_sees_the_real_imports(tmp_path):
    """The contract is not vacuous: the same lint with the base put above the stages breaks on the
    stages' real imports of the base."""
    need("importlinter", "import-linter is in the test extra")
    config = tmp_path / "inverted.toml"
    config.write_text('[tool.importlinter]\nroot_package = "bbsard_audit"\n\n[[tool.importlinter.contracts]]\n'
                      'name = "inverted"\ntype = "layers"\nlayers = ["bbsard_audit.base", "bbsard_audit.audit"]\n')
    res = _run(LINT.format(config=str(config)), tmp_path)
    assert res.returncode == 1 and "0 kept, 1 broken" in res.stdout
    assert "bbsard_audit.audit.pipeline -> bbsard_audit.base." in res.stdout


def test_every_code_folder_is_one_package_at_its_path():
    """Folder path = import path: each module's file is where its dotted name says, under the root."""
    import importlib
    import pkgutil

    import bbsard_audit

    assert Path(bbsard_audit.__file__).resolve() == ROOT / "__init__.py"
    seen = 0
    for info in pkgutil.walk_packages(bbsard_audit.__path__, "bbsard_audit."):
        if ".__" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        assert module.__file__, info.name
        rel = Path(module.__file__).resolve().relative_to(ROOT)
        parts = rel.with_suffix("").parts
        assert ".".join(["bbsard_audit", *(parts[:-1] if parts[-1] == "__init__" else parts)]) == info.name
        seen += 1
    assert seen > 100


def test_pyproject_declares_every_folder_that_holds_code_or_data():
    """A new folder under app/, base/ or a stage is installed only once [tool.setuptools] packages names
    it: this fails until it does (an editable install would hide the omission)."""
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {"bbsard_audit"} | {
        "bbsard_audit." + ".".join(d.relative_to(ROOT).parts)
        for top in PACKAGES for d in [ROOT / top, *(ROOT / top).rglob("*")]
        if d.is_dir() and d.name != "__pycache__" and any(f.is_file() for f in d.iterdir())}
    assert declared == folders


@pytest.mark.parametrize("module", ["bbsard_audit.audit.cli", "bbsard_audit.eval.cli", "bbsard_audit.annotations.cli",
                                    "bbsard_audit.audit.calibration", "bbsard_audit.base.contracts.runs",
                                    "bbsard_audit.app.report", "bbsard_audit.app.release", "bbsard_audit.app.cli"])
def test_each_entry_point_imports_alone_in_a_fresh_process(tmp_path, module):
    res = _run(f"import {module}", tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]


def test_a_foreign_top_level_stage_package_neither_shadows_nor_removes_a_command(tmp_path):
    foreign = tmp_path / "foreign"
    for stage in STAGES:
        (foreign / stage).mkdir(parents=True)
        (foreign / stage / "__init__.py").write_text("raise ImportError('foreign package, not bbsard-audit')\n")
        (foreign / stage / "cli.py").write_text("raise ImportError('foreign cli')\n")
    code = ("import bbsard_audit.audit.calibration as c, bbsard_audit.eval.runs as r; "
            "print(c.__file__); print(r.__file__); "
            "from bbsard_audit.app.cli import app; import typer.main; "
            "print(sorted(typer.main.get_command(app).commands))")
    res = _run(code, tmp_path, pythonpath=foreign)
    assert res.returncode == 0, res.stderr[-2000:]
    files, commands = res.stdout.splitlines()[:2], res.stdout.splitlines()[2]
    assert all(str(foreign) not in f for f in files)
    for command in ("audit", "eval", "annotate"):
        assert f"'{command}'" in commands
