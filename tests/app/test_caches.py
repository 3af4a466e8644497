"""Where a test run writes: every cache the code (or a library under it) reads points at the session's
temporary folder, except the private environments the README names (Label Studio's venv + template,
COMET's venv), which stay in the documented shared cache a user chooses (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import conftest
from conftest import REPO, SHARED_ENVS, TEMP_CACHES, TEST_CACHE, UNSET_CACHES, USER_ENV, missing

PACKAGES = ("app", "audit", "annotations", "base", "eval")
READS = re.compile(r"""(?:environ\.get|environ\[|getenv)\(?\s*["']([A-Z][A-Z0-9_]+)["']""")
CACHE_LIKE = re.compile(r"^(?!.*_NO_).*(CACHE|HOME|CONFIGDIR|_DIR$)")  # a location, not a switch (..._NO_LEMMA_CACHE)


def variables_read() -> dict[str, list[str]]:
    """{variable: [files]} for every environment variable the package's code reads by name."""
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            for name in READS.findall(path.read_text(encoding="utf-8")):
                found.setdefault(name, []).append(str(path.relative_to(REPO)))
    return found


def inside(path: str | Path, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


def test_every_cache_variable_the_code_reads_is_pointed_by_the_session():
    read = {name: files for name, files in variables_read().items() if CACHE_LIKE.search(name)}
    assert read, "the scan found no cache variable: its pattern is broken"
    unknown = {name: files for name, files in read.items() if name not in {**TEMP_CACHES, **SHARED_ENVS}}
    assert unknown == {}, "a cache variable the session does not point anywhere"
    for name in TEMP_CACHES:
        assert inside(os.environ[name], TEST_CACHE), name
    default = str(Path("~/.cache/bbsard-audit").expanduser())
    assert SHARED_ENVS["BBSARD_AUDIT_LS_CACHE"] == str(Path(
        USER_ENV.get("BBSARD_AUDIT_LS_CACHE") or USER_ENV.get("BBSARD_AUDIT_CACHE") or default).expanduser())
    assert SHARED_ENVS["BBSARD_AUDIT_COMET_CACHE"] == str(Path(
        USER_ENV.get("BBSARD_AUDIT_COMET_CACHE") or SHARED_ENVS["BBSARD_AUDIT_LS_CACHE"]).expanduser())
    assert {name: os.environ[name] for name in SHARED_ENVS} == SHARED_ENVS
    assert [name for name in UNSET_CACHES if name in os.environ] == []


def test_the_code_and_its_libraries_resolve_their_caches_to_the_session_folder():
    """What each reader computes from those variables, not only the variables themselves."""
    import datasets
    import matplotlib
    import torch
    from huggingface_hub import constants

    from bbsard_audit.annotations.server import cache_dir as ls_cache
    from bbsard_audit.audit.qe.env import cache_dir as comet_cache
    from bbsard_audit.base.embeddings import default_cache_dir

    for what, path in {"embeddings": default_cache_dir(), "hf hub": constants.HF_HUB_CACHE,
                       "hf datasets": datasets.config.HF_DATASETS_CACHE, "torch hub": torch.hub.get_dir(),
                       "matplotlib": matplotlib.get_cachedir()}.items():
        assert inside(path, TEST_CACHE), (what, path)
    assert str(ls_cache()) == SHARED_ENVS["BBSARD_AUDIT_LS_CACHE"]
    assert str(comet_cache()) == SHARED_ENVS["BBSARD_AUDIT_COMET_CACHE"]
    pip = subprocess.run([os.sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True, timeout=120)
    assert pip.returncode == 0 and inside(pip.stdout.strip(), TEST_CACHE), pip.stdout + pip.stderr


def test_the_comet_venv_goes_where_the_user_says(monkeypatch, tmp_path):
    from bbsard_audit.audit.qe import env

    monkeypatch.setenv("BBSARD_AUDIT_COMET_CACHE", str(tmp_path / "comet"))
    assert env.venv_dir() == tmp_path / "comet" / f"comet-{env.COMET_VERSION}" / "venv"
    monkeypatch.delenv("BBSARD_AUDIT_COMET_CACHE")  # as before the variable existed: beside Label Studio's
    monkeypatch.setenv("BBSARD_AUDIT_LS_CACHE", str(tmp_path / "ls"))
    assert env.venv_dir() == tmp_path / "ls" / f"comet-{env.COMET_VERSION}" / "venv"


def test_the_readme_names_every_shared_environment_and_its_default():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("Tests never write to your caches")
    paragraph = text[start:text.index("\n\n", start)]
    for name in SHARED_ENVS:
        assert f"`${name}`" in paragraph, name
    assert "~/.cache/bbsard-audit" in paragraph and "comet-" in paragraph


@pytest.mark.comet
def test_the_comet_worker_writes_nothing_under_home_for_a_hub_id(tmp_path):
    """comet's download_model falls back to its legacy downloader, which makes ~/.cache/torch/unbabel_comet
    unless it is given a folder: offline, a hub id must fail in one line and leave the home as it was."""
    from bbsard_audit.audit.qe import env
    from bbsard_audit.audit.qe.signal import WORKER
    from bbsard_audit.base.errors import InputError

    try:
        python = env.ensure_venv()
    except InputError as exc:
        missing(f"cannot build the COMET venv: {exc}")
    home = tmp_path / "home"
    home.mkdir()
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"src": "Bonjour", "mt": "Hallo"}) + "\n")
    child = {k: v for k, v in os.environ.items() if k not in conftest.TEMP_CACHES}  # every cache from HOME
    child.update(HOME=str(home), HF_HUB_OFFLINE="1")
    done = subprocess.run([str(python), "-I", str(WORKER), "Unbabel/wmt22-cometkiwi-da", "--input", str(requests)],
                          env=child, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "HF_HUB_OFFLINE is set" in done.stderr, done.stderr[-2000:]
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert not any("torch" in p for p in written), written


def test_a_local_ray_gets_the_sessions_token_not_one_written_to_the_home():
    """Ray writes a new local cluster's token to ~/.ray/auth_token unless one is in the environment."""
    if any(USER_ENV.get(n) for n in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE")):
        pytest.skip("the user chose Ray's authentication: theirs is kept")
    assert re.fullmatch(r"[0-9a-f]{64}", os.environ["RAY_AUTH_TOKEN"])


@pytest.mark.label_studio
def test_label_studio_keeps_its_config_in_its_data_dir(ls_server):
    """Label Studio writes a user_id under $XDG_CONFIG_HOME/label-studio: the server's own data dir."""
    assert (ls_server.data_dir / ".config" / "label-studio").is_dir()
