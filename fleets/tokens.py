"""Bearer tokens: random, shown once, stored as SHA-256.

Two kinds, told apart by their prefix: node tokens (``wln_``) speak for one
node to the ingest API only; personal tokens (``wlp_``) speak for a person to
the reports API.

Tokens carry 256 bits from ``secrets``, so a fast hash is enough (as for API
keys): no salt or slow KDF is needed against guessing, and lookup by hash is
one indexed query.
"""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "wln_"  # noqa: S105 - a marker, not a secret
PERSONAL_TOKEN_PREFIX = "wlp_"  # noqa: S105 - a marker, not a secret
PREFIX_CHARS = 12


def token_generate() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def personal_token_generate() -> str:
    return PERSONAL_TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
