"""The simulator's profiles: the study's measured points, the power curve, and the ratios they imply."""

from __future__ import annotations

import pytest

from telemetry.collector.simprofiles import LLAMA_8B, POWER, QWEN_14B, serving_profile


def test_power_is_idle_at_no_load_the_board_limit_at_full_load_and_concave_between() -> None:
    rtx, h100 = POWER["rtx-4090"], POWER["h100-pcie"]

    assert (rtx.power_w(0.0), rtx.power_w(1.0)) == (25, 450)
    assert (h100.power_w(0.0), h100.power_w(1.0)) == (50, 350)
    # half load: idle + span x 0.5 ** 0.2 = idle + span x 0.87055
    assert rtx.power_w(0.5) == pytest.approx(25 + 425 * 0.87055, abs=0.01)  # 394.98 W, not 237.5 W (linear)
    assert h100.power_w(0.5) == pytest.approx(50 + 300 * 0.87055, abs=0.01)  # 311.17 W
    # the H100 SXM against ML.ENERGY's measured points (Llama 3.1 8B): within 25 W of each
    sxm = POWER["h100-sxm"]
    for load, measured_w in ((0.109, 486), (0.346, 560), (0.525, 610), (0.718, 669), (1.0, 688)):
        assert sxm.power_w(load) == pytest.approx(measured_w, abs=25), load
    assert rtx.power_w(-0.1) == 25 and rtx.power_w(1.2) == 450


def test_latency_is_the_studys_at_its_measured_points_and_linear_between() -> None:
    rtx_8b, rtx_14b = serving_profile("rtx-4090", LLAMA_8B), serving_profile("rtx-4090", QWEN_14B)

    at_full = rtx_8b.ttft_at(1.0)  # 32 QPS: 162.9 ms median, 330.5 ms P99
    assert (at_full.p50_s, at_full.p99_s) == pytest.approx((0.1629, 0.3305))
    assert rtx_8b.ttft_at(0.0).p99_s == pytest.approx(0.1107)  # below the 1 QPS run (load 0.128): held
    # halfway (in load) between the 14B's 1 QPS point (107.7 of 312 tokens/s: load 0.3452) and full load
    middle = rtx_14b.ttft_at((107.7 / 312 + 1) / 2)
    assert middle.p99_s == pytest.approx((1.0319 + 0.6387) / 2)
    assert rtx_14b.itl_at(1.0).p50_s == pytest.approx(0.0389)


@pytest.mark.parametrize(
    ("llm", "enterprise_j", "consumer_j", "ratio"),
    [
        # 350 W / 2,692.8 tokens/s and 450 W / 1,645.9 tokens/s
        (LLAMA_8B, 0.12998, 0.27341, 2.103),
        # 350 W / 1,506.5 and 450 W / 312.0 (two cards at 900 W for 624 tokens/s)
        (QWEN_14B, 0.23233, 1.44231, 6.208),
    ],
)
def test_energy_per_output_token_at_full_load_has_the_studys_ratio(
    llm: str, enterprise_j: float, consumer_j: float, ratio: float
) -> None:
    h100 = POWER["h100-pcie"].power_w(1.0) / serving_profile("h100-pcie", llm).output_tokens_per_s_per_gpu
    rtx = POWER["rtx-4090"].power_w(1.0) / serving_profile("rtx-4090", llm).output_tokens_per_s_per_gpu

    assert (h100, rtx, rtx / h100) == pytest.approx((enterprise_j, consumer_j, ratio), abs=0.001)


def test_an_unknown_pair_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="no serving profile"):
        serving_profile("rtx-4090", "mistralai/Mistral-7B")
