"""The private virtualenv unbabel-comet runs in.

unbabel-comet pins numpy < 2, torchmetrics 0.10 and jsonargparse 3.13, which the project's own
environment cannot hold, so (like Label Studio, annotations/server.py) it never enters it:
`ensure_venv()` builds `<cache>/comet-<version>/venv` once, under a file lock so concurrent
sessions don't race, and audit/qe/worker.py runs under its interpreter.

    python -m bbsard_audit.audit.qe.env      # build it (or print where it is) and exit; progress on stderr
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bbsard_audit.base.errors import InputError
from bbsard_audit.base.steps import Say, step, to_stderr

COMET_VERSION = "2.2.7"
REQUIREMENTS = (f"unbabel-comet=={COMET_VERSION}",
                "torch==2.13.0",  # the project's own pin (the ml extra): its CPU wheel is found locally
                "setuptools>=77,<81",  # torchmetrics 0.10 imports pkg_resources, which setuptools 81 removed
                "sentencepiece<0.2.1")  # 0.2.1's protobuf module needs protobuf 5; comet pins protobuf < 5
READY = ".bbsard-ready"


def cache_dir() -> Path:
    """$BBSARD_AUDIT_COMET_CACHE, else where Label Studio's venv lives ($BBSARD_AUDIT_LS_CACHE, else
    $BBSARD_AUDIT_CACHE, else ~/.cache/bbsard-audit): a user picks where 1.4 GB go."""
    return Path(os.environ.get("BBSARD_AUDIT_COMET_CACHE") or os.environ.get("BBSARD_AUDIT_LS_CACHE")
                or os.environ.get("BBSARD_AUDIT_CACHE") or "~/.cache/bbsard-audit").expanduser()


def venv_dir() -> Path:
    return cache_dir() / f"comet-{COMET_VERSION}" / "venv"


def venv_python() -> Path | None:
    """The venv's interpreter when it is complete and was built from today's REQUIREMENTS (the
    marker's first line), else None (never builds)."""
    marker = venv_dir() / READY
    built = marker.read_text().splitlines()[:1] if marker.is_file() else []
    return venv_dir() / "bin" / "python" if built == [" ".join(REQUIREMENTS)] else None


def ensure_venv(*, quiet: bool = True, say: Say | None = None) -> Path:
    """The interpreter of the COMET venv, built on first use and checked by importing comet before
    it is marked ready (the marker keeps the build's seconds); InputError when the build fails.
    `say`: where its progress lines go."""
    venv = venv_dir()
    if venv_python():
        return venv / "bin" / "python"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / ".venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if venv_python():  # another session built it while we waited
            return venv / "bin" / "python"
        if venv.exists():  # a half-built venv from an interrupted install, or one of older requirements
            shutil.rmtree(venv)
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        install = [python, "-m", "pip", "install", "--disable-pip-version-check", *REQUIREMENTS]
        for command, what in ((install + (["-q"] if quiet else []), f"installing unbabel-comet=={COMET_VERSION} "
                               f"and torch into {venv} (pip, 1.4 GB)"), ([python, "-c", "import comet"], "checking it")):
            with step(say, what):
                result = subprocess.run(command, capture_output=quiet or command[1] == "-c", text=True)
            if result.returncode != 0:
                tail = " ".join((result.stderr or "").strip().splitlines()[-2:])
                raise InputError(f"building the COMET venv failed at `{' '.join(command[1:4])}`: {tail}",
                                 file=str(venv))
        (venv / READY).write_text(f"{' '.join(REQUIREMENTS)}\nbuild_seconds={time.monotonic() - started:.0f}\n")
    return venv / "bin" / "python"


def main() -> int:
    try:
        started = time.monotonic()
        print(ensure_venv(quiet=False, say=to_stderr), flush=True)
        to_stderr(f"COMET {COMET_VERSION}: venv ready in {venv_dir()} ({time.monotonic() - started:.0f} s)")
    except InputError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
