"""The demo collectors' files under ``var/demo/``: node tokens (mode 0600) and the node list.

A token is shown once, at issue, and stored only as a hash, so the demo keeps
the ones it issues here for ``bin/demo-collectors``; a node whose saved token
is missing or no longer valid gets a new one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings

from fleets.models import Node, NodeCredential
from fleets.services import credential_issue, credentials_revoke
from fleets.tokens import token_sha256


def demo_dir() -> Path:
    return Path(settings.VAR_DIR) / "demo"


def token_path(hostname: str) -> Path:
    return demo_dir() / "tokens" / hostname


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only, replacing it atomically."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    os.chmod(temporary, 0o600)  # an existing file keeps its old mode through O_CREAT
    os.replace(temporary, path)


def _token_valid(node: Node, token: str) -> bool:
    return NodeCredential.objects.filter(node=node, token_sha256=token_sha256(token), revoked_at__isnull=True).exists()


def node_token_ensure(*, node: Node) -> str:
    """The node's saved token if it still authenticates; else revoke its tokens, issue and save a new one."""
    path = token_path(node.hostname)
    saved = path.read_text().strip() if path.exists() else ""
    if saved and _token_valid(node, saved):
        return saved
    credentials_revoke(node=node)
    token = credential_issue(node=node)
    _write_private(path, token + "\n")
    return token


def node_list_write(*, rows: Iterable[tuple[str, str, int, str, str]]) -> Path:
    """``nodes.tsv`` for ``bin/demo-collectors``: hostname, --simulate, --seed, --simulate-llm, --simulate-pattern."""
    path = demo_dir() / "nodes.tsv"
    _write_private(path, "".join("\t".join(map(str, row)) + "\n" for row in rows))
    return path
