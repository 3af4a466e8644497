"""Reaching the Hugging Face hub: a fast reachability probe and the commit a load resolved to."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputError
from ..io import digest_of

HUB_PROBE_TIMEOUT_S = 3.0


def check_hub_reachable(spec: str) -> None:
    """Fail at once, in one line, when the hub cannot be reached: `datasets` would retry for about a
    minute before saying so. Skipped in offline mode (`datasets` then reads its local cache, fast) and
    behind a proxy (only the library knows how to reach the hub through it); a copy in the local
    Hugging Face cache is left to `datasets`, which falls back to it after its retries, as before."""
    import socket
    from urllib.parse import urlsplit

    from datasets import config
    from huggingface_hub import constants

    env = os.environ
    if constants.HF_HUB_OFFLINE or config.HF_HUB_OFFLINE or any(  # read at import; the variables may come later
            env.get(k, "").strip().lower() in ("1", "true", "yes", "on") for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")):
        return
    if any(env.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return
    endpoint = urlsplit(env.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = endpoint.hostname or "huggingface.co", endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=HUB_PROBE_TIMEOUT_S).close()
    except OSError as exc:
        if in_hf_cache(spec.partition("@")[0]):
            return
        raise InputError(f"the Hugging Face hub ({host}) is not reachable ({exc.strerror or type(exc).__name__}); "
                         "offline, set HF_HUB_OFFLINE=1 to read a copy in the local Hugging Face cache, or give "
                         "a local folder (--dataset DIR or hf:PATH)", file=f"hf:{spec}") from None


def in_hf_cache(name: str) -> bool:
    """A download of hub dataset `name` in the Hugging Face caches (the hub's files or `datasets`' build)."""
    from datasets import config, naming
    from huggingface_hub import constants

    owner, _, repo = name.rpartition("/")
    built = f"{owner}___{naming.camelcase_to_snakecase(repo)}" if owner else naming.camelcase_to_snakecase(repo)
    return ((Path(constants.HF_HUB_CACHE) / f"datasets--{name.replace('/', '--')}").is_dir()
            or (Path(config.HF_DATASETS_CACHE) / built).is_dir())


def pin(name: str, revision: str | None) -> str:
    """What pins a side's content in provenance and in the corpus audit's resume key: a local copy by a
    hash of its files (a `revision:` string cannot tell that they changed), a hub dataset by the
    revision asked for, else the commit it resolves to."""
    return resolve_revision(name) if Path(name).exists() else revision or resolve_revision(name)


def resolve_revision(name: str) -> str:
    """The commit a hub dataset resolved to, when the hub can be asked; else say it was unpinned. A local
    copy is pinned by its content (outputs name it by folder name, never by its path)."""
    if Path(name).exists():
        return f"sha256:{digest_of(Path(name))[:12]}"
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(name).sha or "main"
    except Exception:
        return "main (unpinned; hub not reachable to resolve the commit)"
