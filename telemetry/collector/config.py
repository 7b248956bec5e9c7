"""Command line, environment and config file to :class:`Settings`, failing loudly on bad values.

Precedence: command line, then ``WATTLEDGER_*`` environment variables, then the
``--config`` file (TOML, or INI with a ``[wattledger]`` section; keys are the
long option names, with ``-`` or ``_``), then the defaults.
"""

from __future__ import annotations

import argparse
import configparser
import os
import re
import socket
import tomllib
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .hostmeter import host_meter_from_spec
from .serving import ServingTarget, parse_serving_target
from .simprofiles import LLMS
from .simulated import MODELS, PATTERNS, GpuModel, parse_simulate_spec
from .spool import DEFAULT_MAX_BYTES, default_spool_dir

ENV_PREFIX = "WATTLEDGER_"
LIVE_BATCH_SECONDS = 10.0
BACKFILL_BATCH_SECONDS = 60.0


@dataclass(frozen=True)
class Settings:
    server: str
    token: str
    hostname: str
    sample_interval_s: float
    resolution_s: float
    batch_seconds: float
    serving: tuple[ServingTarget, ...]
    serving_interval_s: float
    spool_dir: Path
    spool_max_bytes: int
    http_timeout_s: float
    max_backoff_s: float
    shutdown_grace_s: float
    simulate: tuple[GpuModel, ...]
    simulate_serving: bool
    simulate_resets_h: float
    simulate_serving_restarts_h: float
    seed: int
    start: datetime | None
    end: datetime | None
    log_level: str
    host_meter: str = "none"
    simulate_llm: str = LLMS["8b"]
    simulate_pattern: str = "steady"
    dcgm_exporters: tuple[str, ...] = ()

    @property
    def backfill(self) -> bool:
        return self.start is not None


# --- converters: each takes what a user wrote (str, or a TOML value) and returns it typed ---------


def _seconds(low: float, high: float) -> Callable[[Any], float]:
    def convert(value: Any) -> float:
        seconds = float(value)
        if not low <= seconds <= high:
            raise ValueError(f"must be between {low:g} and {high:g} seconds, got {value!r}")
        return seconds

    return convert


def _url(value: Any) -> str:
    url = str(value).strip()
    if not re.match(r"^https?://[^/\s]+", url):
        raise ValueError(f"must be an http:// or https:// URL, got {value!r}")
    return url.rstrip("/")


_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]i?b?|b)?\s*$", re.IGNORECASE)


def _size(value: Any) -> int:
    """Bytes, with an optional K/M/G (x1024) suffix: ``536870912``, ``512MiB``, ``1G``."""
    found = _SIZE.match(str(value))
    if found is None:
        raise ValueError(f"must be a size in bytes such as 512MiB, got {value!r}")
    scale = {"k": 1024, "m": 1024**2, "g": 1024**3}.get((found.group(2) or "b")[0].lower(), 1)
    size = int(found.group(1)) * scale
    if size < 1024**2:
        raise ValueError(f"must be at least 1 MiB, got {value!r}")
    return size


def _utc(value: Any) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).strip())
    if moment.tzinfo is None:
        raise ValueError(f"must say its time zone, e.g. 2025-01-01T00:00:00Z, got {value!r}")
    return moment.astimezone(UTC)


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in {"1", "true", "yes", "on", "0", "false", "no", "off", ""}:
        raise ValueError(f"must be true or false, got {value!r}")
    return text in {"1", "true", "yes", "on"}


def _host_meter(value: Any) -> str:
    spec = str(value).strip()
    host_meter_from_spec(spec)  # refuses what it cannot read, with the option's name
    return spec


def _serving(value: Any) -> tuple[ServingTarget, ...]:
    items = value if isinstance(value, (list, tuple)) else re.split(r"[\s;]+", str(value))
    return tuple(parse_serving_target(str(item)) for item in items if str(item).strip())


def _urls(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, (list, tuple)) else re.split(r"[\s;]+", str(value))
    return tuple(_url(item) for item in items if str(item).strip())


def _resets(value: Any) -> float:
    hours = float(value)
    if hours < 0 or (0 < hours < 1 / 60):
        raise ValueError(f"must be 0 (off) or at least one minute (in hours), got {value!r}")
    return hours


def _llm(value: Any) -> str:
    """A short name (8b, 14b) or the full name of a simulated LLM."""
    name = LLMS.get(str(value).lower(), str(value))
    if name not in LLMS.values():
        raise ValueError(f"unknown LLM {value!r}; known: {', '.join(LLMS)} ({', '.join(LLMS.values())})")
    return name


def _pattern(value: Any) -> str:
    if str(value) not in PATTERNS:
        raise ValueError(f"unknown load pattern {value!r}; known: {', '.join(PATTERNS)}")
    return str(value)


def _hostname(value: Any) -> str:
    """A host name as the server shows it: 1 to 253 characters, no control characters (NUL, newline, ...)."""
    name = str(value)
    bad = next((i for i, char in enumerate(name) if unicodedata.category(char) == "Cc"), None)
    if bad is not None:
        raise ValueError(f"must not contain control characters, found U+{ord(name[bad]):04X} at position {bad}")
    if not name.strip() or len(name) > 253:
        raise ValueError(f"must be 1 to 253 characters, got {len(name)}")
    return name


def _level(value: Any) -> str:
    level = str(value).strip().upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
        raise ValueError(f"must be debug, info, warning or error, got {value!r}")
    return level


@dataclass(frozen=True)
class Option:
    name: str  # long option, without --
    convert: Callable[[Any], Any]
    default: Any
    help: str
    metavar: str | None = None
    flag: bool = False  # takes no value on the command line


OPTIONS: tuple[Option, ...] = (
    Option(
        "server", _url, None, "the Wattledger server's base URL, e.g. https://wattledger.example.com (required)", "URL"
    ),
    Option("token", str, None, "this node's ingest token (required, or --token-file)", "TOKEN"),
    Option("token-file", str, None, "read the token from this file instead (keeps it out of `ps`)", "FILE"),
    Option("hostname", _hostname, None, "the name this node reports (default: the host name)", "NAME"),
    Option(
        "sample-interval",
        _seconds(0.05, 3600),
        1.0,
        "seconds between GPU samples, on the monotonic clock (default 1)",
        "S",
    ),
    Option(
        "resolution",
        _seconds(0.05, 300),
        None,
        "seconds of GPU samples averaged on the host into one uploaded sample (power, utilization, memory, "
        "temperature averaged; the energy counter's last reading kept, so energy stays exact); default: the "
        "sample interval (every sample sent). Keep it under the server's TELEMETRY_GPU_MAX_GAP_S (30 s)",
        "S",
    ),
    Option(
        "batch-seconds",
        _seconds(0.1, 3600),
        None,
        f"seconds of samples per batch (default {LIVE_BATCH_SECONDS:g} live, {BACKFILL_BATCH_SECONDS:g} in a backfill)",
        "S",
    ),
    Option(
        "serving",
        _serving,
        (),
        "an inference server's Prometheus /metrics (vLLM, TGI, SGLang), optionally with the GPUs it runs on, "
        "by index or UUID, e.g. http://127.0.0.1:8000/metrics@0,1 (without @: all of the host's GPUs); "
        "repeat for several (in the environment or config file: separated by spaces)",
        "URL[@GPU,...]",
    ),
    Option(
        "dcgm-exporter",
        _urls,
        (),
        "read the GPUs from NVIDIA dcgm-exporter's Prometheus page instead of NVML, e.g. "
        "http://127.0.0.1:9400/metrics (one GET per sample tick); repeat for several (in the environment "
        "or config file: separated by spaces)",
        "URL",
    ),
    Option(
        "serving-interval", _seconds(1, 600), 5.0, "seconds between scrapes of the inference servers (default 5)", "S"
    ),
    Option(
        "spool",
        Path,
        None,
        f"the spool directory, where batches wait until acknowledged (default {default_spool_dir()})",
        "DIR",
    ),
    Option(
        "spool-max-bytes",
        _size,
        DEFAULT_MAX_BYTES,
        "the spool's bound on disk; past it the oldest batches are dropped and counted "
        "(default 512MiB: about two weeks of 8 GPUs sampled at 1 Hz)",
        "SIZE",
    ),
    Option(
        "http-timeout",
        _seconds(1, 300),
        10.0,
        "seconds before an HTTP request to the server gives up (default 10)",
        "S",
    ),
    Option("max-backoff", _seconds(1, 3600), 60.0, "the longest wait between retries, in seconds (default 60)", "S"),
    Option(
        "shutdown-grace",
        _seconds(0, 300),
        5.0,
        "on SIGTERM, seconds spent sending what is left before exiting; the rest stays spooled (default 5)",
        "S",
    ),
    Option(
        "simulate",
        parse_simulate_spec,
        (),
        f"simulate GPUs instead of reading NVML: MODEL:COUNT[,MODEL:COUNT], models: {', '.join(MODELS)}",
        "SPEC",
    ),
    Option(
        "simulate-serving",
        _bool,
        False,
        "with --simulate: also simulate a vLLM endpoint serving one LLM (--simulate-llm) on the node's GPUs",
        flag=True,
    ),
    Option(
        "simulate-llm",
        _llm,
        LLMS["8b"],
        f"with --simulate-serving: the LLM served, {' or '.join(LLMS)} (default 8b: {LLMS['8b']})",
        "LLM",
    ),
    Option(
        "simulate-pattern",
        _pattern,
        "steady",
        f"with --simulate: the weekly load pattern, {', '.join(PATTERNS)} (default steady: every day alike; "
        "spare: idle nights and weekend hours)",
        "NAME",
    ),
    Option(
        "simulate-resets",
        _resets,
        0.0,
        "with --simulate: reload the simulated driver (energy counters restart) every HOURS "
        "(default 0: never; the option alone: 6)",
        "HOURS",
    ),
    Option(
        "simulate-serving-restarts",
        _resets,
        0.0,
        "with --simulate-serving: restart the simulated inference server (token counters restart, new epoch) "
        "every HOURS after its start (default 0: only when the driver reloads)",
        "HOURS",
    ),
    Option("seed", int, 0, "with --simulate: the random seed; the same seed gives the same samples (default 0)", "N"),
    Option(
        "start",
        _utc,
        None,
        "with --simulate and --end: backfill from this ISO-8601 UTC time as fast as possible, then exit",
        "TIME",
    ),
    Option("end", _utc, None, "the backfill's end (ISO-8601 UTC), exclusive", "TIME"),
    Option(
        "host-meter",
        _host_meter,
        "none",
        "the host's own power meter, sent as the node boundary: none, ipmi (ipmitool dcmi power reading), "
        "redfish=URL (the BMC's PowerControl), rapl (CPU packages only) or auto (default none: the server "
        "models host power from the hardware profile)",
        "METER",
    ),
    Option(
        "log-level",
        _level,
        "INFO",
        "debug (one line per batch), info (summaries), warning or error (default info)",
        "LEVEL",
    ),
)


def env_name(option: Option) -> str:
    return ENV_PREFIX + option.name.upper().replace("-", "_")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m telemetry.collector",
        description="Wattledger collector: samples this host's GPUs (NVML or dcgm-exporter) and inference servers, "
        "spools batches on disk and sends them to the Wattledger server.",
        epilog="Every option can also be set in the environment (the name shown) or in the --config file "
        "(TOML, or INI with a [wattledger] section; keys are option names). The command line wins, then "
        "the environment, then the file. Exit status: 0 done or stopped by SIGTERM/SIGINT; 1 a backfill "
        "ended with refused batches; 2 bad configuration or NVML not available.",
    )
    parser.add_argument("--config", metavar="FILE", help=f"read options from this file (env {ENV_PREFIX}CONFIG)")
    for option in OPTIONS:
        _add(parser, option)
    return parser


def _add(parser: argparse.ArgumentParser, option: Option) -> None:
    dest = option.name.replace("-", "_")
    text = f"{option.help} (env {env_name(option)})"
    if option.name == "simulate-resets":
        parser.add_argument("--simulate-resets", dest=dest, nargs="?", const="6", metavar="HOURS", help=text)
    elif option.flag:
        parser.add_argument(f"--{option.name}", dest=dest, action="store_const", const="true", help=text)
    elif option.name in {"serving", "dcgm-exporter"}:
        parser.add_argument(f"--{option.name}", dest=dest, action="append", metavar=option.metavar, help=text)
    else:
        parser.add_argument(f"--{option.name}", dest=dest, metavar=option.metavar, help=text)


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        if path.suffix == ".toml":
            with open(path, "rb") as handle:
                data: Mapping[str, Any] = tomllib.load(handle)
            data = data.get("wattledger", data)
        else:
            ini = configparser.ConfigParser()
            ini.read_string(path.read_text())
            data = dict(ini["wattledger"]) if ini.has_section("wattledger") else dict(ini.defaults())
    except (OSError, ValueError, configparser.Error) as exc:  # TOMLDecodeError is a ValueError
        raise ValueError(f"cannot read config file {path}: {exc}") from None
    return {str(key).replace("_", "-"): value for key, value in data.items()}


def _raw_values(
    args: argparse.Namespace, environ: Mapping[str, str], file: Mapping[str, Any]
) -> dict[str, tuple[str, Any]]:
    """Per option, where its value came from and what was written, by precedence."""
    raw: dict[str, tuple[str, Any]] = {}
    for option in OPTIONS:
        given = getattr(args, option.name.replace("-", "_"))
        if given is not None:
            raw[option.name] = (f"--{option.name}", given)
        elif env_name(option) in environ:
            raw[option.name] = (env_name(option), environ[env_name(option)])
        elif option.name in file:
            raw[option.name] = (f"config {option.name}", file[option.name])
    return raw


def _convert(raw: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for option in OPTIONS:
        if option.name not in raw:
            values[option.name] = option.default
            continue
        source, value = raw[option.name]
        try:
            values[option.name] = option.convert(value)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{source}: {exc}") from None
    return values


def load_settings(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Parse and validate everything; a bad value exits with status 2 and a message naming its source."""
    environ = os.environ if environ is None else environ
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = args.config or environ.get(f"{ENV_PREFIX}CONFIG")
        file = read_config_file(Path(config)) if config else {}
        unknown = set(file) - {option.name for option in OPTIONS}
        if unknown:
            raise ValueError(f"config file {config}: unknown keys {', '.join(sorted(unknown))}")
        return _settings(_convert(_raw_values(args, environ, file)))
    except ValueError as exc:
        parser.error(str(exc))


def _settings(v: dict[str, Any]) -> Settings:
    token = _token(v["token"], v["token-file"])
    _check_modes(v)
    backfill = v["start"] is not None
    return Settings(
        server=v["server"],
        token=token,
        hostname=v["hostname"] or _hostname(socket.gethostname()),
        sample_interval_s=v["sample-interval"],
        resolution_s=v["resolution"] or v["sample-interval"],
        batch_seconds=v["batch-seconds"] or (BACKFILL_BATCH_SECONDS if backfill else LIVE_BATCH_SECONDS),
        serving=v["serving"],
        serving_interval_s=v["serving-interval"],
        spool_dir=v["spool"] or default_spool_dir(),
        spool_max_bytes=v["spool-max-bytes"],
        http_timeout_s=v["http-timeout"],
        max_backoff_s=v["max-backoff"],
        shutdown_grace_s=v["shutdown-grace"],
        simulate=tuple(v["simulate"]),
        simulate_serving=v["simulate-serving"],
        simulate_resets_h=v["simulate-resets"],
        simulate_serving_restarts_h=v["simulate-serving-restarts"],
        seed=v["seed"],
        simulate_llm=v["simulate-llm"],
        simulate_pattern=v["simulate-pattern"],
        start=v["start"],
        end=v["end"],
        log_level=v["log-level"],
        host_meter=v["host-meter"],
        dcgm_exporters=v["dcgm-exporter"],
    )


def _token(token: str | None, token_file: str | None) -> str:
    if token_file:
        try:
            token = Path(token_file).read_text().strip()
        except OSError as exc:
            raise ValueError(f"--token-file: {exc}") from None
    if not token:
        raise ValueError(f"a node token is required: --token, --token-file or {ENV_PREFIX}TOKEN")
    return token


def _check_modes(v: dict[str, Any]) -> None:
    if v["server"] is None:
        raise ValueError(f"the server's URL is required: --server or {ENV_PREFIX}SERVER")
    if (v["start"] is None) != (v["end"] is None):
        raise ValueError("a backfill needs both --start and --end")
    if v["start"] is not None and v["start"] >= v["end"]:
        raise ValueError("--start must be before --end")
    if v["simulate"] and v["dcgm-exporter"]:
        raise ValueError("--simulate and --dcgm-exporter exclude each other: GPUs are simulated or read, not both")
    if v["start"] is not None and (not v["simulate"] or v["serving"]):
        raise ValueError(
            "a backfill (--start/--end) needs --simulate and no --serving: real GPUs and servers have no past"
        )
    if (v["simulate-serving"] or v["simulate-resets"]) and not v["simulate"]:
        raise ValueError("--simulate-serving and --simulate-resets need --simulate")
    if v["simulate-serving-restarts"] and not v["simulate-serving"]:
        raise ValueError("--simulate-serving-restarts needs --simulate-serving")
    if (v["resolution"] or 0) and v["resolution"] < v["sample-interval"]:
        raise ValueError("--resolution must be at least --sample-interval")
    if (v["batch-seconds"] or 0) and v["batch-seconds"] < v["sample-interval"]:
        raise ValueError("--batch-seconds must be at least --sample-interval")
