"""When a deferrable class should run: the cheapest, cleanest window in a grid-intensity forecast.

A deferrable class's day of work takes ``run_h`` consecutive hours on its fleets
and must be done within ``deadline_h`` hours from now. Candidate windows are the
runs of ``run_h`` forecast hours starting at the current hour or later and ending
by the deadline (and within the forecast). Each is scored like the advisor
scores fleets: ``(1 - w) x electricity cost / max + w x gCO2e / max`` over the
candidates (``w`` the class's carbon weight); without a tariff, by carbon alone.
The saving is the chosen window against the first candidate: starting now, or where the forecast
holds no figure for the current hour, at its first hour (and said so).

A forecast of a marginal signal (WattTime MOER) gives the emissions the work
would cause at the margin, not an inventory figure: it is labelled marginal,
never added to the ledger's location-based carbon.

Pure arithmetic: nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from accounting.ledger.units import money_quantize
from accounting.tariff import Tariff, TariffError, Validity, tariff_price_at

ONE_HOUR = timedelta(hours=1)
DEFAULT_HORIZON_H = 48

OK = "ok"
NO_FORECAST = "no_forecast"
NO_WINDOW = "no_window"


@dataclass(frozen=True)
class ForecastHour:
    hour_start: datetime  # aware, UTC hour start
    gco2e_per_kwh: Decimal
    kind: str  # "average" or "marginal"
    source: str


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime
    mean_gco2e_per_kwh: float
    co2e_g: float
    electricity_cost: Decimal | None
    score: float = 0.0


@dataclass(frozen=True)
class WindowAdvice:
    status: str  # ok, no_forecast, no_window
    signal: str | None  # "average" or "marginal" (the forecast's kind)
    source: str | None
    best: Window | None
    now: Window | None
    saving_co2e_g: float | None
    saving_cost: Decimal | None
    currency: str | None
    explanation: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready; money rounded once, to the currency's minor unit (USD's without a currency)."""
        data = asdict(self)
        for key in ("best", "now"):
            if data[key] is not None:
                data[key] = {
                    name: value.isoformat() if isinstance(value, datetime) else self._text(value)
                    for name, value in data[key].items()
                }
        data["saving_cost"] = self._text(self.saving_cost)
        return data

    def _text(self, value: Any) -> Any:
        return str(money_quantize(value, self.currency or "USD")) if isinstance(value, Decimal) else value


def window_choose(
    *,
    forecast: Sequence[ForecastHour],
    now: datetime,
    deadline_h: int,
    run_h: int,
    facility_kwh_per_h: float,
    carbon_weight: float,
    tariff_periods: Sequence[Validity[Tariff]] = (),
    currency: str | None = None,
    horizon_h: int = DEFAULT_HORIZON_H,
) -> WindowAdvice:
    """The best window to run ``run_h`` hours drawing ``facility_kwh_per_h`` before ``now + deadline_h``."""
    if run_h < 1 or deadline_h < 1:
        raise ValueError("run_h and deadline_h must be at least 1 hour")
    first = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    last_end = first + timedelta(hours=min(deadline_h, horizon_h))
    hours = {h.hour_start.astimezone(UTC): h for h in forecast if first <= h.hour_start < last_end}
    if not hours:
        return WindowAdvice(NO_FORECAST, None, None, None, None, None, None, currency,
                            "No grid-intensity forecast for the site's zone: no window advised.")  # fmt: skip
    kinds = {h.kind for h in hours.values()}
    signal = "marginal" if "marginal" in kinds else "average"
    source = ", ".join(sorted({h.source for h in hours.values()}))
    windows = _windows(hours, first, last_end, run_h, facility_kwh_per_h, tariff_periods)
    if not windows:
        text = f"The forecast ({source}) holds no {run_h} consecutive hours before the deadline: no window advised."
        return WindowAdvice(NO_WINDOW, signal, source, None, None, None, None, currency, text)
    scored = _scored(windows, carbon_weight)
    best, start_now = min(scored, key=lambda w: (w.score, w.start)), scored[0]
    saving_cost = None
    if best.electricity_cost is not None and start_now.electricity_cost is not None:
        saving_cost = start_now.electricity_cost - best.electricity_cost
    saving_g = start_now.co2e_g - best.co2e_g
    text = _explained(best, start_now, first, signal, source, saving_g, saving_cost, currency, run_h, deadline_h)
    return WindowAdvice(OK, signal, source, best, start_now, saving_g, saving_cost, currency, text)


def _windows(
    hours: dict[datetime, ForecastHour],
    first: datetime,
    last_end: datetime,
    run_h: int,
    kwh_per_h: float,
    periods: Sequence[Validity[Tariff]],
) -> list[Window]:
    windows, start = [], first
    while start + run_h * ONE_HOUR <= last_end:
        span = [start + n * ONE_HOUR for n in range(run_h)]
        if all(hour in hours for hour in span):
            windows.append(_window(span, hours, kwh_per_h, periods))
        start += ONE_HOUR
    return windows


def _window(
    span: list[datetime], hours: dict[datetime, ForecastHour], kwh_per_h: float, periods: Sequence[Validity[Tariff]]
) -> Window:
    intensities = [float(hours[hour].gco2e_per_kwh) for hour in span]
    return Window(
        start=span[0],
        end=span[-1] + ONE_HOUR,
        mean_gco2e_per_kwh=sum(intensities) / len(intensities),
        co2e_g=sum(value * kwh_per_h for value in intensities),
        electricity_cost=_cost(span, kwh_per_h, periods),
    )


def _cost(span: list[datetime], kwh_per_h: float, periods: Sequence[Validity[Tariff]]) -> Decimal | None:
    if not periods:
        return None
    total = Decimal(0)
    for hour in span:
        try:
            price = tariff_price_at(periods, hour)
        except TariffError:
            return None
        if price is None:
            return None
        total += price.price_per_kwh * Decimal(repr(kwh_per_h))
    return total


def _scored(windows: list[Window], carbon_weight: float) -> list[Window]:
    costs = [w.electricity_cost for w in windows]
    weight = carbon_weight if all(c is not None for c in costs) else 1.0
    top_cost = max((float(c) for c in costs if c is not None), default=0.0) or 1.0
    top_g = max(w.co2e_g for w in windows) or 1.0
    return [
        Window(
            **{
                **asdict(w),
                "score": (1 - weight) * float(w.electricity_cost or 0) / top_cost + weight * w.co2e_g / top_g,
            }
        )
        for w in windows
    ]


def _explained(
    best: Window,
    start_now: Window,
    current_hour: datetime,
    signal: str,
    source: str,
    saving_g: float,
    saving_cost: Decimal | None,
    currency: str | None,
    run_h: int,
    deadline_h: int,
) -> str:
    when = f"{best.start:%Y-%m-%d %H:%M} to {best.end:%H:%M} UTC"
    label = "marginal (emissions caused at the margin)" if signal == "marginal" else "average"
    money = "" if saving_cost is None else f" and {saving_cost:.2f} {currency or ''} of electricity".rstrip()
    # The baseline is the earliest window: "now" only when the forecast holds the current hour.
    is_now = start_now.start == current_hour
    if best.start == start_now.start:
        run = f"Run now ({when})" if is_now else f"Run {when}, the earliest hours the forecast holds"
        return (
            f"{run}: no window of {run_h} h before the {deadline_h} h deadline is better in the "
            f"{label} forecast of {source}."
        )
    baseline = (
        "now" if is_now else f"at the forecast's first hours ({start_now.start:%H:%M} to {start_now.end:%H:%M} UTC)"
    )
    return (
        f"Run {when}: {best.mean_gco2e_per_kwh:.0f} against {start_now.mean_gco2e_per_kwh:.0f} gCO2e/kWh "
        f"{baseline} ({label} forecast of {source}), saving {saving_g / 1000:.3g} kgCO2e{money} against "
        f"{'starting now' if is_now else 'starting then'}; {run_h} h of work within the {deadline_h} h deadline."
    )
