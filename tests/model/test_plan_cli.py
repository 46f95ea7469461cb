"""``llmmath plan``: the answer, its JSON, the frontier drawn, and every malformed flag refused
with one line naming it (exit status 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_support import HALF_CHIP_TOML, run
from cli_support import private_registry as private_registry  # the autouse fixture

from llmmath.beyond import planning
from llmmath.beyond.plan_workers import WALLS, Stream, Targets
from llmmath.core.deployment import Deployment
from llmmath.core.dtypes import WeightFormat
from llmmath.core.setting import Setting

#: A small question: quick to search (workers of 1 and 2 chips).
BASE = ["plan", "Llama-3-8B", "--chips", "H100", "--rate", "4", "--input", "1000",
        "--output", "200", "--ttft", "1s@p99", "--tpot", "30ms@p99", "--max-chips", "2",
        "--requests", "200"]  # fmt: skip


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def with_flag(flag: str, value: str) -> list[str]:
    """BASE with ``flag`` set to ``value`` (replaced where BASE has it)."""
    argv = list(BASE)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
    else:
        argv += [flag, value]
    return argv


def test_plan_answers_with_the_package_s_search(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *BASE, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    (chip,) = data["chips"]
    stream = Stream(4.0, np.array([1000.0]), np.array([200.0]), max_chips=2,
                             n_requests=200)  # fmt: skip
    bf16 = WeightFormat.of(embeddings="bf16", attention="bf16", mlp="bf16", experts="bf16")
    dep = Deployment("Llama-3-8B", "H100", 2, weight_format=bf16)  # as the command reads it
    (expected,) = planning.plan(dep, {"H100": 2.0}, stream, Targets(1.0, 0.03))
    assert expected.best is not None
    assert chip["best"]["n_chips"] == expected.best.n_chips
    assert chip["best"]["ttft_s"] == pytest.approx(expected.best.ttft_s)
    assert chip["best"]["usd_per_million_output"] == pytest.approx(
        expected.best.usd_per_million_output
    )
    assert chip["best"]["ttft_s"] <= 1.0 and chip["best"]["tpot_s"] <= 0.03
    worker = expected.best.pools[-1].deployment
    assert chip["setting"] == Setting(worker, 1100.0).describe()
    assert {r["wall"] for r in chip["refused"]} <= {*WALLS, "costlier"}


def test_the_book_s_worked_question_reads_as_the_page_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """book/cli.md's prose: on H100 the cheapest is aggregated, and the disaggregated
    alternative (a prefill and a decode pool) needs no fewer chips (at a tie the command
    prefers aggregated); B200 has an answer too. The KV cache is bf16: --dtype fp8 sets the
    weights, and the preset names no checkpoint dtype."""
    question = ["plan", "Llama-3-70B", "--chips", "H100,B200", "--rate", "20", "--input",
                "2000", "--output", "500", "--ttft", "2s@p99", "--tpot", "50ms@p99",
                "--dtype", "fp8", "--json"]  # fmt: skip
    code, out, err = run(capsys, *question)
    assert code == 0, err
    answer = json.loads(out)
    assert (answer["kv_dtype"], answer["kv_dtype_from"]) == ("bf16", "default")
    h100, b200 = answer["chips"]
    assert h100["best"]["mode"] == "aggregated"
    other = h100["disaggregated"]
    assert [p["role"] for p in other["pools"]] == ["prefill", "decode"]
    assert other["n_chips"] >= h100["best"]["n_chips"]
    assert b200["best"] is not None


def test_plan_text_names_the_walls_and_the_setting(capsys: pytest.CaptureFixture[str]) -> None:
    argv = with_flag("--tpot", "4ms@p99")  # one chip's decode step is slower: bandwidth wall
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "bandwidth" in out and "none meets the targets" in out
    code, out, err = run(capsys, *BASE)
    assert "setting  Llama-3-8B on" in out and "$/M in" in out


def test_lengths_from_a_file_are_drawn_from(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lengths = tmp_path / "prompts.txt"
    lengths.write_text("500\n1500, 1000\n")
    code, out, err = run(capsys, *with_flag("--input", str(lengths)), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["input_lengths"] == 3 and data["input_tokens_mean"] == pytest.approx(1000.0)


def test_a_chip_from_a_chip_file_with_its_price(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    chip_file = tmp_path / "chips.toml"
    chip_file.write_text(HALF_CHIP_TOML)
    argv = with_flag("--chips", "H100,Half=1.5")
    code, out, err = run(capsys, *argv, "--chip-file", str(chip_file), "--json")
    assert code == 0, err
    h100, half = json.loads(out)["chips"]
    assert half["chip"] == "Half" and half["usd_per_chip_hour"] == 1.5
    assert h100["usd_per_chip_hour"] == 2.0  # the H100's example price


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_plot_draws_the_frontier(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / f"frontier.{suffix}"
    code, out, err = run(capsys, *BASE, "--plot", str(path))
    assert code == 0, err
    head = path.read_bytes()[:64]
    assert head.startswith(b"\x89PNG") if suffix == "png" else b"<svg" in path.read_bytes()
    assert f"frontier drawn to {path}" in out


def test_the_documented_default_cache_hit_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *with_flag("--cache-hit", "0"))
    assert code == 0, err


def test_calibrate_sizes_at_a_benchmark_s_fitted_efficiency(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """plan --calibrate KEY is plan at that benchmark's fitted efficiency (what llmmath
    calibrate reports), and says so; it needs fewer chips' worth of speed than the floor."""
    key = "trtllm-llama-3.1-8b-fp8-h100-tp1"
    (row,) = as_json(capsys, "calibrate", key)["benchmarks"]
    calibrated = as_json(capsys, *BASE, "--calibrate", key)
    assert calibrated["calibration"]["efficiency"] == pytest.approx(row["fitted_efficiency"])
    same = as_json(capsys, *BASE, "--efficiency", repr(row["fitted_efficiency"]))
    assert calibrated["chips"] == same["chips"]
    floor = as_json(capsys, *BASE)
    assert floor["calibration"] is None
    slow, fast = calibrated["chips"][0]["best"], floor["chips"][0]["best"]
    assert slow["n_chips"] >= fast["n_chips"] and slow["tpot_s"] > fast["tpot_s"]
    _, out, _ = run(capsys, *BASE, "--calibrate", key)
    assert f"calibrated: efficiency {row['fitted_efficiency']:.2f}, benchmark {key}" in out
    code, _, err = run(capsys, *BASE, "--calibrate", key, "--efficiency", "0.5")
    assert code == 2 and "not both" in err


def test_aiconfigurator_s_question_reads_as_the_page_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """book/cli.md puts AIConfigurator's README example (Qwen3-32B, 32 H200, 4,000 in and
    500 out, TTFT 300 ms, TPOT 10 ms) to plan as the request rate their answer serves: at the
    floor plan serves it disaggregated with a TP4 decode worker on fewer GPUs, by a share
    inside the benchmarks' measured/floor range; calibrated, aggregated on more."""
    from llmmath.core import data

    aic = data.table("systems")["aiconfigurator_example"]
    assert aic["source"] and aic["source_date"] and aic["total_gpus"] == 32
    rate = aic["tokens_per_s_per_gpu"] * aic["total_gpus"] / aic["output_tokens"]
    question = ["plan", "Qwen3-32B", "--chips", "H200=1", "--rate", f"{rate:.1f}",
                "--input", "4000", "--output", "500", "--ttft", "300ms@p50",
                "--tpot", "10ms@p50", "--dtype", "fp8", "--kv-dtype", aic["kv_dtype"]]  # fmt: skip
    (floor,) = as_json(capsys, *question)["chips"]
    assert floor["best"]["mode"] == "disaggregated"
    assert floor["best"]["configuration"].endswith("decode 1 x TP4")
    report = as_json(capsys, "calibrate")
    ratios = [row["measured_over_floor"] for row in report["benchmarks"]]
    assert min(ratios) < floor["best"]["n_chips"] / aic["total_gpus"] < max(ratios)
    (calibrated,) = as_json(capsys, *question, "--calibrate")["chips"]
    assert calibrated["best"]["mode"] == "aggregated"
    assert calibrated["best"]["n_chips"] > aic["total_gpus"]


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--ttft", "2@p99", "--ttft"),
        ("--ttft", "2s@p101", "p50 or p99"),
        ("--ttft", "", "--ttft"),
        ("--ttft", "0s@p99", "--ttft must be a time > 0"),
        ("--tpot", "50ms@p90", "p50 or p99"),
        ("--tpot", "fastms", "--tpot"),
        ("--rate", "-1", "--rate must be > 0"),
        ("--rate", "", "--rate"),
        ("--rate", "nan", "--rate"),
        ("--chips", "NOPE", "unknown chip 'NOPE'"),
        ("--chips", "", "--chips"),
        ("--chips", "H100,", "--chips"),
        ("--chips", "H100,H100", "twice"),
        ("--chips", "H200", "H200 has no example price"),
        ("--chips", "H100=0", "--chips H100="),
        ("--chips", "H100=cheap", "--chips H100="),
        ("--input", "", "--input is empty"),
        ("--input", "0", "--input must be >= 1"),
        ("--input", "1.5", "--input must be a whole number"),
        ("--input", "missing/lengths.txt", "no such file"),
        ("--output", "200000", "--output lengths must be <="),
        ("--input", "8000", "max_context"),
        ("--cache-hit", "1", "--cache-hit must be a share in [0, 1)"),
        ("--cache-hit", "-0.1", "--cache-hit"),
        ("--max-chips", "3", "power of two"),
        ("--max-chips", "0", "--max-chips"),
        ("--max-running", "0", "--max-running"),
        ("--max-batched-tokens", "16", "--max-batched-tokens"),
        ("--requests", "5", "--requests"),
        ("--seed", "-1", "--seed"),
        ("--plot", "frontier.pdf", "--plot"),
        ("--plot", "no/such/folder/f.png", "--plot"),
        ("--dtype", "", "--dtype"),
        ("--kv-dtype", "", "--kv-dtype '' is not a number format (known: fp32, bf16"),
        ("--kv-dtype", "fp7", "--kv-dtype 'fp7' is not a number format"),
        ("--mode", "mixed", "--mode"),
        ("--calibrate", "", "--calibrate takes nothing"),
        ("--calibrate", "nope", "--calibrate 'nope' is not a benchmark key"),
    ],
)
def test_each_malformed_flag_exits_2_with_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, says: str
) -> None:
    with pytest.raises(SystemExit) if flag == "--mode" else _no_exit():
        code, out, err = run(capsys, *with_flag(flag, value))
        assert code == 2, (out, err)
        assert out == ""
        assert len(err.strip().splitlines()) == 1, err
        assert says in err, err
    if flag == "--mode":
        err = capsys.readouterr().err
        assert "--mode" in err and len(err.strip().splitlines()) == 1


class _no_exit:  # noqa: N801 (a context manager read as a phrase)
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False
