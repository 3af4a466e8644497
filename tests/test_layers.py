"""Layering (issue 10): application > stages (audit | annotations | eval, independent) > base, checked
by the import-linter contract of pyproject.toml; every entry point imports alone in a fresh process;
a foreign top-level `audit` / `eval` / `annotations` package first on sys.path changes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("audit", "eval", "annotations")


def _installed_tree(target: Path) -> Path:
    """The package as installed (stage folders under bbsard_audit/, as package-dir maps them), since
    import-linter walks folders and cannot follow setuptools' package-dir mapping."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "bbsard_audit", target / "bbsard_audit", ignore=ignore)
    for stage in STAGES:
        shutil.copytree(ROOT / stage, target / "bbsard_audit" / stage, ignore=ignore)
    return target


def _run(code: str, cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_import_linter_layers_contract_holds(tmp_path):
    need("importlinter", "import-linter is in the test extra")
    tree = _installed_tree(tmp_path / "tree")
    code = ("from importlinter.cli import lint_imports; "
            f"raise SystemExit(lint_imports(config_filename={str(ROOT / 'pyproject.toml')!r}, no_cache=True))")
    res = _run(code, tmp_path, pythonpath=tree)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "1 kept, 0 broken" in res.stdout


def test_import_linter_catches_a_stage_importing_another(tmp_path):
    """The contract is not vacuous: an audit module importing eval breaks it."""
    need("importlinter", "import-linter is in the test extra")
    tree = _installed_tree(tmp_path / "tree")
    with (tree / "bbsard_audit" / "audit" / "calibration.py").open("a") as f:
        f.write("\nfrom bbsard_audit.eval import subsets  # noqa\n")
    code = ("from importlinter.cli import lint_imports; "
            f"raise SystemExit(lint_imports(config_filename={str(ROOT / 'pyproject.toml')!r}, no_cache=True))")
    res = _run(code, tmp_path, pythonpath=tree)
    assert res.returncode == 1 and "bbsard_audit.audit.calibration -> bbsard_audit.eval.subsets" in res.stdout


@pytest.mark.parametrize("module", ["bbsard_audit.audit.cli", "bbsard_audit.eval.cli", "bbsard_audit.annotations.cli",
                                    "bbsard_audit.audit.calibration", "bbsard_audit.contracts.runs",
                                    "bbsard_audit.report", "bbsard_audit.release", "bbsard_audit.cli"])
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
            "from bbsard_audit.cli import app; import typer.main; "
            "print(sorted(typer.main.get_command(app).commands))")
    res = _run(code, tmp_path, pythonpath=foreign)
    assert res.returncode == 0, res.stderr[-2000:]
    files, commands = res.stdout.splitlines()[:2], res.stdout.splitlines()[2]
    assert all(str(foreign) not in f for f in files)
    for command in ("audit", "eval", "annotate"):
        assert f"'{command}'" in commands
