"""A local, throwaway Label Studio server run from its own virtualenv.

Label Studio pins Django and many other packages, so it never enters the project's environment:
`ensure_venv()` builds a private virtualenv under the cache folder on first use (guarded by a
lock so concurrent test sessions don't race). `LabelStudioServer` initialises a data dir
non-interactively, starts the server on 127.0.0.1, and checks that the port it asked for is the
one answering (Label Studio silently moves to port+1 when the port is taken).

    python -m bbsard_audit.annotations.server --ensure-venv      # build the venv (CI calls this once)
    python -m bbsard_audit.annotations.server --data-dir DIR     # run a local server until Ctrl-C (or `kill PID`)
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from bbsard_audit.base.steps import Say, step, to_stderr

LS_VERSION = "1.23.2"
CREDENTIALS_FILE = "bbsard-credentials.json"
# Variables Label Studio (or Django under it) reads from the environment: a parent's HOST, PORT,
# USERNAME or PASSWORD would silently reconfigure the child, so they never reach it.
_SCRUBBED_NAMES = {"HOST", "PORT", "USERNAME", "PASSWORD", "DEBUG", "SECRET_KEY", "DATABASE_URL"}
_SCRUBBED_PREFIXES = ("LABEL_STUDIO_", "DJANGO_", "POSTGRE_", "LS_")


class ServerError(RuntimeError):
    """The local Label Studio server could not be installed, started or stopped."""


def cache_dir() -> Path:
    """Label Studio's venv + template: $BBSARD_AUDIT_LS_CACHE, else the tool's cache folder."""
    return Path(os.environ.get("BBSARD_AUDIT_LS_CACHE") or os.environ.get("BBSARD_AUDIT_CACHE")
                or "~/.cache/bbsard-audit").expanduser()


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def version_root(version: str = LS_VERSION) -> Path:
    return cache_dir() / f"label-studio-{version}"


def ensure_venv(version: str = LS_VERSION, *, quiet: bool = True, say: Say | None = None) -> Path:
    """Return the `label-studio` executable of a private venv, creating the venv on first use (`say`:
    where progress lines go)."""
    root = version_root(version)
    venv = root / "venv"
    exe = venv / "bin" / "label-studio"
    ready = venv / ".bbsard-ready"
    if ready.exists():
        return exe
    with _file_lock(root / ".venv.lock"):
        if ready.exists():  # another session built it while we waited
            return exe
        if venv.exists():  # a half-built venv from an interrupted install
            shutil.rmtree(venv)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        cmd = [str(venv / "bin" / "python"), "-m", "pip", "install", f"label-studio=={version}"]
        with step(say, f"installing label-studio=={version} into {venv} (pip, a few minutes the first time)"):
            result = subprocess.run(cmd + (["-q"] if quiet else []), capture_output=quiet, text=True)
        if result.returncode != 0:
            tail = (result.stderr or "").strip().splitlines()[-3:] if quiet else []
            raise ServerError(f"pip install label-studio=={version} failed: {' '.join(tail)}")
        ready.write_text(version)
    return exe


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def child_env(extra: dict[str, str]) -> dict[str, str]:
    """The parent's environment minus everything Label Studio would read, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if k not in _SCRUBBED_NAMES and not k.startswith(_SCRUBBED_PREFIXES)}
    env.update(extra)
    return env


@dataclass
class LabelStudioServer:
    """One Label Studio process on 127.0.0.1 with its own data dir and admin credentials.

    The admin's legacy API token is only applied when the user is first created, so the
    credentials are stored (mode 0600) in the data dir and a copied data dir keeps them.
    """

    data_dir: Path
    port: int | None = None
    version: str = LS_VERSION
    username: str = "admin@bbsard-audit.local"
    password: str = field(default_factory=lambda: secrets.token_urlsafe(16), repr=False)
    token: str = field(default_factory=lambda: secrets.token_hex(20), repr=False)
    timings: dict[str, float] = field(default_factory=dict)
    process: subprocess.Popen | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir)
        creds = self.data_dir / CREDENTIALS_FILE
        if creds.exists():  # an initialised (or copied) data dir: its user already exists
            saved = json.loads(creds.read_text())
            self.username, self.password, self.token = saved["username"], saved["password"], saved["token"]

    @classmethod
    def from_template(cls, template: Path, data_dir: Path, **kwargs) -> "LabelStudioServer":
        """Copy an initialised data dir: restarts in seconds instead of a full migration."""
        shutil.copytree(template, data_dir)
        return cls(data_dir, **kwargs)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "server.log"

    def _env(self) -> dict[str, str]:
        return child_env({
            "LABEL_STUDIO_BASE_DATA_DIR": str(self.data_dir),
            "LABEL_STUDIO_USERNAME": self.username,
            "LABEL_STUDIO_PASSWORD": self.password,
            "LABEL_STUDIO_USER_TOKEN": self.token,
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            "LATEST_VERSION_CHECK": "false",
            "COLLECT_ANALYTICS": "false",
            "XDG_CONFIG_HOME": str(self.data_dir / ".config"),  # its user_id file too: nothing in ~/.config
        })

    @property
    def initialised(self) -> bool:
        return (self.data_dir / CREDENTIALS_FILE).exists()

    def init(self) -> None:
        """Create the database and the admin user (with our token) without any prompt."""
        exe = ensure_venv(self.version)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            result = subprocess.run([str(exe), "init", "--no-browser"], env=self._env(),
                                    stdout=log, stderr=subprocess.STDOUT, cwd=self.data_dir,
                                    timeout=600)
        if result.returncode != 0:
            raise ServerError(f"label-studio init failed (exit {result.returncode}); see {self.log_path}")
        creds = self.data_dir / CREDENTIALS_FILE
        creds.write_text(json.dumps({"username": self.username, "password": self.password,
                                     "token": self.token}))
        creds.chmod(0o600)
        self.timings["init_s"] = round(time.monotonic() - started, 2)

    def start(self, timeout: float = 180.0, attempts: int = 3) -> "LabelStudioServer":
        if not self.initialised:
            self.init()
        exe = ensure_venv(self.version)
        for attempt in range(attempts):
            port = self.port if (self.port and attempt == 0) else free_port()
            self.port = port
            started = time.monotonic()
            log = open(self.log_path, "ab")
            offset = log.tell()
            self.process = subprocess.Popen(
                [str(exe), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port)],
                env=self._env(), stdout=log, stderr=subprocess.STDOUT, cwd=self.data_dir,
                start_new_session=True)
            log.close()
            atexit.register(self.stop)  # never leave an orphan server behind a crashed caller
            try:
                ready = self._wait_ready(started, timeout, offset)
            except ServerError:
                self.stop()
                raise
            if ready:
                self.timings["start_s"] = round(time.monotonic() - started, 2)
                return self
            self.stop()  # it moved to another port (ours was taken meanwhile): try a fresh one
        raise ServerError(f"Label Studio did not answer on the requested port after {attempts} "
                          f"attempts; see {self.log_path}")

    def _moved_port(self, log_offset: int) -> bool:
        """Did this start's log announce a port other than ours ("Port P is in use")?"""
        with open(self.log_path, "rb") as log:
            log.seek(log_offset)
            text = log.read().decode(errors="replace")
        ports = {int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", text)}
        return "is in use" in text or bool(ports - {self.port})

    def _wait_ready(self, started: float, timeout: float, offset: int) -> bool:
        """True once OUR process answers /health on the requested port and accepts our token."""
        while time.monotonic() - started < timeout:
            if self.process.poll() is not None:
                raise ServerError(f"label-studio exited with code {self.process.returncode}; "
                                  f"see {self.log_path}")
            if self._moved_port(offset):
                return False
            if self._get("/health") == 200 and self._get("/api/current-user/whoami", auth=True) == 200:
                return True
            time.sleep(0.5)
        raise ServerError(f"Label Studio not ready after {timeout:.0f} s; see {self.log_path}")

    def _get(self, path: str, auth: bool = False) -> int | None:
        request = urllib.request.Request(self.url + path)
        if auth:
            request.add_header("Authorization", f"Token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except (urllib.error.URLError, OSError):
            return None

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM our own process (never a name-based kill), SIGKILL if it lingers."""
        atexit.unregister(self.stop)
        if self.process is None or self.process.poll() is not None:
            self.process = None
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.process = None

    def __enter__(self) -> "LabelStudioServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def ensure_template(version: str = LS_VERSION, say: Say | None = None) -> Path:
    """An initialised, stopped data dir in the cache, copied by tests for fast (re)starts."""
    root = version_root(version)
    template = root / "template"
    if (template / CREDENTIALS_FILE).exists():
        return template
    with _file_lock(root / ".template.lock"):
        if (template / CREDENTIALS_FILE).exists():
            return template
        building = root / "template.building"
        shutil.rmtree(building, ignore_errors=True)
        with step(say, f"initialising the template in {template} (database migrations, a start, a stop)"):
            with LabelStudioServer(building, version=version):
                pass  # one full start runs every migration and creates the admin user
        (building / "server.log").unlink(missing_ok=True)
        building.rename(template)
    return template


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bbsard_audit.annotations.server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ensure-venv", action="store_true", help="build the private venv and exit")
    parser.add_argument("--ensure-template", action="store_true",
                        help="also build the initialised template data dir and exit")
    parser.add_argument("--data-dir", type=Path, help="run a server on this data dir until Ctrl-C")
    parser.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free one), e.g. --port 8080")
    parser.add_argument("--print-token", action="store_true",
                        help="print the API token of the server on --data-dir (for LABEL_STUDIO_API_KEY) and exit")
    args = parser.parse_args(argv)
    if args.print_token:
        if not args.data_dir:
            parser.error("--print-token needs --data-dir")
        creds = args.data_dir / CREDENTIALS_FILE
        if not creds.exists():
            parser.error(f"no credentials in {args.data_dir}: start the server once with --data-dir {args.data_dir}")
        print(LabelStudioServer(args.data_dir).token)
        return 0
    if args.ensure_venv or args.ensure_template:  # paths on stdout, progress on stderr
        started = time.monotonic()
        print(ensure_venv(say=to_stderr), flush=True)
        if args.ensure_template:
            print(ensure_template(say=to_stderr), flush=True)
        to_stderr(f"Label Studio {LS_VERSION}: venv{' and template' if args.ensure_template else ''} ready in "
                  f"{version_root()} ({time.monotonic() - started:.0f} s)")
        return 0
    if not args.data_dir:
        parser.error("give --ensure-venv, --ensure-template or --data-dir")
    ensure_venv(say=to_stderr)  # a first use builds it here, saying each step (minutes); else at once
    server = LabelStudioServer(args.data_dir, port=args.port)
    to_stderr(f"starting Label Studio {server.version} on 127.0.0.1:{args.port or '(a free port)'}"
              + ("" if server.initialised else f", creating its database and admin user in {args.data_dir} first")
              + f" (a minute or two on 2 cores; its log: {server.log_path}) ...")
    # SIGTERM would kill Python without unwinding `with`, orphaning Label Studio: unwind instead.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with server:
        print(f"Label Studio {server.version} at {server.url} (user {server.username}; "
              f"token in {server.data_dir / CREDENTIALS_FILE}); stop it with Ctrl-C, or with "
              f"`kill {os.getpid()}` when started in the background (`&`)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while server.process.poll() is None:
                time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
