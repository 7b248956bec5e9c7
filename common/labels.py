"""Short names for the pages: a label that fits a table cell, an axis or a legend, the full name in its hover."""

from __future__ import annotations

from collections.abc import Sequence

LABEL_CHARS = 24  # about 150 px at the charts' 12 px font: an axis label or a legend entry, never clipped
_VENDOR_PREFIXES = ("NVIDIA ", "GeForce ")


def short_name(name: str, chars: int = LABEL_CHARS) -> str:
    """``meta-llama/Llama-3.1-8B-Instruct`` as ``Llama-3.1-8B-Instruct`` (no organization), ``NVIDIA GeForce
    RTX 4090`` as ``RTX 4090``; past ``chars``, its head and tail around an ellipsis (the size stays readable)."""
    if "://" in name:  # a URL (two endpoints of one model): cut anywhere, it no longer says which
        return name
    # An organization prefix ("meta-llama/") only: a phrase keeps its slashes.
    is_repo_id = "/" in name and not any(c.isspace() for c in name)
    short = name.rsplit("/", 1)[-1] if is_repo_id else name
    for prefix in _VENDOR_PREFIXES:
        short = short.removeprefix(prefix)
    short = short.strip() or name
    if len(short) <= chars:
        return short
    return _middle_dropped(short, chars)


def _middle_dropped(name: str, chars: int) -> str:
    """Whole ``-`` parts dropped from the middle (``DeepSeek-R1-…-Qwen-14B``), else characters."""
    parts = name.split("-")
    head, tail = parts[: (len(parts) + 1) // 2], parts[(len(parts) + 1) // 2 :]
    while len(head) + len(tail) > 2:
        if len(head) >= len(tail):
            head.pop()
        else:
            tail.pop(0)
        shown = "-".join([*head, "…", *tail])
        if len(shown) <= chars:
            return shown
    keep = chars // 2 - 1
    return f"{name[: chars - keep - 1]}…{name[-keep:]}"


def short_labels(names: Sequence[str], chars: int = LABEL_CHARS) -> dict[str, str]:
    """Each name's short label; where two would read the same, both keep their full names."""
    shorts = {name: short_name(name, chars) for name in names}
    taken = [shorts[name] for name in set(names)]
    return {name: short if taken.count(short) == 1 else name for name, short in shorts.items()}


def short_compound(label: str, chars: int = LABEL_CHARS) -> str:
    """A `` · ``-joined label (``enterprise · h100-pcie · meta-llama/Llama-3.1-8B-Instruct``), each part short."""
    return " · ".join(short_name(part, chars) for part in label.split(" · "))
