"""Where `atelier login` keeps the server URL and token: $ATELIER_CONFIG_DIR, else $XDG_CONFIG_HOME/atelier, else
~/.config/atelier (on Windows %APPDATA%/atelier), in config.json readable by the user only (mode 0600)."""

from __future__ import annotations

import json
import os
from pathlib import Path


class NotLoggedIn(Exception):
    pass


def config_dir() -> Path:
    if os.environ.get("ATELIER_CONFIG_DIR"):
        return Path(os.environ["ATELIER_CONFIG_DIR"])
    if os.name == "nt" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "atelier"
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "atelier"


def config_path() -> Path:
    return config_dir() / "config.json"


def save(url: str, token: str) -> Path:
    """Write the file with mode 0600 from its creation on, so the token is never readable by others, even briefly."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"url": url.rstrip("/"), "token": token}, f)
    os.chmod(path, 0o600)  # an existing file keeps its old mode through O_CREAT
    return path


def load() -> dict:
    path = config_path()
    if not path.exists():
        raise NotLoggedIn(f"not logged in: run 'atelier login URL' first (no {path})")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not data.get("url") or not data.get("token"):
        raise NotLoggedIn(f"{path} lacks 'url' or 'token': run 'atelier login URL' again")
    return data
