"""The ``llmmath`` command: every subcommand, JSON round trips, bad input, and the lessons."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from lesson_support import lesson

from llmmath import batching, cli, hardware, serving
from llmmath.deployment import Deployment
from llmmath.models import get_model, load_models
from llmmath.placement import Layout
from llmmath.training import training_step

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = Path(__file__).parent / "data" / "hf_configs"
FLOOR = "Floors, not promises"


@pytest.fixture(autouse=True)
def private_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of the chip registry, so a --chip-file in one test cannot leak into another."""
    monkeypatch.setattr(hardware, "_CHIPS", dict(hardware._CHIPS))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


# ---- every subcommand, on presets and on files --------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "Llama-3-70B", "H100x8", "--layout", "tp8"],
        ["serve", "Mixtral-8x7B", "H100x8", "--layout", "tp2,ep4", "--dtype", "fp8"],
        ["serve", "DeepSeek-V3", "H200x16", "--layout", "ep16", "--dtype", "fp8", "--price", "3"],
        ["fit", "Llama-3-70B", "H100x8", "--layout", "pp8"],
        ["best", "Mixtral-8x7B", "H100x8", "--latency", "30ms"],
        ["train", "Llama-3-8B", "H100x64", "--tokens", "15T", "--layout", "tp2,zero1"],
        ["chips"],
        ["models"],
    ],
)
def test_every_subcommand_answers_on_presets(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 0 and err == ""
    if argv[0] in ("serve", "fit", "best", "train"):
        assert get_model(argv[1]).name in out.splitlines()[0]
    if argv[0] in ("serve", "best", "train"):
        assert FLOOR in out
    if argv[0] in ("chips", "models"):
        assert "Sources:" in out


@pytest.mark.parametrize("command", ["serve", "fit", "best", "train"])
@pytest.mark.parametrize("folder", ["Qwen2.5-7B", "gemma-2-9b", "DeepSeek-V3"])
def test_every_subcommand_answers_on_config_files(
    capsys: pytest.CaptureFixture[str], command: str, folder: str
) -> None:
    extra = {
        "serve": ["--context", "4096"],
        "fit": [],
        "best": ["--latency", "50ms", "--context", "2048"],
        "train": ["--tokens", "1T", "--layout", "tp4,zero3", "--microbatches", "64"],
    }[command]
    chips = "H200x16" if folder == "DeepSeek-V3" else "H100x8"
    dtype = ["--dtype", "fp8"] if folder == "DeepSeek-V3" and command != "train" else []
    data = as_json(capsys, command, str(CONFIGS / folder / "config.json"), chips, *extra, *dtype)
    assert data["model"] == folder and data["command"] == command


def test_a_config_file_matches_its_preset(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["H100x8", "--layout", "tp8", "--batch", "1,64", "--json"]
    cli.main(["serve", "Llama-3-70B", *argv])
    preset = json.loads(capsys.readouterr().out)
    cli.main(["serve", str(CONFIGS / "Llama-3-70B"), *argv])  # the folder holding config.json
    from_file = json.loads(capsys.readouterr().out)
    assert preset["rows"] == from_file["rows"]


def test_notes_on_what_a_config_leaves_out_go_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "fit", str(CONFIGS / "gemma-2-9b" / "config.json"), "H100")
    assert code == 0 and "note: sliding_window=4096" in err and "sliding" not in out


def test_a_toml_model_and_a_chip_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    models = tmp_path / "mine.toml"
    models.write_text(
        "[small]\nn_layers = 24\nd_model = 2048\nd_ff = 8192\nn_heads = 16\nn_kv_heads = 4\n"
        "head_dim = 128\nvocab_size = 50000\nmax_context = 4096\n"
        "[other]\nn_layers = 2\nd_model = 64\nd_ff = 128\nn_heads = 4\nn_kv_heads = 4\n"
        "head_dim = 16\nvocab_size = 100\nmax_context = 512\n"
    )
    chip_file = tmp_path / "chips.toml"
    chip_file.write_text(
        '[Half]\nfull_name = "a made-up chip with 40 GB"\n'
        "peak_flop_per_s = { bf16 = 5e14 }\nhbm_bytes = 40e9\n"
        "hbm_bandwidth_bytes_per_s = 2e12\nscale_up_bandwidth_bytes_per_s = 2e11\n"
        "scale_up_domain_size = 4\nscale_out_bandwidth_bytes_per_s = 2.5e10\n"
        "scale_up_latency_s = 1e-6\nscale_out_latency_s = 3e-6\n"
        'latency_source = "test"\nsource = "test"\nsource_date = "2026-12"\n'
    )
    data = as_json(capsys, "fit", f"{models}:small", "Halfx2", "--chip-file", str(chip_file))
    assert data["model"] == "small" and data["chip"] == "Half"
    weights = load_models(models)["small"].weight_bytes("bf16")
    assert data["kv_budget_bytes"] == pytest.approx(2 * 40e9 - weights)
    _, out, _ = run(capsys, "chips", "--chip-file", str(chip_file))
    assert "Half" in out and "a made-up chip" not in out.splitlines()[0]

    code, _, err = run(capsys, "fit", str(models), "H100")
    assert code == 2 and "pick one as" in err


def test_a_chip_file_does_not_outlive_its_test() -> None:
    assert "Half" not in hardware.list_chips()


# ---- --json round trips -------------------------------------------------------------------
def test_serve_json_is_the_package_s_decode_step(capsys: pytest.CaptureFixture[str]) -> None:
    data = as_json(
        capsys, "serve", "Llama-3-70B", "H100x8", "--layout", "tp8", "--batch", "1,64,300",
        "--context", "8192", "--efficiency", "0.6,0.8", "--overlap", "none",
    )  # fmt: skip
    dep = Deployment(
        get_model("Llama-3-70B"), "H100", 8, layout=Layout(tp=8),
        flops_efficiency=0.6, bandwidth_efficiency=0.8,
    )  # fmt: skip
    B = np.array([1.0, 64.0, 300.0])
    step = serving.decode_step(dep, B, 8192, overlap="none", allow_overflow=True)
    rows = data["rows"]
    assert [r["batch"] for r in rows] == [1, 64, 300]
    np.testing.assert_allclose([r["time_s"] for r in rows], step.serial_s, rtol=1e-12)
    np.testing.assert_allclose([r["floor_s"] for r in rows], step.floor_s, rtol=1e-12)
    np.testing.assert_allclose(
        [r["usd_per_million_output"] for r in rows], step.cost_per_million_tokens_usd()
    )
    assert [r["fits"] for r in rows] == [True, True, False]
    assert rows[2]["missing_bytes"] > 0 == rows[1]["missing_bytes"]
    ttft = serving.prefill(dep, 8192, 1, overlap="none").time_s
    assert data["ttft_s"] == pytest.approx(float(ttft), rel=1e-12)
    assert data["flops_efficiency"] == 0.6 and data["overlap"] == "none"


def test_fit_and_best_json_round_trip(capsys: pytest.CaptureFixture[str]) -> None:
    data = as_json(capsys, "fit", "Llama-3-70B", "H100x8", "--context", "2048,8192")
    dep = Deployment(get_model("Llama-3-70B"), "H100", 8)
    assert [r["max_batch"] for r in data["max_batch"]] == [
        float(batching.max_batch(dep, t)) for t in (2048, 8192)
    ]
    best = as_json(capsys, "best", "Llama-3-70B", "H100x8", "--latency", "30ms")
    assert best["candidates"][0]["layout"] == "TP8 DP1"
    assert all(c["time_s"] <= 0.030 for c in best["candidates"])
    impossible = as_json(capsys, "best", "Llama-3-70B", "H100x8", "--latency", "1ms")
    assert impossible["candidates"] == [] and impossible["fastest_too_slow"]["time_s"] > 1e-3


def test_a_batch_range_sweeps_every_batch(capsys: pytest.CaptureFixture[str]) -> None:
    data = as_json(capsys, "serve", "Llama-3-8B", "H100x1", "--batch", "1:1000")
    assert [r["batch"] for r in data["rows"]] == list(range(1, 1001))
    times = [r["floor_s"] for r in data["rows"]]
    assert times == sorted(times)


# ---- what people see ------------------------------------------------------------------------
def _tables(out: str) -> list[tuple[str, str, list[str]]]:
    """(header, rule, rows) of every table in ``out``: a rule is a line of dashes and spaces."""
    lines = out.splitlines()
    found = []
    for i, line in enumerate(lines):
        if line and set(line) <= {"-", " "}:
            rows = []
            for row in lines[i + 1 :]:
                if not row:
                    break
                rows.append(row)
            found.append((lines[i - 1], line, rows))
    return found


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "Llama-3-70B", "H100x8", "--batch", "1,16,256"],
        ["best", "Mixtral-8x7B", "H100x8", "--latency", "30ms"],
        ["train", "Llama-3-8B", "H100x64", "--tokens", "15T", "--layout", "tp2,zero1"],
    ],
)
def test_tables_are_aligned(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    _, out, _ = run(capsys, *argv)
    tables = _tables(out)
    assert tables
    for header, rule, rows in tables:
        columns = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
        assert len(columns) == len(header.split("  ")) - header.split("  ").count("")
        for row in rows:
            for start, end in columns:
                cell = row[start:end].strip()
                assert cell, (row, start, end)  # every cell sits under its rule
                if re.fullmatch(r"[$]?[\d,.]+%?", cell):  # numbers end where the rule ends
                    assert row[end - 1] != " ", (row, end)
    assert all(len(line) <= 84 for line in out.splitlines()), "keep lines narrow"


def test_serve_shows_both_tables_with_units(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "serve", "Llama-3-70B", "H100x8", "--batch", "1,256")
    (step_header, _, _), (rate_header, _, rates) = _tables(out)
    assert "floor ms" in step_header and "serial ms" in step_header
    assert "$/M out" in rate_header and "tok/s/user" in rate_header
    assert rates[1].endswith("no: 188 GB short") and "no example price" not in out


def test_a_chip_without_a_price_says_how_to_give_one(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "serve", "Llama-3-8B", "H200x1", "--batch", "1")
    assert "pass --price" in out
    data = as_json(capsys, "serve", "Llama-3-8B", "H200x1", "--batch", "1")
    assert data["rows"][0]["usd_per_million_output"] is None


# ---- bad input: one line, exit status 2, never a traceback --------------------------------
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "Llama-4", "H100x8"], "neither a preset"),
        (["serve", "Llama-3-70B", "H999x8"], "unknown chip 'H999'"),
        (["serve", "Llama-3-70B", "8"], "is not CHIPxN"),
        (["serve", "Llama-3-70B", "H100x8", "--batch", "0"], "batch must be finite and > 0"),
        (["serve", "Llama-3-70B", "H100x8", "--batch", "a"], "is not a number"),
        (["serve", "Llama-3-70B", "H100x8", "--layout", "tp3"], "not divisible by tp*pp*ep"),
        (["serve", "Llama-3-70B", "H100x8", "--layout", "pq2"], "is not tpN"),
        (["serve", "Llama-3-70B", "H100x8", "--context", "1e5"], "max_context=8192"),
        (["serve", "Llama-3-70B", "H100x8", "--efficiency", "1.5"], "must be in (0, 1]"),
        (["serve", "Llama-3-70B", "H100x8", "--dtype", "fp7"], "unknown dtype 'fp7'"),
        (["best", "Llama-3-70B", "H100x8", "--latency", "30"], "needs a unit"),
        (["train", "Llama-3.1-405B", "H100x8192", "--layout", "tp8,pp16", "--tokens", "1T"],
         "add emb to --layout"),
        (["serve", "Llama-3-70B", "H100x8", "--chip-file", "/no/such.toml"], "No such file"),
        (["serve", str(CONFIGS / "README.md"), "H100x8"], "not valid JSON"),
        (["serve"], "the following arguments are required"),
        (["serve", "Llama-3-70B", "H100x8", "--overlap", "some"], "invalid choice"),
        (["serve", "Llama-3-70B", "H100x8", "--batch", "1:1e9"], "at most 1,000,000"),
        (["serve", "Llama-3-70B", "H100x8", "--price", "-2"], "must be finite and > 0"),
        (["train", "Llama-3-8B", "H100x8", "--tokens", "1T", "--price", "0"], "--price must be"),
        (["best", "Llama-3-8B", "H100x8", "--latency", "9ms", "--top", "0"], "--top must be"),
        (["frobnicate"], "invalid choice"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with (
        pytest.raises(SystemExit)
        if argv[0] == "frobnicate" or argv == ["serve"] or ("--overlap" in argv)
        else _NoRaise() as caught
    ):
        code = cli.main(argv)
    code = caught.value.code if isinstance(caught, pytest.ExceptionInfo) else code
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err
    assert err.startswith("llmmath")


class _NoRaise:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_an_unknown_architecture_names_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = json.loads((CONFIGS / "Llama-3-8B" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": "rwkv"}))
    code, _, err = run(capsys, "serve", str(tmp_path), "H100")
    assert code == 2 and "'model_type' = 'rwkv' is not understood" in err


def test_weights_that_do_not_fit_exit_1_with_what_is_missing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "serve", "Llama-3-70B", "H100x1")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "does not fit" in err and "B missing" in err


def test_the_console_script_runs_as_a_process() -> None:
    script = shutil.which("llmmath", path=str(Path(sys.executable).parent))
    assert script, "pip install -e . registers the llmmath console script"
    ok = subprocess.run([script, "serve", "Llama-3-8B", "H100x1", "--batch", "1"],
                        capture_output=True, text=True, check=False)  # fmt: skip
    assert ok.returncode == 0 and FLOOR in ok.stdout
    bad = subprocess.run([script, "serve", "Llama-3-8B", "H100x1", "--batch", "-1"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.count("\n") == 1


# ---- the CLI and the lessons give the same numbers --------------------------------------------
def test_serve_gives_the_batching_lesson_s_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    page = lesson("batching.md")
    data = as_json(capsys, "serve", "Llama-3-70B", "H100x8", "--batch", "1,64", "--context", "2048")
    one, b64 = data["rows"]
    assert one["time_s"] == pytest.approx(float(page.one.time_s), rel=1e-12)
    assert one["tokens_per_s_per_user"] == pytest.approx(
        float(page.one.tokens_per_s_per_user), rel=1e-12
    )
    assert one["usd_per_million_output"] == pytest.approx(page.one_cost_value, rel=1e-12)
    assert f"{one['time_s'] * 1e3:.2f}" == page.one_ms  # the text the page shows
    assert b64["time_s"] == pytest.approx(float(page.b64.time_s), rel=1e-12)
    assert f"{b64['usd_per_million_output']:.2f}" == page.b64_cost


def test_train_gives_the_parallelism_lesson_s_llama3_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    layout = Layout(dp=64, tp=8, pp=16, zero_stage=1, embedding_as_layers=True)
    lesson_run = training_step("Llama-3.1-405B", layout, "H100", 16 * 2**20, microbatches=32)
    data = as_json(
        capsys, "train", "Llama-3.1-405B", "H100x8192", "--layout", "tp8,pp16,dp64,zero1,emb",
        "--tokens", "15.6T", "--batch-tokens", str(16 * 2**20), "--microbatches", "32",
    )  # fmt: skip
    assert data["mfu"] * 100 == pytest.approx(float(lesson_run.mfu * 100), rel=1e-12)
    assert data["step_s"] == pytest.approx(float(lesson_run.lower_s), rel=1e-12)
    assert data["bubble_fraction"] == pytest.approx(15 / (32 + 15))
    assert data["fits"] is True


def test_models_lists_config_files_with_their_notes(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(CONFIGS / name / "config.json") for name in ("gemma-2-9b", "Mixtral-8x7B")]
    code, out, err = run(capsys, "models", *files)
    assert code == 0 and "note: gemma-2-9b: sliding_window=4096" in err
    gemma = next(line for line in out.splitlines() if line.startswith("gemma-2-9b"))
    assert "9.24B" in gemma and "Sources:" in out
    data = as_json(capsys, "models", *files)
    assert [m["total_params"] for m in data["models"]] == [9_241_404_928, 46_702_792_704]
