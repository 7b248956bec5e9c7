"""A real Prometheus (``/usr/bin/prometheus``) on 127.0.0.1, scraping a stand-in dcgm-exporter every second."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.clients import free_port
from tests.helpers.dcgm_exporter import DcgmExporterStandIn
from tests.helpers.stub_server import Answer, Request, StubServer

PROMETHEUS = shutil.which("prometheus")
SKIP_REASON = "no prometheus binary on PATH (Debian: apt-get install prometheus)"


@dataclass
class RunningPrometheus:
    url: str
    process: subprocess.Popen[bytes]
    exporter: StubServer
    stand_in: DcgmExporterStandIn

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.exporter.stop()


def prometheus_started(
    stand_in: DcgmExporterStandIn, directory: Path, *, serving: StubServer | None = None, serving_host: str = ""
) -> RunningPrometheus:
    """Start the stand-in exporter and a Prometheus scraping it every 1 s; return once it has scraped it.

    ``serving``: a started stand-in inference server, scraped too (job ``vllm``), its series labelled
    ``hostname="<serving_host>"`` (as a relabelling would) when that is given."""
    assert PROMETHEUS is not None, SKIP_REASON
    exporter = StubServer(default=stand_in.answer).start()
    port = free_port()
    config = directory / "prometheus.yml"
    target = exporter.url.removeprefix("http://")
    jobs = f"  - job_name: dcgm\n    static_configs: [{{targets: ['{target}']}}]\n"
    if serving is not None:
        labels = f", labels: {{hostname: '{serving_host}'}}" if serving_host else ""
        jobs += f"  - job_name: vllm\n    static_configs: [{{targets: ['{serving.url.removeprefix('http://')}']{labels}}}]\n"
    config.write_text(
        f"global: {{scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}}\nscrape_configs:\n{jobs}"
    )
    process = subprocess.Popen(
        [
            PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL, stderr=(directory / "prometheus.log").open("wb"),
    )  # fmt: skip
    running = RunningPrometheus(f"http://127.0.0.1:{port}", process, exporter, stand_in)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            exporter.stop()
            raise RuntimeError(f"prometheus exited: {(directory / 'prometheus.log').read_text()[-2000:]}")
        if _has_scraped(running.url) and (serving is None or _has_scraped(running.url, "vllm:prompt_tokens_total")):
            return running
        time.sleep(0.2)
    running.stop()
    raise RuntimeError("prometheus did not scrape the stand-in exporter within 30 s")


def _has_scraped(url: str, metric: str = "DCGM_FI_DEV_POWER_USAGE") -> bool:
    query = urllib.parse.urlencode({"query": metric})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=1) as answer:
            return bool(json.load(answer)["data"]["result"])
    except (OSError, ValueError, KeyError):
        return False


@dataclass
class PrometheusServer:
    """A real Prometheus on 127.0.0.1 with the scrape config a test wrote, and its HTTP API."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def query(self, promql: str) -> list[dict[str, object]]:
        """The instant vector ``promql`` evaluates to now (``/api/v1/query``)."""
        address = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        with urllib.request.urlopen(address, timeout=5) as answer:
            found = json.load(answer)
        assert found["status"] == "success", found
        return list(found["data"]["result"])

    def targets(self) -> list[dict[str, object]]:
        """Every active scrape target with its health and last error (``/api/v1/targets``)."""
        with urllib.request.urlopen(f"{self.url}/api/v1/targets?state=active", timeout=5) as answer:
            return list(json.load(answer)["data"]["activeTargets"])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def prometheus_serving(scrape_configs: str, directory: Path) -> PrometheusServer:
    """Start a Prometheus scraping every 1 s with ``scrape_configs`` (YAML list items); return once it answers."""
    assert PROMETHEUS is not None, SKIP_REASON
    port = free_port()
    config = directory / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
        f"scrape_configs:\n{scrape_configs}"
    )
    log = directory / "prometheus.log"
    process = subprocess.Popen(
        [
            PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL, stderr=log.open("wb"),
    )  # fmt: skip
    server = PrometheusServer(f"http://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/-/ready", timeout=1) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError("prometheus was not ready within 30 s")


# --- a scripted Prometheus HTTP API: /api/v1/query_range over series the test defines -----------------

Values = Callable[[float], float | None]  # the series' value at a time (None: not scraped then)


@dataclass
class ScriptedSeries:
    labels: dict[str, str]  # with __name__
    value: Values


@dataclass
class ScriptedPrometheus:
    """Answers ``/api/v1/query_range`` as Prometheus does (``{"status": "success", "data": {"resultType":
    "matrix", "result": [...]}}``) for a metric name with label matchers (``name{a="x",b=~"y|z"}``) or a
    ``{__name__=~"a|b", c="x"}`` selector (``=`` and ``=~`` matchers; anchored, as PromQL's are), each
    series' values on the query's grid where ``value`` gives one."""

    series: list[ScriptedSeries] = field(default_factory=list)

    def add(self, name: str, labels: dict[str, str], value: Values) -> None:
        self.series.append(ScriptedSeries({"__name__": name, **labels}, value))

    def answer(self, request: Request) -> Answer:
        parts = urllib.parse.urlsplit(request.path)
        if parts.path != "/api/v1/query_range":
            return 404, {"Content-Type": "text/plain"}, b"404 page not found"
        query = urllib.parse.parse_qs(parts.query)
        text, start, end, step = query["query"][0], *(float(query[k][0]) for k in ("start", "end", "step"))
        wanted = _matcher(text)
        grid = [start + k * step for k in range(math.floor((end - start) / step + 1e-9) + 1)]
        result = []
        for series in self.series:
            if not wanted(series.labels):
                continue
            values = [[ts, repr(v)] for ts in grid if (v := series.value(ts)) is not None]
            if values:
                result.append({"metric": series.labels, "values": values})
        body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


_MATCHER = re.compile(r'\s*(\w+)\s*(=~|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')


def _matcher(selector: str) -> Callable[[dict[str, str]], bool]:
    """Whether a series' labels match a PromQL selector of ``=`` and ``=~`` matchers."""
    name, _, rest = selector.partition("{")
    matchers = [("__name__", "=", name.strip())] if name.strip() else []
    body = rest.removesuffix("}")
    while body.strip():
        found = _MATCHER.match(body)
        if found is None:
            raise ValueError(f"the stand-in reads = and =~ matchers only: {selector!r}")
        matchers.append((found[1], found[2], found[3]))
        body = body[found.end() :]

    def wanted(labels: dict[str, str]) -> bool:
        for label, op, value in matchers:
            have = labels.get(label, "")
            if (have != value) if op == "=" else (re.fullmatch(value, have) is None):
                return False
        return True

    return wanted
