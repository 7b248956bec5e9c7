from typing import Any

from django.apps import AppConfig


class AccountingConfig(AppConfig):
    """The ledger: prices, tariffs, PUE, assets, hardware profiles and node-hour lines (label ``accounting``)."""

    name = "accounting"
    verbose_name = "Ledger"

    def ready(self) -> None:
        from grid.signals import intensity_stored

        intensity_stored.connect(_intensity_stored, dispatch_uid="accounting.intensity_stored")


def _intensity_stored(*, since: Any, now: Any, **_: Any) -> int:
    """New grid values re-open the ledger hours they change."""
    from accounting.node_hour_lines import ledger_mark_intensity_since

    return ledger_mark_intensity_since(since=since, now=now)
