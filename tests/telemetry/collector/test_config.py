"""Options from the command line, the environment and a config file; bad values fail loudly."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from telemetry.collector.config import load_settings
from telemetry.collector.serving import ServingTarget
from telemetry.collector.spool import DEFAULT_MAX_BYTES

BASE = ["--server", "https://wl.example.com/", "--token", "t0k"]


def test_defaults_for_a_live_nvml_collector() -> None:
    settings = load_settings(BASE, {})

    assert settings.server == "https://wl.example.com" and settings.token == "t0k"
    assert (settings.sample_interval_s, settings.batch_seconds, settings.serving_interval_s) == (1.0, 10.0, 5.0)
    assert settings.spool_max_bytes == DEFAULT_MAX_BYTES and not settings.simulate and not settings.backfill


def test_environment_fills_in_and_the_command_line_wins(tmp_path: Path) -> None:
    env = {
        "WATTLEDGER_SERVER": "http://10.0.0.1:8000",
        "WATTLEDGER_TOKEN": "from-env",
        "WATTLEDGER_SAMPLE_INTERVAL": "2",
        "WATTLEDGER_SERVING": "http://127.0.0.1:8000/metrics@0,1 http://127.0.0.1:8001/metrics@2",
        "WATTLEDGER_SPOOL": str(tmp_path),
        "WATTLEDGER_SPOOL_MAX_BYTES": "64MiB",
    }

    settings = load_settings(["--token", "from-cli"], env)

    assert settings.server == "http://10.0.0.1:8000" and settings.token == "from-cli"
    assert settings.sample_interval_s == 2.0 and settings.spool_dir == tmp_path
    assert settings.spool_max_bytes == 64 * 1024**2
    assert settings.serving == (
        ServingTarget("http://127.0.0.1:8000/metrics", ("0", "1")),
        ServingTarget("http://127.0.0.1:8001/metrics", ("2",)),
    )


def test_toml_config_file_under_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "collector.toml"
    config.write_text(
        'server = "http://wl:8000"\ntoken = "from-file"\nbatch_seconds = 30\n'
        'serving = ["http://127.0.0.1:8000/metrics"]\nsimulate = "rtx-4090:4"\nsimulate-serving = true\n'
    )

    settings = load_settings(["--config", str(config)], {"WATTLEDGER_TOKEN": "from-env"})

    assert settings.server == "http://wl:8000" and settings.token == "from-env"
    assert settings.batch_seconds == 30.0 and len(settings.simulate) == 4 and settings.simulate_serving
    assert settings.serving == (ServingTarget("http://127.0.0.1:8000/metrics", ()),)


def test_ini_config_file_and_token_file(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("secret-from-file\n")
    config = tmp_path / "collector.ini"
    config.write_text(f"[wattledger]\nserver = http://wl:8000\ntoken-file = {tmp_path / 'token'}\nseed = 42\n")

    settings = load_settings([], {"WATTLEDGER_CONFIG": str(config)})

    assert settings.token == "secret-from-file" and settings.seed == 42


def test_dcgm_exporters_repeat_on_the_command_line_and_split_in_the_environment() -> None:
    argv = [*BASE, "--dcgm-exporter", "http://127.0.0.1:9400/metrics", "--dcgm-exporter", "http://127.0.0.1:9401/"]

    from_cli = load_settings(argv, {})
    from_env = load_settings(BASE, {"WATTLEDGER_DCGM_EXPORTER": "http://a:9400/metrics http://b:9400/metrics"})

    assert from_cli.dcgm_exporters == ("http://127.0.0.1:9400/metrics", "http://127.0.0.1:9401")
    assert from_env.dcgm_exporters == ("http://a:9400/metrics", "http://b:9400/metrics")
    assert load_settings(BASE, {}).dcgm_exporters == ()


def test_dcgm_exporters_in_a_toml_config_file(tmp_path: Path) -> None:
    config = tmp_path / "collector.toml"
    config.write_text('dcgm_exporter = ["http://127.0.0.1:9400/metrics", "http://127.0.0.1:9401/metrics"]\n')

    settings = load_settings([*BASE, "--config", str(config)], {})

    assert settings.dcgm_exporters == ("http://127.0.0.1:9400/metrics", "http://127.0.0.1:9401/metrics")


def test_backfill_window_in_utc_with_its_larger_default_batch() -> None:
    settings = load_settings(
        [*BASE, "--simulate", "h100-sxm:8", "--start", "2025-06-01T00:00:00Z", "--end", "2025-06-01T03:00:00+02:00"], {}
    )

    assert settings.backfill and settings.batch_seconds == 60.0
    assert settings.start == datetime(2025, 6, 1, tzinfo=UTC) and settings.end == datetime(2025, 6, 1, 1, tzinfo=UTC)


def test_simulate_resets_alone_means_every_six_hours() -> None:
    assert load_settings([*BASE, "--simulate", "l4:1", "--simulate-resets"], {}).simulate_resets_h == 6.0
    assert load_settings([*BASE, "--simulate", "l4:1", "--simulate-resets", "0.5"], {}).simulate_resets_h == 0.5


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--token", "t"], {}, "server"),
        (["--server", "http://wl"], {}, "token"),
        ([*BASE, "--sample-interval", "0"], {}, "--sample-interval"),
        ([*BASE], {"WATTLEDGER_SAMPLE_INTERVAL": "fast"}, "WATTLEDGER_SAMPLE_INTERVAL"),
        (["--server", "ftp://wl", "--token", "t"], {}, "http"),
        ([*BASE, "--simulate", "h200:8"], {}, "unknown GPU model"),
        ([*BASE, "--start", "2025-06-01T00:00:00Z"], {}, "both --start and --end"),
        ([*BASE, "--simulate", "l4:1", "--start", "2025-06-01T00:00:00", "--end", "2025-06-02T00:00:00Z"], {}, "zone"),
        ([*BASE, "--start", "2025-06-01T00:00:00Z", "--end", "2025-06-02T00:00:00Z"], {}, "needs --simulate"),
        ([*BASE, "--simulate-serving"], {}, "need --simulate"),
        ([*BASE, "--spool-max-bytes", "12 parsecs"], {}, "size"),
        ([*BASE, "--resolution", "0.5"], {}, "--resolution must be at least --sample-interval"),
        (BASE, {"WATTLEDGER_RESOLUTION": "301"}, "WATTLEDGER_RESOLUTION: must be between"),
        ([*BASE, "--serving", "http://h/metrics", "--serving-interval", "0.1"], {}, "--serving-interval"),
        ([*BASE, "--simulate", "l4:1", "--dcgm-exporter", "http://h:9400/metrics"], {}, "exclude each other"),
        ([*BASE, "--dcgm-exporter", "h:9400/metrics"], {}, "--dcgm-exporter: must be an http:// or https:// URL"),
    ],
)
def test_bad_values_exit_2_naming_their_source(
    argv: list[str], env: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        load_settings(argv, env)

    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_unknown_config_keys_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text('server = "http://wl"\ntoken = "t"\nsample_intervall = 2\n')

    with pytest.raises(SystemExit):
        load_settings(["--config", str(config)], {})

    assert "sample-intervall" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("toml", "config hostname: must not contain control characters, found U+0000 at position 3"),
        ("env", "WATTLEDGER_HOSTNAME: must not contain control characters, found U+000A at position 3"),
    ],
)
def test_a_hostname_with_control_characters_is_refused_at_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, expected: str
) -> None:
    config = tmp_path / "c.toml"
    config.write_text('server = "http://wl"\ntoken = "t"\nhostname = "gpu\\u0000host"\n')
    argv, env = (["--config", str(config)], {}) if where == "toml" else (BASE, {"WATTLEDGER_HOSTNAME": "gpu\nhost"})

    with pytest.raises(SystemExit) as stopped:
        load_settings(argv, env)

    assert stopped.value.code == 2
    assert expected in capsys.readouterr().err
