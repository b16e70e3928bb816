"""Secrets at rest (endpoint API keys), encrypted with Fernet from the `cryptography` package.

ATELIER_SECRET_KEYS lists Fernet keys: the first encrypts, every one decrypts (MultiFernet).
Unset, one key is derived from SECRET_KEY with HKDF. To rotate: put a new key first and keep
the old ones after it (`secret-key` names the derived one), run `manage.py rotate_secrets`,
then drop the old keys. A key is never logged or shown back; pages say only whether one is set.
"""

from __future__ import annotations

import base64
from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

DERIVED = "secret-key"


class SecretUnreadable(Exception):
    """A stored secret none of the configured keys can decrypt (a key was dropped too early)."""


def _derived() -> bytes:
    raw = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"atelier-secrets", info=b"fernet").derive(settings.SECRET_KEY.encode())
    return base64.urlsafe_b64encode(raw)


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    try:
        return MultiFernet([Fernet(_derived() if key == DERIVED else key.encode()) for key in keys or (DERIVED,)])
    except ValueError as exc:
        raise ImproperlyConfigured(f"ATELIER_SECRET_KEYS: every entry must be a Fernet key (or '{DERIVED}'): {exc}") from None


def encrypt(secret: str) -> str:
    return _fernet(settings.ATELIER_SECRET_KEYS).encrypt(secret.encode()).decode() if secret else ""


def decrypt(token: str) -> str:
    if not token:
        return ""
    try:
        return _fernet(settings.ATELIER_SECRET_KEYS).decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            "a stored API key cannot be decrypted with ATELIER_SECRET_KEYS (was its key removed before `rotate_secrets`?)"
        ) from None


def rotate(token: str) -> str:
    """The same secret encrypted with the first key."""
    return _fernet(settings.ATELIER_SECRET_KEYS).rotate(token.encode()).decode() if token else ""
