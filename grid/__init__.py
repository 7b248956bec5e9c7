"""Grid carbon intensity: shipped annual averages and live hourly providers.

Everything about grid intensity lives in this package. The package and the
provider modules are pure of Django (no ORM, no settings), so they can be
imported and tested anywhere; an import-linter contract keeps them so. The
Django parts are submodules their users import by name, never re-exported here:

- ``models``: stored hourly values and the fetch bookkeeping (app label ``accounting``);
- ``store``: services that store and fetch, and the selector ``intensity_for_hours``;
- ``api``: the CSV upload endpoint; ``urls``: its route;
- ``tasks``: the hourly Celery fetch.

See each module's docstring for the API shapes it speaks and the rules it applies.
"""

from grid.annual import AnnualIntensity, AnnualProvider, annual_intensity, marginal_intensity
from grid.carbonintensity_uk import CarbonIntensityUKProvider
from grid.csv_upload import CsvError, parse_intensity_csv
from grid.electricitymaps import ElectricityMapsProvider
from grid.errors import (
    AuthError,
    BadResponse,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
    RequestRejected,
    UnsupportedZone,
)
from grid.intensity import (
    AVERAGE,
    MARGINAL,
    HourlyIntensity,
    IntensityProvider,
    Kind,
    gco2_per_kwh_from_lbs_per_mwh,
    quantize_intensity,
)
from grid.registry import (
    PROVIDER_NAMES,
    ConfiguredProvider,
    config_from_env,
    parse_grid_providers,
    provider_for,
    providers_for_zone,
    providers_from_env,
)
from grid.scheduling import HourRange, backoff_delay_s, missing_hours, retry_delay_s
from grid.watttime import SignalIndex, WattTimeProvider

__all__ = [
    "AVERAGE",
    "MARGINAL",
    "PROVIDER_NAMES",
    "AnnualIntensity",
    "AnnualProvider",
    "AuthError",
    "BadResponse",
    "CarbonIntensityUKProvider",
    "ConfiguredProvider",
    "CsvError",
    "ElectricityMapsProvider",
    "HourRange",
    "HourlyIntensity",
    "IntensityProvider",
    "Kind",
    "ProviderError",
    "ProviderUnavailable",
    "RateLimited",
    "RequestRejected",
    "SignalIndex",
    "UnsupportedZone",
    "WattTimeProvider",
    "annual_intensity",
    "backoff_delay_s",
    "config_from_env",
    "gco2_per_kwh_from_lbs_per_mwh",
    "marginal_intensity",
    "missing_hours",
    "parse_grid_providers",
    "parse_intensity_csv",
    "provider_for",
    "providers_for_zone",
    "providers_from_env",
    "quantize_intensity",
    "retry_delay_s",
]
