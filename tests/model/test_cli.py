"""The ``llmmath`` command: every subcommand, JSON round trips, bad input, and the lessons."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_support import HALF_CHIP_TOML, run
from cli_support import private_registry as private_registry  # the autouse fixture

import llmmath
from llmmath.cli import parse_and_run as cli
from llmmath.cli.inputs import weight_format
from llmmath.core import capacity, hardware, serving
from llmmath.core.deployment import Deployment
from llmmath.core.models import get_model, load_models
from llmmath.core.placement import Layout
from llmmath.core.training import training_step
from llmmath.display import numbers

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = Path(__file__).parents[1] / "data" / "hf_configs"
FLOOR = "Floors, not promises"


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
        [
            "train",
            "Llama-3-8B",
            "H100x64",
            "--tokens",
            "15T",
            "--layout",
            "tp2,zero1",
            "--microbatches",
            "64",
        ],
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
        "train": ["--tokens", "1T", "--layout", "tp4,zero3", "--microbatches", "64",
                  "--batch-tokens", "4M", "--activations", "checkpointed"],
    }[command]  # fmt: skip
    chips = "H200x16" if folder == "DeepSeek-V3" else "H100x8"
    if command == "train" and folder == "DeepSeek-V3":  # 671B with Adam: ~670 GB a chip
        code, out, err = run(capsys, command, str(CONFIGS / folder), chips, *extra)
        assert code == 1 and out == "" and "does not fit" in err
        return
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
    code, out, err = run(capsys, "fit", str(CONFIGS / "Qwen3-30B-A3B"), "H100")
    assert code == 0 and out and err == ""
    code, out, err = run(capsys, "fit", str(CONFIGS / "gemma-3-27b-it"), "H100")
    assert code == 0 and "note: the vision encoder is not counted" in err and "vision" not in out


def test_sliding_windows_are_counted_exactly(capsys: pytest.CaptureFixture[str]) -> None:
    # gemma-2-9b: 21 of 42 layers hold at most 4,096 tokens; at 8,192 tokens a sequence holds
    # 3/4 of the full count. The engineer: 29 sequences on one H100, not 21.
    data = as_json(capsys, "fit", str(CONFIGS / "gemma-2-9b"), "H100", "--context", "8192")
    assert data["max_batch"][0]["max_batch"] == 29
    full = data["kv_budget_bytes"] // (8192 * data["kv_bytes_per_token"])
    assert full == 21
    # gpt-oss-120b: half its layers hold 128 tokens, so at 8,192 about half the full count.
    serve = as_json(capsys, "serve", str(CONFIGS / "gpt-oss-120b"), "H200", "--batch", "1")
    assert serve["weights_held_as"] == "experts mxfp4; embeddings, attention, mlp bf16"
    _, out, _ = run(capsys, "serve", str(CONFIGS / "gpt-oss-120b"), "H200", "--batch", "1")
    assert "18 of 36 layers hold 128" in out


def test_fit_heading_says_the_exact_kv_at_the_context(capsys: pytest.CaptureFixture[str]) -> None:
    """gemma-2-9b at 8,192 tokens: half its 42 layers hold 4,096, so a token costs 3/4 of the
    full 344 kB (42 layers x 2 x 8 heads x 256 x 2 B): the heading and the room line say the
    exact 258 kB, not the full count the body no longer uses; with several contexts the
    heading says "at full attention" and the table gives each context's own."""
    full = 42 * 2 * 8 * 256 * 2
    data = as_json(capsys, "fit", str(CONFIGS / "gemma-2-9b"), "H100", "--context", "8192")
    assert data["kv_bytes_per_token"] == full
    assert data["max_batch"][0]["kv_bytes_per_token"] == pytest.approx(0.75 * full, rel=1e-12)
    _, out, _ = run(capsys, "fit", str(CONFIGS / "gemma-2-9b"), "H100", "--context", "8192")
    heading = out.split("\n\n")[0]
    assert "258 kB per token at 8,192 tokens" in heading and "344 kB at full" in heading
    assert "a cached token holds 258 kB at 8,192 tokens" in heading
    _, out, _ = run(capsys, "fit", str(CONFIGS / "gemma-2-9b"), "H100", "--context", "2k,8k")
    assert "344 kB per token at full attention" in out and "KV/token" in out
    from llmmath.cli.formatting import si

    at_8k = full * (21 + 21 * 4096 / 8000) / 42  # "8k" is 8,000 tokens
    rows = [line for line in out.splitlines() if line.startswith(("  2,000", "  8,000"))]
    assert rows[0].endswith(si(full, "B")) and rows[1].endswith(si(at_8k, "B"))
    _, out, _ = run(capsys, "fit", "Llama-3-8B", "H100", "--context", "8192")  # no window
    assert "131 kB per token\n" in out and "at full attention" not in out


def test_quantized_checkpoints_fit_where_they_ship(capsys: pytest.CaptureFixture[str]) -> None:
    # DeepSeek-V3's own FP8 checkpoint on one 8 x H200 node (it did not fit at bf16).
    data = as_json(capsys, "fit", str(CONFIGS / "DeepSeek-V3"), "H200x8", "--layout", "tp8")
    assert data["weights_held_as"] == "attention, mlp, experts fp8; embeddings bf16"
    assert data["max_batch"][0]["max_batch"] > 0
    code, _, err = run(capsys, "fit", str(CONFIGS / "DeepSeek-V3"), "H200x8", "--dtype", "bf16")
    assert code == 1 and "does not fit" in err
    # gpt-oss-120b's MXFP4 experts fit on one 80 GB H100.
    code, out, _ = run(capsys, "fit", str(CONFIGS / "gpt-oss-120b"), "H100")
    assert code == 0 and "experts mxfp4" in out


def test_attention_computes_in_its_own_dtype(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["serve", "DeepSeek-V3", "B200x8", "--layout", "ep8", "--dtype", "nvfp4",
            "--batch", "256", "--context", "4096"]  # fmt: skip
    bf16 = as_json(capsys, *argv)
    fp4 = as_json(capsys, *argv, "--attention-dtype", "nvfp4")
    assert bf16["attention_dtype"] == "bf16" and fp4["attention_dtype"] == "nvfp4"
    assert bf16["rows"][0]["compute_s"] > fp4["rows"][0]["compute_s"]
    assert bf16["weights_held_as"] == "embeddings bf16; attention, mlp, experts nvfp4"


def test_a_toml_model_and_a_chip_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    models = tmp_path / "mine.toml"
    models.write_text(
        "[small]\nn_layers = 24\nd_model = 2048\nd_ff = 8192\nn_heads = 16\nn_kv_heads = 4\n"
        "head_dim = 128\nvocab_size = 50000\nmax_context = 4096\n"
        "[other]\nn_layers = 2\nd_model = 64\nd_ff = 128\nn_heads = 4\nn_kv_heads = 4\n"
        "head_dim = 16\nvocab_size = 100\nmax_context = 512\n"
    )
    chip_file = tmp_path / "chips.toml"
    chip_file.write_text(HALF_CHIP_TOML)
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
        float(capacity.max_batch(dep, t)) for t in (2048, 8192)
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
        ["best", "Mixtral-8x7B", "H100x8", "--latency", "30ms", "--input", "2k", "--output", "500"],
        [
            "train",
            "Llama-3-8B",
            "H100x64",
            "--tokens",
            "15T",
            "--layout",
            "tp2,zero1",
            "--microbatches",
            "64",
        ],
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


def test_workload_accepts_the_documented_default_cache_hit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--cache-hit 0 is the default written out (it was refused: shares were (0, 1])."""
    argv = ["workload", "Llama-3-8B", "H100", "--input", "1000", "--output", "100"]
    assert as_json(capsys, *argv, "--cache-hit", "0") == as_json(capsys, *argv)


def test_a_chip_without_a_price_says_how_to_give_one(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "serve", "Llama-3-8B", "H200x1", "--batch", "1")
    assert "pass --price" in out
    data = as_json(capsys, "serve", "Llama-3-8B", "H200x1", "--batch", "1")
    assert data["rows"][0]["usd_per_million_output"] is None


# ---- bad input: one line, exit status 2, never a traceback --------------------------------
L70, N8 = "Llama-3-70B", "H100x8"
TRAIN = ["train", "Llama-3-8B", "H100x8", "--tokens", "1T"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "Llama-4", N8], "neither a preset"),
        (["serve", "llama-3-70b", N8], "did you mean 'Llama-3-70B'?"),
        (["serve", L70, "H999x8"], "unknown chip 'H999'"),
        (["serve", L70, "H10x8"], "did you mean 'H100'?"),
        (["serve", L70, "8"], "is not CHIPxN"),
        (["serve", L70, N8, "--batch", "0"], "--batch must be >= 1; got 0"),
        # #44 item 5: an empty layout was read as none; a bare axis suggested itself; nanms
        # was said to lack the unit it has.
        (["serve", L70, N8, "--layout", ""], "--layout '' names no axis; give tpN"),
        (["serve", L70, N8, "--layout", ","], "--layout ',' names no axis"),
        ([*TRAIN, "--layout", ""], "--layout '' names no axis"),
        (["serve", L70, N8, "--layout", "tp"], "--layout part 'tp' needs a degree, e.g. tp2"),
        (["best", L70, N8, "--latency", "nanms"], "--latency 'nanms' is not a time > 0"),
        (["workload", L70, N8, "--cache-hit", "1"], "--cache-hit must be a share in [0, 1)"),
        (["serve", L70, N8, "--batch", "1.5"], "--batch must be a whole number; got 1.5"),
        (["serve", L70, N8, "--batch", "1:2.5:0.5"], "--batch must be a whole number"),
        (["serve", L70, N8, "--batch", "inf"], "--batch must be a finite number"),
        (["serve", L70, N8, "--batch", "a"], "is not a number"),
        (["serve", L70, N8, "--batch", "9:1"], "is empty"),
        (["serve", L70, N8, "--layout", "tp3"], "--layout 'tp3' needs a chip count divisible by"),
        # #44 item 5: the placement's and the deployment's field names leaked; a redundant
        # expert count on a dense model was ignored.
        (["serve", L70, N8, "--layout", "tp8", "--redundant-experts", "2"],
         "--redundant-experts is for a MoE model under an ep degree"),
        (["serve", L70, N8, "--reserve", "1e20"], "--reserve 1e20 leaves no HBM: H100 holds 80 GB"),
        (["serve", L70, N8, "--layout", "pq2"], "is not tpN"),
        (["serve", L70, N8, "--layout", "tp8,tp2"], "names tp twice"),
        (["serve", L70, N8, "--layout", "pp2,pp4"], "names pp twice"),
        (["serve", L70, N8, "--layout", "tp0"], "a degree must be >= 1"),
        (["serve", L70, N8, "--context", "1e5"], "--context must be <= Llama-3-70B's max_context"),
        (["serve", L70, N8, "--context", "nan"], "--context must be a finite number"),
        (["serve", L70, N8, "--context", "1,2"], "--context takes one length"),
        (["serve", L70, N8, "--prompt", "-100"], "--prompt must be >= 1"),
        (["serve", L70, N8, "--prompt", "0"], "--prompt must be >= 1"),
        (["fit", L70, N8, "--context", "100000"], "--context must be <= Llama-3-70B's"),
        (["fit", L70, N8, "--context", "0"], "--context must be >= 1"),
        (["serve", L70, N8, "--efficiency", "1.5"], "--efficiency values must be in (0, 1]"),
        (["serve", L70, N8, "--efficiency", "0.5,0.5,0.5"], "1 or 2 of them"),
        (["serve", L70, N8, "--dtype", "fp7"], "--dtype 'fp7' is not a number format; did you"),
        (["serve", L70, N8, "--kv-dtype", "bf8"], "--kv-dtype 'bf8' is not a number format"),
        (["best", L70, N8, "--latency", "30"], "needs a unit"),
        (["best", L70, N8, "--latency", "0ms"], "--latency must be > 0"),
        (["train", "Llama-3.1-405B", "H100x8192", "--layout", "tp8,pp16", "--tokens", "1T"],
         "add emb to --layout"),
        (["serve", L70, N8, "--chip-file", "/no/such.toml"], "No such file"),
        (["serve", str(CONFIGS / "README.md"), N8], "not valid JSON"),
        (["serve"], "the following arguments are required"),
        (["serve", L70, N8, "--overlap", "some"], "invalid choice"),
        (["serve", L70, N8, "--batch", "1:1e9"], "at most 1,000,000"),
        (["serve", L70, N8, "--price", "-2"], "--price must be > 0"),
        (["serve", L70, N8, "--price", "nan"], "--price must be > 0"),
        ([*TRAIN, "--price", "0"], "--price must be"),
        ([*TRAIN[:-1], "nan"], "--tokens must be a finite number"),
        ([*TRAIN[:-1], "0"], "--tokens must be >= 1"),
        ([*TRAIN, "--batch-tokens", "1"], "dp=8 replicas x 1 microbatches need >= 8"),
        ([*TRAIN, "--batch-tokens", "2T"], "is more than --tokens"),
        ([*TRAIN, "--microbatches", "0"], "--microbatches must be >= 1"),
        ([*TRAIN, "--mfu", "2"], "--mfu values must be in (0, 1]"),
        (["best", "Llama-3-8B", N8, "--latency", "9ms", "--top", "0"], "--top must be"),
        (["frobnicate"], "invalid choice"),
        (["serv"], "did you mean 'serve'?"),
        (["serve", L70, N8, "--bacth", "3"], "serve has no option --bacth; did you mean '--batch'"),
        (["fit", L70, N8, "--efficiency", "0.5"], "fit has no option --efficiency (serve and"),
        (["fit", L70, N8, "--overlap", "none"], "fit has no option --overlap"),
        (["fit", L70, N8, "--price", "2"], "fit has no option --price"),
        (["best", L70, N8, "--latency", "9ms", "--layout", "tp8"], "best has no option --layout"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code = _status(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err
    assert err.startswith("llmmath") and "Traceback" not in err
    assert "(): " not in err, "the message names the option, not the package's function"


def _status(argv: list[str]) -> int:
    """cli.main's status, or argparse's (which exits)."""
    try:
        return cli.main(argv)
    except SystemExit as stop:
        assert isinstance(stop.code, int)
        return stop.code


def test_a_package_error_names_the_option() -> None:
    args = cli.build_parser().parse_args(["serve", L70, N8])
    message = "serving.decode_step(): batch must be finite and > 0; got -1"
    assert cli.flag_message(message, args) == "--batch must be finite and > 0; got -1"
    assert cli.flag_message("placement.x(): tp does not divide", args) == "tp does not divide"


def test_every_option_says_what_it_does_and_its_default() -> None:
    parser = cli.build_parser()
    assert parser.flags and set(parser.flags) == {"serve", "fit", "best", "workload", "plan",
                                                  "calibrate", "train", "chips",
                                                  "models"}  # fmt: skip
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subs.choices.items():
        formatter = sub._get_formatter()
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            text = formatter._get_help_string(action)
            assert action.help, (name, action.dest)
            if action.option_strings and action.default is None and not action.required:
                assert "default" in text, (name, action.dest)
            if action.default not in (None, False):
                assert "default" in text, (name, action.dest)
        help_text = sub.format_help()
        assert "quantization_config, else bf16" in " ".join(help_text.split()) or name in (
            "calibrate",
            "train",
            "chips",
            "models",
        )
    assert "8k = 8,000" in parser.format_help() and "8Ki = 8,192" in parser.format_help()


def test_version_and_suffixes(capsys: pytest.CaptureFixture[str]) -> None:
    assert _status(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"llmmath {llmmath.__version__}"
    assert cli.parse_number("8k", "--context") == 8000
    assert cli.parse_number("8Ki", "--context") == 8192
    assert cli.parse_number("16Mi", "--batch-tokens") == 16 * 2**20
    kilo = as_json(capsys, "serve", "Llama-3-8B", "H100", "--context", "8Ki", "--batch", "1")
    assert kilo["context"] == 8192


def test_fit_defaults_stop_at_the_model_s_limit(capsys: pytest.CaptureFixture[str]) -> None:
    data = as_json(capsys, "fit", L70, N8)
    assert [r["context"] for r in data["max_batch"]] == [2048, 8192]
    assert "usd_per_chip_hour" not in data and "flops_efficiency" not in data


def test_a_run_that_does_not_fit_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "train", "Llama-3-70B", "H100x8", "--tokens", "1T")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "does not fit" in err and "activations" in err and "--microbatches" in err


def test_a_malformed_toml_model_names_its_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "mine.toml"
    bad.write_text("[small\nn_layers = 2\n")
    code, _, err = run(capsys, "serve", str(bad), "H100")
    assert code == 2 and str(bad) in err and "not valid TOML" in err


def test_an_unknown_architecture_names_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = json.loads((CONFIGS / "Llama-3-8B" / "config.json").read_text())
    (tmp_path / "config.json").write_text(
        json.dumps({**config, "model_type": "rwkv", "architectures": ["RwkvForCausalLM"]})
    )
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
    page = numbers.batching.numbers()
    data = as_json(capsys, "serve", "Llama-3-70B", "H100x8", "--batch", "1,64", "--context", "2048")
    one, b64 = data["rows"]
    assert one["time_s"] == pytest.approx(float(page.worked.one.time_s), rel=1e-12)
    assert one["tokens_per_s_per_user"] == pytest.approx(
        float(page.worked.one.tokens_per_s_per_user), rel=1e-12
    )
    assert one["usd_per_million_output"] == pytest.approx(page.cost.one_cost_value, rel=1e-12)
    assert f"{one['time_s'] * 1e3:.2f}" == page.worked.one_ms  # the text the page shows
    assert b64["time_s"] == pytest.approx(float(page.worked.b64.time_s), rel=1e-12)
    assert f"{b64['usd_per_million_output']:.2f}" == page.cost.b64_cost


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
    assert code == 0 and err == "" and "without the input embedding" in out
    gemma = next(line for line in out.splitlines() if line.startswith("gemma-2-9b"))
    assert "9.24B" in gemma and "Sources:" in out
    data = as_json(capsys, "models", *files)
    assert [m["total_params"] for m in data["models"]] == [9_241_404_928, 46_702_792_704]


# ---- deployments the engines run (#34 section 2) -----------------------------------------------
def test_uneven_expert_parallelism_places_redundant_experts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["fit", "DeepSeek-V3", "H100x72", "--layout", "ep72", "--dtype", "fp8"]
    code, _, err = run(capsys, *argv, "--context", "4096")
    assert code == 0 and "ep72 holds 256 experts and 32 redundant copies, 4 a GPU" in err
    data = as_json(capsys, *argv, "--redundant-experts", "104", "--context", "4096")
    assert data["model"] == "DeepSeek-V3 +104 redundant experts"
    # 360 experts of 3 D F_e in fp8 over 72 GPUs; each EP rank holds the dense weights whole
    spec = get_model("DeepSeek-V3")
    per_expert = spec.n_moe_layers * spec.mlp_params_per_expert
    rest = spec.total_params - spec.n_experts * per_expert - spec.embedding_params
    expected = 5 * per_expert * 1.0 + rest * 1.0 + spec.embedding_params * 2.0  # EP: dense whole
    expected += 104 * spec.d_model * spec.n_moe_layers  # a router column per copy (0.1%)
    assert data["weight_bytes_per_chip"] == pytest.approx(expected, rel=1e-9)
    code, _, err = run(capsys, *argv, "--redundant-experts", "10")
    assert code == 2 and "do not split evenly over ep72; 32" in err


def test_uneven_pipelines_pad_to_the_largest_stage(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fit", "DeepSeek-V3", "H200x16", "--layout", "pp8,tp2", "--dtype", "fp8"]
    code, _, err = run(capsys, *argv, "--context", "4096")
    assert code == 0 and "stages hold 8 or fewer; timed and sized as 64 layers" in err
    code, _, err = run(capsys, "train", "Llama-3-8B", "H100x24", "--layout", "pp3,zero1",
                       "--tokens", "1T", "--microbatches", "64", "--batch-tokens", "4M",
                       "--activations", "checkpointed")  # fmt: skip
    assert code == 0 and "pp3 does not divide Llama-3-8B's 32 layers" in err
    # Llama 3 405B's 126 layers on pp16 still asks for emb (126 + 2 = 16 x 8), as Meta did.
    code, _, err = run(capsys, "train", "Llama-3.1-405B", "H100x8192", "--layout", "tp8,pp16",
                       "--tokens", "1T")  # fmt: skip
    assert code == 2 and "add emb to --layout" in err


def test_the_engines_tp_and_ep_on_the_same_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "serve", "Mixtral-8x7B", "H100x8", "--layout", "tp8,ep8")
    assert code == 0 and "is read as ep8" in err and "vLLM" in err
    engines = as_json(capsys, "serve", "Mixtral-8x7B", "H100x8", "--layout", "tp8,ep8")
    ours = as_json(capsys, "serve", "Mixtral-8x7B", "H100x8", "--layout", "ep8")
    assert engines["layout"] == ours["layout"] == "EP8 DP1"
    assert engines["rows"] == ours["rows"]
    code, _, err = run(capsys, "serve", "Mixtral-8x7B", "H100x8", "--layout", "tp4,ep8")
    assert code == 2 and "--layout" in err


def test_pipelines_show_the_sequences_in_flight(capsys: pytest.CaptureFixture[str]) -> None:
    pp8 = as_json(capsys, "fit", "Llama-3-70B", "H100x8", "--layout", "pp8", "--context", "8192")
    tp8 = as_json(capsys, "fit", "Llama-3-70B", "H100x8", "--layout", "tp8", "--context", "8192")
    row = pp8["max_batch"][0]
    assert row["sequences_in_flight"] == 8 * row["max_batch"]
    # 8 microbatches in flight hold about what TP8 holds in one batch (KV is not split by PP)
    assert row["sequences_in_flight"] == pytest.approx(tp8["max_batch"][0]["max_batch"], rel=0.02)
    _, out, _ = run(capsys, "fit", "Llama-3-70B", "H100x8", "--layout", "pp8", "--context", "8192")
    assert "in flight" in out and "passes all 8 stages in turn" in out


def test_memory_utilization_and_reserve_shrink_the_room(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fit", "Llama-3-70B", "H100x8", "--layout", "tp8", "--context", "8192"]
    full = as_json(capsys, *argv)
    vllm = as_json(capsys, *argv, "--memory-utilization", "0.9", "--reserve", "4G")
    assert full["hbm_utilization"] == 1.0 and full["reserve_bytes_per_chip"] == 0
    weights = full["weight_bytes_per_chip"]
    assert vllm["kv_budget_bytes"] == pytest.approx(8 * (0.9 * 80e9 - 4e9 - weights), rel=1e-12)
    assert vllm["max_batch"][0]["max_batch"] < full["max_batch"][0]["max_batch"]
    code, _, err = run(capsys, *argv, "--reserve", "90G")
    assert code == 2 and "leaves no HBM" in err
    code, _, err = run(capsys, *argv, "--memory-utilization", "1.2")
    assert code == 2 and "--memory-utilization values must be in (0, 1]" in err


# ---- the workload view (#34 section 3) ---------------------------------------------------------
def test_workload_json_is_the_package_s_workload(capsys: pytest.CaptureFixture[str]) -> None:
    from llmmath.beyond.layout_search import workload

    argv = ["workload", "Llama-3-70B", "H100x8", "--layout", "tp8", "--input", "2k",
            "--output", "500", "--concurrency", "64", "--cache-hit", "0.25"]  # fmt: skip
    data = as_json(capsys, *argv)
    dep = Deployment(get_model("Llama-3-70B"), "H100", 8, layout=Layout(tp=8),
                     attention_dtype="bf16")  # fmt: skip
    view = workload(dep, 2000, 500, 64, cache_hit_fraction=0.25)
    assert data["tpot_s"] == pytest.approx(view.tpot_s, rel=1e-12)
    assert data["ttft_s"] == pytest.approx(view.ttft_s, rel=1e-12)
    assert data["output_tokens_per_s_per_chip"] == pytest.approx(
        view.output_tokens_per_s_per_chip, rel=1e-12
    )
    assert data["usd_per_million_output"] == pytest.approx(view.usd_per_million()[1], rel=1e-12)
    rate = as_json(capsys, *argv[:-4], "--rate", "3")
    assert rate["requests_per_s"] == pytest.approx(3.0, rel=1e-6)


def test_workload_calibrates_to_a_measurement(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["workload", "Llama-3-70B", "H100x8", "--layout", "tp8", "--concurrency", "128"]
    floor = as_json(capsys, *argv)["output_tokens_per_s_per_chip"]
    data = as_json(capsys, *argv, "--calibrate", str(0.4 * floor))
    assert data["output_tokens_per_s_per_chip"] == pytest.approx(0.4 * floor, rel=1e-9)
    assert data["measured_over_floor"] == pytest.approx(0.4, rel=1e-9)
    assert 0 < data["fitted_efficiency"] <= 1
    code, _, err = run(capsys, *argv, "--calibrate", str(2 * floor))
    assert code == 2 and "beats the floor" in err
    code, _, err = run(capsys, *argv, "--rate", "1")
    assert code == 2 and "--rate or --concurrency" in err
    code, _, err = run(capsys, "workload", "Llama-3-70B", "H100x8", "--input", "8000",
                       "--output", "500")  # fmt: skip
    assert code == 2 and "--input + --output must be <=" in err


def test_workload_chunked_prefill_is_the_package_s(capsys: pytest.CaptureFixture[str]) -> None:
    """The TTFT and longest step under a token budget a step are
    ``serving_systems.chunked_prefill``'s; the default budget is the engines'; a budget too
    small for the decodes, or given with --disaggregate, is refused naming the flag."""
    from llmmath.beyond.layout_search import workload
    from llmmath.beyond.serving_systems import chunked_prefill

    argv = ["workload", "Llama-3-8B", "H100", "--input", "7000", "--output", "500",
            "--concurrency", "8"]  # fmt: skip
    view = workload(Deployment(get_model("Llama-3-8B"), "H100", attention_dtype="bf16"),
                    7000, 500, 8)  # fmt: skip
    default = as_json(capsys, *argv)
    assert default["prefill_chunk"] == 8192 and default["prefill_chunk_keeps_up"] is True
    assert default["chunked_ttft_s"] == pytest.approx(chunked_prefill(view, 8192).ttft_s, rel=1e-12)
    small = as_json(capsys, *argv, "--prefill-chunk", "2048")
    assert small["longest_step_s"] == pytest.approx(
        chunked_prefill(view, 2048).longest_step_s, rel=1e-12
    )
    assert small["tpot_s"] == pytest.approx(default["tpot_s"], rel=1e-12)  # the mean step
    _, out, _ = run(capsys, *argv, "--prefill-chunk", "2048")
    assert "in 4 steps of <= 2,040 tokens" in out and "with a full chunk (the longest" in out
    _, out, _ = run(capsys, *argv, "--prefill-chunk", "100")
    assert "prompts queue without bound" in out
    code, _, err = run(capsys, *argv, "--prefill-chunk", "8")
    assert code == 2 and "--prefill-chunk must exceed the 8 sequences decoding" in err
    code, _, err = run(capsys, *argv, "--disaggregate", "--prefill-chunk", "512")
    assert code == 2 and "--prefill-chunk is for colocated serving" in err
    assert as_json(capsys, *argv, "--disaggregate")["prefill_chunk"] is None
    subs = next(a for a in cli.build_parser()._actions
                if isinstance(a, argparse._SubParsersAction))  # fmt: skip
    text = " ".join(subs.choices["workload"].format_help().split())
    assert "the mean" in text and "8192, vLLM's and SGLang's" in text


#: Each published serving benchmark: its measured rate as published (output tokens/s per GPU;
#: the source and its setting are the data file's), and measured/floor as the package computes
#: it at that setting, pinned within 0.01 (a change to the floor moves it and fails here).
PUBLISHED_SERVING = {
    # TensorRT-LLM 0.19.0 perf overview: 23,608.58 total over 4 B200
    "trtllm-llama-3.3-70b-fp4-b200-tp4": (23608.58 / 4, 0.17),
    # LMSYS, large-scale EP on 96 H100: 22.3k output tokens/s per node of 8
    "sglang-deepseek-v3-decode-ep72-h100": (22300 / 8, 0.26),
    # DeepSeek open-infra-index day 6: ~14.8k output tokens/s per H800 node of 8
    "deepseek-day-decode-ep144-h800": (1850.0, 0.25),
    # TensorRT-LLM 1.0 perf overview, 1,000 in / 1,000 out
    "trtllm-llama-3.1-8b-fp8-h100-tp1": (15220.0, 0.63),
    "trtllm-llama-3.3-70b-fp8-h100-tp2": (4205 / 2, 0.47),
    "trtllm-llama-3.3-70b-fp8-h200-tp1": (2909.0, 0.56),
    "trtllm-llama-3.1-405b-fp8-h100-tp8": (2919 / 8, 0.30),
    "trtllm-llama-3.1-405b-fp4-b200-tp4": (5209 / 4, 0.24),
    # sgl-project/sglang benchmark_vllm_060: vLLM 0.6.0, 3,700.64 output tokens/s over 4 H100
    "vllm-0.6.0-llama-3.1-70b-bf16-h100-tp4": (3700.64 / 4, 0.28),
}


def test_every_stored_benchmark_is_pinned_here() -> None:
    from llmmath.cli.calibrate import benchmarks

    assert set(benchmarks()) == set(PUBLISHED_SERVING)
    assert len(PUBLISHED_SERVING) >= 8


@pytest.mark.parametrize("key", sorted(PUBLISHED_SERVING))
def test_the_published_measurements_the_book_reproduces(
    capsys: pytest.CaptureFixture[str], key: str
) -> None:
    """Each measurement lies below the floor of its setting at the pinned measured/floor, and
    the calibrated workload meets it; the numbers are the data file's, with their source."""
    from llmmath.cli.calibrate import benchmarks

    spec = benchmarks()[key]
    published, ratio = PUBLISHED_SERVING[key]
    assert spec["source"] and spec["source_date"] and spec["assumes"]
    assert spec["engine"] and spec["engine_version"]
    assert spec["value"] == pytest.approx(published, rel=1e-9)
    argv = ["workload", *spec["workload"].split(), "--calibrate", str(spec["value"])]
    result = as_json(capsys, *argv)
    assert 0 < result["measured_over_floor"] <= 1
    assert result["measured_over_floor"] == pytest.approx(ratio, abs=0.01)
    rate = "decode_tokens_per_s_per_chip" if result["disaggregated"] else (
        "output_tokens_per_s_per_chip")  # fmt: skip
    assert result[rate] == pytest.approx(spec["value"], rel=1e-6)


def test_calibrate_lists_each_benchmark_and_carries_their_median(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``llmmath calibrate``: a row per benchmark with workload's own measured/floor and
    fitted efficiency; the carried efficiency is the median of those not network-bound."""
    import statistics

    report = as_json(capsys, "calibrate")
    rows = {row["key"]: row for row in report["benchmarks"]}
    assert set(rows) == set(PUBLISHED_SERVING)
    key = "trtllm-llama-3.1-8b-fp8-h100-tp1"
    spec = rows[key]
    alone = as_json(capsys, "workload", *spec["workload"].split(), "--calibrate",
                    str(spec["measured_output_tokens_per_s_per_chip"]))  # fmt: skip
    assert spec["measured_over_floor"] == pytest.approx(alone["measured_over_floor"], rel=1e-12)
    assert spec["fitted_efficiency"] == pytest.approx(alone["fitted_efficiency"], rel=1e-12)
    assert not any(row["beats_floor"] for row in rows.values())
    chips_bound = [r["fitted_efficiency"] for r in rows.values()
                   if r["decode_bound_at_floor"] != "network"]  # fmt: skip
    assert len(chips_bound) < len(rows)  # the two DeepSeek deployments are left out
    assert report["carried_efficiency"] == pytest.approx(statistics.median(chips_bound))
    _, out, _ = run(capsys, "calibrate", key)
    assert key in out and "BEATS" not in out
    # book/cli.md's reading: TensorRT-LLM's FP4 70B on B200 is the lowest; memory-bound floors
    # (fp8, one or two chips) are met more closely than compute-bound ones.
    ratios = {k: r["measured_over_floor"] for k, r in rows.items()}
    assert min(ratios, key=ratios.__getitem__) == "trtllm-llama-3.3-70b-fp4-b200-tp4"
    memory = [ratios[k] for k, r in rows.items()
              if r["decode_bound_at_floor"] == "memory" and "fp4" not in k]  # fmt: skip
    compute = [ratios[k] for k, r in rows.items() if r["decode_bound_at_floor"] == "compute"]
    assert memory and compute and min(memory) > max(compute)


def test_every_benchmark_names_the_format_of_its_kv_cache() -> None:
    """A KV cache in fp8 halves what a memory-bound step reads, so each benchmark's setting
    says which format its engine held it in (its source's: TensorRT-LLM's ModelOpt
    checkpoints fp8, vLLM's and SGLang's default the model's dtype) rather than leaving it to
    the command's default."""
    from llmmath.cli import calibrate

    for key, spec in calibrate.benchmarks().items():
        words = shlex.split(spec["workload"])
        assert "--kv-dtype" in words, key
        kv = words[words.index("--kv-dtype") + 1]
        said = "caches KV in fp8" in spec["assumes"] or "KV cache in fp8" in spec["assumes"]
        assert (kv == "fp8") == said, key


def test_a_benchmark_that_beats_its_floor_is_flagged(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """TensorRT-LLM's Llama 3.1 8B FP8 checkpoint caches KV in fp8; set up with a bf16 KV
    cache, the measurement beats the floor: calibrate flags it, plan --calibrate refuses it."""
    from llmmath.cli import calibrate

    stored = calibrate.benchmarks()
    key = "trtllm-llama-3.1-8b-fp8-h100-tp1"
    bf16_cache = stored[key]["workload"].replace("--kv-dtype fp8", "--kv-dtype bf16")
    wrong = dict(stored[key], workload=bf16_cache)
    monkeypatch.setattr(calibrate, "benchmarks", lambda: {**stored, key: wrong})
    report = as_json(capsys, "calibrate", key)
    (row,) = report["benchmarks"]
    assert row["beats_floor"] and row["measured_over_floor"] > 1
    assert row["fitted_efficiency"] is None
    _, out, _ = run(capsys, "calibrate", key)
    assert "BEATS" in out and "the setting is wrong" in out and "fp8 KV cache" in out
    code, out, err = run(capsys, "plan", "Llama-3-8B", "--chips", "H100", "--rate", "4",
                         "--max-chips", "2", "--requests", "200", "--calibrate", key)  # fmt: skip
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--calibrate" in err and "beats its floor" in err and "--kv-dtype" in err
    code, _, err = run(capsys, "calibrate", "no-such-benchmark")
    assert code == 2 and "no-such-benchmark" in err


# ---- one count, one setting (#42) ----------------------------------------------------------
def test_fit_and_best_agree_on_what_fits_with_sliding_windows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Gemma-4-26B-A4B on one H100 at 32,768 tokens: fit said 33 and best picked 4, because
    best counted the 25 windowed layers in full; now both are the step's own count."""
    argv = ["Gemma-4-26B-A4B", "H100x1", "--context", "32768"]
    fit = as_json(capsys, "fit", *argv)
    best = as_json(capsys, "best", *argv, "--latency", "50ms")
    most = fit["max_batch"][0]["max_batch"]
    dep = Deployment(get_model("Gemma-4-26B-A4B"), "H100", 1)
    assert most == float(capacity.max_batch(dep, 32768)) == 33
    (row,) = best["candidates"]
    assert row["batch"] == most and row["limited_by"] == "memory"
    serving.decode_step(dep, most, 32768)  # the step accepts it ...
    with pytest.raises(serving.DoesNotFitError):
        serving.decode_step(dep, most + 1, 32768)  # ... and not one more


def test_best_with_requests_is_workload_at_its_first_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Llama-3-70B in fp8 on 8 H100, 2,000-token prompts and 500-token outputs: best counts
    the prefill, so its first row is workload's answer for that layout and concurrency (it
    ranked decode alone before, and implied 3x the requests workload serves)."""
    common = ["Llama-3-70B", "H100x8", "--dtype", "fp8", "--input", "2000", "--output", "500"]
    best = as_json(capsys, "best", *common, "--latency", "50ms")
    assert best["prefill_counted"] and best["candidates"]
    first = best["candidates"][0]
    layout = first["layout"].lower().replace(" ", ",").replace("dp1", "").strip(",")
    work = as_json(
        capsys, "workload", *common, "--layout", layout, "--concurrency", f"{first['batch']:.0f}"
    )
    assert first["requests_per_s"] == pytest.approx(work["requests_per_s"], rel=1e-12)
    assert first["tokens_per_s_per_chip"] == pytest.approx(
        work["output_tokens_per_s_per_chip"], rel=1e-12
    )
    assert first["time_s"] == pytest.approx(work["tpot_s"], rel=1e-12) and first["time_s"] <= 0.05
    assert best["setting"] == work["setting"]  # the same setting, in the same words
    # One more sequence on that layout misses the target, or does not fit (the KV cache in
    # bf16, the preset's: --dtype fp8 sets the weights only): the batch is the largest.
    more = ("workload", *common, "--layout", layout, "--concurrency", f"{first['batch'] + 1:.0f}")
    if first["limited_by"] == "latency":
        assert as_json(capsys, *more)["tpot_s"] > 0.05
    else:
        assert first["limited_by"] == "memory" and work["kv_dtype"] == "bf16"
        code, _, err = run(capsys, *more)
        assert code == 1 and "does not fit" in err
    decode_only = as_json(capsys, "best", *common[:4], "--latency", "50ms", "--context", "2250")
    assert not decode_only["prefill_counted"]
    decode_rate = decode_only["candidates"][0]["tokens_per_s_per_chip"]
    assert decode_rate > 2 * first["tokens_per_s_per_chip"]  # what sized a fleet 3x too small
    code, _, err = run(capsys, "best", *common, "--latency", "50ms", "--context", "2k")
    assert code == 2 and "not both" in err


# ---- the KV cache's format: --kv-dtype, else the checkpoint's, never --dtype ----------------
#: Each command that holds a KV cache, with the options it needs besides the model.
KV_COMMANDS = {
    "serve": ["H100x8", "--batch", "1"],
    "fit": ["H100x8", "--context", "4096"],
    "best": ["H100x8", "--latency", "50ms", "--top", "1"],
    "workload": ["H100x8", "--concurrency", "8"],
    "plan": ["--chips", "H100", "--rate", "1", "--input", "200", "--output", "50", "--ttft",
             "2s@p50", "--tpot", "50ms@p50", "--max-chips", "8", "--requests", "100",
             "--mode", "aggregated"],
}  # fmt: skip


def _kv_config(tmp_path: Path, **changes: Any) -> str:
    """Llama-3-8B's published config.json with ``changes`` (a folder named for it)."""
    config = {**json.loads((CONFIGS / "Llama-3-8B" / "config.json").read_text()), **changes}
    folder = tmp_path / "Llama-3-8B-kv"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


@pytest.mark.parametrize("command", KV_COMMANDS)
def test_dtype_sets_the_weights_and_leaves_the_kv_cache_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    """--dtype fp8 sets the weights (and matmuls) only: a preset's KV cache stays bf16 (it
    names no checkpoint dtype), a config.json's at its torch_dtype; a kv_cache_scheme puts it
    in fp8; --kv-dtype beats them all. Each command says where it came from, in --json
    (kv_dtype_from, kv_dtype_why) and in its text."""
    options = KV_COMMANDS[command]

    def kv(model: str, *extra: str) -> tuple[str, str, str]:
        data = as_json(capsys, command, model, *options, "--dtype", "fp8", *extra)
        assert data["weight_dtype"] == "fp8"
        return data["kv_dtype"], data["kv_dtype_from"], data["kv_dtype_why"]

    assert kv("Llama-3-8B") == ("bf16", "default", "default; --kv-dtype fp8 to change")
    assert kv("Llama-3-8B", "--kv-dtype", "fp8") == ("fp8", "given", "set by --kv-dtype")
    fp16 = _kv_config(tmp_path, torch_dtype="float16")
    assert kv(fp16) == ("fp16", "checkpoint_dtype", "checkpoint dtype; --kv-dtype fp8 to change")
    scheme = {"quant_method": "compressed-tensors",
              "config_groups": {"g": {"weights": {"type": "float", "num_bits": 8}}},
              "kv_cache_scheme": {"type": "float", "num_bits": 8}}  # fmt: skip
    quantized = _kv_config(tmp_path, quantization_config=scheme)
    assert kv(quantized)[:2] == ("fp8", "kv_cache_scheme")
    assert kv(quantized, "--kv-dtype", "bf16")[:2] == ("bf16", "given")
    code, out, _ = run(capsys, command, quantized, *options)  # the text says it too
    assert code == 0 and "KV cache fp8 (from the checkpoint's kv_cache_scheme)" in out


def test_a_float32_checkpoint_caches_in_bf16_as_engines_serve_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """gemma-2-9b ships float32; vLLM serves it (and so its cache) in bf16: 2 bytes, not 4."""
    data = as_json(capsys, "fit", str(CONFIGS / "gemma-2-9b"), "H100", "--context", "4096")
    assert (data["kv_dtype"], data["kv_dtype_from"]) == ("bf16", "checkpoint_dtype")
    assert data["kv_dtype_why"].startswith("checkpoint fp32, served in bf16")
    spec = data["kv_bytes_per_token"]
    asked = as_json(capsys, "fit", str(CONFIGS / "gemma-2-9b"), "H100", "--kv-dtype", "fp32")
    assert asked["kv_bytes_per_token"] == 2 * spec


@pytest.mark.parametrize("command", KV_COMMANDS)
@pytest.mark.parametrize("value", ["", "  ", "fp7", "FP8"])
def test_a_malformed_kv_dtype_exits_2_naming_the_flag_and_the_formats(
    capsys: pytest.CaptureFixture[str], command: str, value: str
) -> None:
    code, out, err = run(capsys, command, "Llama-3-8B", *KV_COMMANDS[command], "--kv-dtype", value)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(rf"--kv-dtype '{value.strip()} ?' is not a number format", err), err
    assert "known: fp32, bf16, fp16, fp8" in err


def test_every_timed_command_prints_its_setting_line(capsys: pytest.CaptureFixture[str]) -> None:
    """serve, best and workload print Setting.describe() of what they computed, in --json
    and (wrapped for a terminal) in the text."""
    from llmmath.core.dtypes import WeightFormat
    from llmmath.core.setting import Setting

    held = WeightFormat.of(embeddings="bf16", attention="bf16", mlp="bf16", experts="bf16")
    tp8 = Deployment(get_model("Llama-3-70B"), "H100", 8, layout=Layout(tp=8),
                     attention_dtype="bf16", weight_format=held)  # fmt: skip
    tp8_args = ["Llama-3-70B", "H100x8", "--layout", "tp8"]
    stream = ["--input", "1000", "--output", "500", "--concurrency", "16"]
    for argv, context in (
        (["serve", *tp8_args, "--context", "2048"], 2048.0),
        (["workload", *tp8_args, *stream], 1250.0),
        (["best", "Llama-3-70B", "H100x8", "--latency", "30ms", "--context", "2048"], 2048.0),
    ):
        for overlap in ("perfect", "none"):
            data = as_json(capsys, *argv, "--overlap", overlap)
            dep = tp8
            if argv[0] == "best":  # the setting of the first row, the layout best picked
                words = data["candidates"][0]["layout"].lower().split()
                dep = replace(tp8, layout=cli.parse_layout(",".join(words), 8))
            assert data["setting"] == Setting(dep, context, overlap).describe(), argv
            _, out, _ = run(capsys, *argv, "--overlap", overlap)
            assert " ".join(data["setting"].split()) in " ".join(out.split())


def test_workload_times_its_steps_under_the_overlap_it_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--overlap none was printed in the note but the numbers were the floor's."""
    from llmmath.beyond.layout_search import workload

    argv = ["workload", "Llama-3-70B", "H100x8", "--layout", "tp8", "--concurrency", "8"]
    floor, serial = (as_json(capsys, *argv, "--overlap", o) for o in ("perfect", "none"))
    assert serial["tpot_s"] > floor["tpot_s"]
    dep = Deployment(get_model("Llama-3-70B"), "H100", 8, layout=Layout(tp=8),
                     attention_dtype="bf16")  # fmt: skip
    view = workload(dep, 1000, 1000, 8, overlap="none")
    assert serial["tpot_s"] == pytest.approx(view.tpot_s, rel=1e-12)


# ---- the EP all-to-all the config's routing calls for (#42) ---------------------------------
DS_EP64 = ["DeepSeek-V3", "H100x64", "--layout", "ep64", "--dtype", "fp8", "--kv-dtype", "fp8"]


def test_group_limited_routing_is_dispatched_node_limited_in_fp8(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """DeepSeek-V3 routes a token to 4 of 8 expert groups (config.json n_group/topk_group):
    serve counts moe_dispatch's node-limited all-to-all, fp8 out and bf16 back, says so, and
    gives moe_dispatch's node-limited all-to-all per MoE layer; --dispatch per-expert gives
    the one-copy-per-expert step back, and that is slower."""
    from llmmath.beyond import moe_dispatch

    argv = ["serve", *DS_EP64, "--batch", "4096", "--context", "4096"]
    data = as_json(capsys, *argv)
    assert (data["expert_dispatch"], data["dispatch_dtype"]) == ("node_limited", "fp8")
    held = weight_format(cli.build_parser().parse_args(argv), None)
    dep = Deployment(get_model("DeepSeek-V3"), "H100", 64, layout=Layout(ep=64),
                     compute_dtype="fp8", weight_dtype="fp8", kv_dtype="fp8",
                     attention_dtype="bf16", weight_format=held)  # fmt: skip
    # Per MoE layer, moe_dispatch's node-limited all-to-all (the MoE chapter's), times the layers.
    per_layer = moe_dispatch.node_limited_all_to_all(
        "DeepSeek-V3", 4096, 64, "H100", max_domains=4, dispatch_dtype="fp8"
    )
    expected_s = get_model("DeepSeek-V3").n_moe_layers * float(per_layer.all_to_all_s)
    assert data["rows"][0]["communication_s"] == pytest.approx(expected_s, rel=1e-12)
    limited = dataclasses.replace(dep, expert_dispatch="node_limited", dispatch_dtype="fp8")
    lesson_step = serving.decode_step(limited, 4096, 4096)
    assert data["rows"][0]["floor_s"] == pytest.approx(float(lesson_step.time_s), rel=1e-12)
    per_expert = as_json(capsys, *argv, "--dispatch", "per-expert")
    assert (per_expert["expert_dispatch"], per_expert["dispatch_dtype"]) == ("per_expert", "bf16")
    step = serving.decode_step(dep, 4096, 4096)  # the Deployment's default: one copy per expert
    assert per_expert["rows"][0]["communication_s"] == pytest.approx(float(step.ep_s), rel=1e-12)
    assert per_expert["rows"][0]["communication_s"] > 2 * data["rows"][0]["communication_s"]
    _, out, _ = run(capsys, *argv)
    text = " ".join(out.split())
    assert (
        "EP all-to-all of one copy per node reached (experts from 4 of 8 groups) with fp8" in text
    )
    assert "EP all-to-alls of one copy per node reached" in data["setting"]
    fp8_off = as_json(capsys, *argv, "--dispatch-dtype", "bf16")
    assert fp8_off["dispatch_dtype"] == "bf16"
    assert fp8_off["rows"][0]["communication_s"] > data["rows"][0]["communication_s"]


def test_the_default_dispatch_is_the_old_one_copy_per_expert() -> None:
    """A deployment that does not name a dispatch pays the two bf16 all-to-alls per MoE layer
    it always paid (the chapters' numbers do not move)."""
    from llmmath.core import collectives
    from llmmath.core.placement import groups

    dep = Deployment(get_model("DeepSeek-V3"), "H100", 64, layout=Layout(ep=64), weight_dtype="fp8")
    B = 2048.0
    sent = B / 64 * dep.model.d_model * 2 * dep.model.experts_per_token
    one = collectives.all_to_all_time_s(
        sent, 64, dep.chip, per_domain=groups(dep.layout, dep.chip)["EP"].per_domain
    )
    assert float(serving.decode_step(dep, B, 1024).ep_s) == pytest.approx(
        2 * dep.model.n_moe_layers * float(one), rel=1e-12
    )


@pytest.mark.parametrize("model", ["Mixtral-8x7B", str(CONFIGS / "Qwen3-30B-A3B")])
def test_routing_without_groups_keeps_one_copy_per_expert(
    capsys: pytest.CaptureFixture[str], model: str
) -> None:
    data = as_json(capsys, "serve", model, "H100x8", "--layout", "ep8", "--dtype", "fp8")
    assert (data["expert_dispatch"], data["dispatch_dtype"]) == ("per_expert", "bf16")
    assert "one copy per routed expert" in data["setting"]


def test_a_deepseek_config_file_is_node_limited_too(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(CONFIGS / "DeepSeek-V3")
    data = as_json(capsys, "serve", path, "H100x72", "--layout", "ep72", "--batch", "1024")
    assert data["expert_dispatch"] == "node_limited"  # config.json: n_group 8, topk_group 4


def test_train_counts_the_node_limited_all_to_all(capsys: pytest.CaptureFixture[str]) -> None:
    run_args = ["--tokens", "14.8T", "--batch-tokens", "60M", "--microbatches", "32"]
    argv = ["train", "DeepSeek-V3", "H100x2048", "--layout", "ep64,pp16", *run_args,
            "--activations", "checkpointed"]  # fmt: skip
    limited = as_json(capsys, *argv)
    every = as_json(capsys, *argv, "--dispatch", "per-expert")
    assert limited["expert_dispatch"] == "node_limited" and every["expert_dispatch"] == "per_expert"
    ep_limited, ep_every = limited["communication"]["EP"], every["communication"]["EP"]
    assert ep_limited["time_s"] < ep_every["time_s"]
    from llmmath.cli.formatting import place

    layout, padded, _ = place("ep64,pp16", 2048, get_model("DeepSeek-V3"))  # 64 layers, as above
    step = training_step(
        padded, layout, "H100", 60e6, microbatches=32, activations="checkpointed",
    )  # fmt: skip
    assert ep_every["time_s"] == pytest.approx(float(step.communication["EP"].time_s), rel=1e-9)


# ---- attention past the dense cache (#43) ---------------------------------------------------
def test_serve_steps_a_sparse_model_at_its_sparse_read_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("serve", "DeepSeek-V3.2", "H100x16", "--dtype", "fp8", "--kv-dtype", "fp8",
            "--context", "131072")  # fmt: skip
    code, out, err = run(capsys, *argv, "--batch", "16")
    assert code == 0, err
    assert "sparse attention: a step reads 2,048 tokens' KV and every token's" in out
    (long,) = as_json(capsys, *argv, "--batch", "16")["rows"]
    (short,) = as_json(capsys, *argv[:-1], "1", "--batch", "16")["rows"]
    # The memory time grows by 16 sequences' sparse read, 2,048 latents and every index key
    # (fp8), over 16 chips' HBM bandwidth: not by 16 dense caches.
    model, bandwidth = (
        get_model("DeepSeek-V3.2"),
        hardware.get_chip("H100").hbm_bandwidth_bytes_per_s,
    )
    sparse_read = model.kv_bytes_read("fp8", 131072) - model.kv_bytes_read("fp8", 1)
    grown = long["memory_s"] - short["memory_s"]
    assert grown == pytest.approx(16 * sparse_read / (16 * bandwidth), rel=1e-9)
    dense_read = 131071 * model.kv_bytes_per_token("fp8")
    assert grown < 0.3 * 16 * dense_read / (16 * bandwidth)


def test_fit_names_a_hybrids_attention_layers_and_state(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("fit", "Qwen3-Next-80B-A3B", "H100x2", "--dtype", "fp8", "--kv-dtype", "fp8")
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "(12 of 48 layers attend) + 19.8 MB of state per sequence (hybrid)" in out
