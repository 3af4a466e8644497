"""Shared fixtures. Tests that need the real bBSARD files in ../shared skip cleanly without them.

Two session-wide rules live here, before any test module imports the stages:
- caches: the tool's cache (embeddings, lemmas, signals) and the pip / HF / torch / XDG caches point at a
  temporary folder, so a test run never writes to the user's ~/.cache; only the private environments
  keep their real place: Label Studio's venv + template (built by the README's `--ensure-template`
  step, only read by the tests; BBSARD_AUDIT_LS_CACHE) and COMET's venv (built once, by the README's
  step or by the first test that needs it; BBSARD_AUDIT_COMET_CACHE).
- `need(module)`: an optional test dependency (peer libraries, selenium) skips the test when absent,
  but with CI=true a missing one fails it, so CI cannot go green by skipping.
"""

from __future__ import annotations

import importlib
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "benchmarks"))  # the design studies the benchmarks run and tests check (ppi_study, ...)
SHARED = Path(os.environ.get("BBSARD_SHARED", REPO.parent / "shared" / "data" / "bbsard"))
CI = os.environ.get("CI", "").strip().lower() == "true"

USER_ENV = dict(os.environ)  # as the user started pytest (for tests that re-run pytest as a user would)
TEST_CACHE = Path(tempfile.mkdtemp(prefix="bbsard-test-cache-"))
# The private environments the tests only read or build once (README, "Install the test dependencies"):
# Label Studio's venv + template and COMET's venv, where the user keeps them (default ~/.cache/bbsard-audit).
SHARED_ENVS = {"BBSARD_AUDIT_LS_CACHE": str(Path(
    USER_ENV.get("BBSARD_AUDIT_LS_CACHE") or USER_ENV.get("BBSARD_AUDIT_CACHE") or "~/.cache/bbsard-audit").expanduser())}
SHARED_ENVS["BBSARD_AUDIT_COMET_CACHE"] = str(Path(
    USER_ENV.get("BBSARD_AUDIT_COMET_CACHE") or SHARED_ENVS["BBSARD_AUDIT_LS_CACHE"]).expanduser())
# Every cache the code or its libraries write (the tool's, pip's when building a venv, Hugging Face's,
# torch's, matplotlib's, selenium's): a folder of the session's temporary one.
TEMP_CACHES = {"BBSARD_AUDIT_CACHE": "bbsard-audit", "XDG_CACHE_HOME": "xdg", "HF_HOME": "huggingface",
               "HF_HUB_CACHE": "huggingface/hub", "HF_DATASETS_CACHE": "huggingface/datasets",
               "HF_XET_CACHE": "huggingface/xet", "HF_ASSETS_CACHE": "huggingface/assets",
               "SENTENCE_TRANSFORMERS_HOME": "sentence-transformers", "TORCH_HOME": "torch",
               "MPLCONFIGDIR": "matplotlib", "PIP_CACHE_DIR": "pip", "SE_CACHE_PATH": "selenium",
               "IR_DATASETS_HOME": "ir_datasets"}  # ir_measures (a peer check) makes ~/.ir_datasets on import
# Older names that would override the ones above if the user had them set: never passed on.
UNSET_CACHES = ("TRANSFORMERS_CACHE", "HUGGINGFACE_HUB_CACHE", "PYTORCH_TRANSFORMERS_CACHE",
                "PYTORCH_PRETRAINED_BERT_CACHE")
os.environ.update(SHARED_ENVS)
os.environ.update({name: str(TEST_CACHE / sub) for name, sub in TEMP_CACHES.items()})
for _name in UNSET_CACHES:
    os.environ.pop(_name, None)
if not any(USER_ENV.get(n) for n in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE")):
    # a local Ray otherwise writes its new token to ~/.ray/auth_token: the session's own, in memory only
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)


def pytest_unconfigure(config):
    shutil.rmtree(TEST_CACHE, ignore_errors=True)


def missing(reason: str) -> NoReturn:
    """Skip the test for a missing optional dependency; under CI=true, fail it instead."""
    if CI:
        pytest.fail(f"{reason} (required when CI=true)", pytrace=False)
    pytest.skip(reason)


def need(module: str, reason: str | None = None) -> ModuleType:
    """Import an optional test dependency, or `missing(...)`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing(reason or f"{module} not installed ({exc})")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared/data/bbsard (or $BBSARD_SHARED); skips the test when it is absent."""
    if not (SHARED / "questions_fr_test.csv").exists():
        pytest.skip(f"real bBSARD data not found at {SHARED} (a fresh clone has no ../shared)")
    return SHARED


@pytest.fixture(scope="session")
def shared_runs(shared_dir) -> Path:
    runs = shared_dir / "runs"
    if not (runs / "qrels_test203.trec").exists():
        pytest.skip(f"shared runs not found at {runs}")
    return runs


# --- Label Studio (annotations stage) ---------------------------------------------------------
# One server per test session, started from a cached initialised data dir (first ever run: the
# private venv + template take a few minutes; afterwards a start takes seconds). Tests that must
# stop or reset a server start their own short-lived copy with `ls_factory`.

@pytest.fixture(scope="session")
def ls_template():
    from bbsard_audit.annotations.server import ensure_template
    return ensure_template()


@pytest.fixture(scope="session")
def ls_factory(ls_template, tmp_path_factory):
    from bbsard_audit.annotations.server import LabelStudioServer
    started = []

    def make(start: bool = True):
        server = LabelStudioServer.from_template(ls_template, tmp_path_factory.mktemp("ls") / "data")
        started.append(server)
        return server.start() if start else server

    yield make
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def ls_server(ls_factory):
    """A running Label Studio shared by the session: use a unique project title per test."""
    return ls_factory()


@pytest.fixture
def ls_env(ls_server, monkeypatch, tmp_path):
    """Point the CLI at the session server through the documented environment variables."""
    monkeypatch.setenv("LABEL_STUDIO_URL", ls_server.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls_server.token)
    empty = tmp_path / "no-config.toml"  # never read the developer's own config file
    empty.write_text("")
    monkeypatch.setenv("BBSARD_AUDIT_CONFIG", str(empty))
    return ls_server


def write_review_files(folder: Path, pairs, backtranslations: dict | None = None, *, seed: int = 0,
                       budget: int = 10, control: int = 10):
    """audit.csv + review_queue.csv shaped as docs/formats.md, with made-up risks (seeded).

    `pairs` are QuestionPair-like (id, split, question_fr, question_nl). Stands in for the audit
    stage's output so the annotation stage is tested against the contract, not an implementation.
    """
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    risk = rng.beta(2, 2.5, size=len(pairs)).round(4)
    flagged = risk >= 0.5
    severity = np.select([risk >= 0.7, risk >= 0.5, risk >= 0.3], ["high", "medium", "low"], "none")
    bt = backtranslations or {}
    audit = pd.DataFrame({
        "id": [p.id for p in pairs], "split": [p.split for p in pairs],
        "question_fr": [p.source for p in pairs], "question_nl": [p.target for p in pairs],
        "backtranslation": [bt.get(p.id, "") for p in pairs], "risk": risk, "severity": severity,
        "flagged": np.where(flagged, "true", "false"),
        "flags": np.where(flagged, "bt_low_chrf;glossary_miss", ""),
        "reasons": np.where(flagged, "Back-translation diverges | A glossary term is missing", ""),
        "bt_chrf": (100 * (1 - risk)).round(1)})
    folder.mkdir(parents=True, exist_ok=True)
    audit.to_csv(folder / "audit.csv", index=False)
    # as the audit stage does it: the `budget` riskiest flagged pairs + a random control sample
    # of unflagged pairs (one stratum here), with stratum sizes and inverse inclusion weights
    top = audit[flagged].sort_values("risk", ascending=False).head(budget)
    top = top.assign(queue="risk", stratum="flagged", stratum_size=int(flagged.sum()), stratum_sampled=len(top))
    pool = audit[~flagged]
    ctrl = pool.sample(n=min(control, len(pool)), random_state=seed)
    ctrl = ctrl.assign(queue="control", stratum="test/all", stratum_size=len(pool), stratum_sampled=len(ctrl))
    queue = pd.concat([top, ctrl], ignore_index=True)
    queue["sample_weight"] = queue["stratum_size"] / queue["stratum_sampled"]
    queue.to_csv(folder / "review_queue.csv", index=False)
    return folder / "audit.csv", folder / "review_queue.csv"


@pytest.fixture
def toy_pairs():
    """30 made-up FR/NL question pairs (no data files needed)."""
    from bbsard_audit.base.dataset import QuestionPair
    return [QuestionPair(id=100 + i, split="test", source=f"Question juridique numéro {i} ?",
                         target=f"Juridische vraag nummer {i}?", article_ids=(i, i + 1))
            for i in range(30)]


@pytest.fixture(scope="session")
def embedding_cache() -> Path:
    """One embedding and signal cache for the session, the same folder the tool uses by default under
    the tests (the demo, eval's dense retrievers): each text is embedded once, not once per test.
    Tests about caching itself use their own empty folder."""
    return TEST_CACHE / "bbsard-audit" / "embeddings"


def local_path_leaks(out: Path, *paths: Path) -> list[str]:
    """`file: path` for every file under `out` whose text holds one of `paths` (as given or resolved):
    shareable outputs name data by name + sha256, never by a local path."""
    needles = {str(p) for p in paths} | {str(Path(p).resolve()) for p in paths}
    return sorted(f"{f.relative_to(out)}: {n}" for f in out.rglob("*") if f.is_file() and f.suffix != ".parquet"
                  for n in needles if n in f.read_text(encoding="utf-8", errors="replace"))


def audit_frame(ids, flagged):
    """A minimal audit.csv frame that meets its contract (bbsard_audit.base.contracts.audit)."""
    import pandas as pd

    flagged = [bool(f) for f in flagged]
    return pd.DataFrame({"id": [int(i) for i in ids], "split": "test", "category": "housing", "question_fr": "fr",
                         "question_nl": "nl", "backtranslation": "", "risk": [0.9 if f else 0.1 for f in flagged],
                         "severity": ["high" if f else "none" for f in flagged], "flagged": flagged,
                         "flags": ["number" if f else "" for f in flagged], "reasons": ""})
