"""Reading a command line's inputs: the model (a preset, a config.json or a TOML file), extra
chips, the weights' formats, and the :class:`~llmmath.core.deployment.Deployment` the options
describe (its layout, formats, efficiencies, price and expert dispatch).
"""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path

from llmmath.cli.formatting import (
    InputError,
    did_you_mean,
    given_layout,
    parse_cluster,
    parse_dtype,
    parse_number,
    parse_price,
    parse_share,
    place,
    without_function_name,
)
from llmmath.core import hardware
from llmmath.core.deployment import Deployment
from llmmath.core.dtypes import WeightFormat
from llmmath.core.hf_config import read_checkpoint
from llmmath.core.hf_quant import CheckpointFormats, KVCacheDtype, kv_cache_dtype
from llmmath.core.models import ModelConfig, get_model, list_models, load_models

#: ``best``'s context (decode alone) and ``workload``'s request lengths when none are given.
BEST_CONTEXT, WORKLOAD_INPUT, WORKLOAD_OUTPUT = "4096", "1000", "1000"


# ---- reading the inputs ---------------------------------------------------------------------
def resolve_model(text: str) -> tuple[ModelConfig, list[str], CheckpointFormats | None]:
    """A preset, a Hugging Face config.json (or its folder), or ``file.toml[:NAME]``; notes on
    what a config leaves out, and the formats a config.json names (None for a preset or a
    TOML model: they name none)."""
    if text in list_models():
        return get_model(text), [], None
    path, _, name = text.partition(".toml:")
    path = path + ".toml" if name else text
    file = Path(path)
    if file.is_dir():
        file = file / "config.json"
    if not file.exists():
        raise InputError(
            f"model {text!r} is neither a preset nor a file{did_you_mean(text, list_models())} "
            "(llmmath models lists the presets)"
        )
    if file.suffix == ".toml":
        try:
            found = load_models(file)
        except tomllib.TOMLDecodeError as error:
            raise InputError(f"{file}: not valid TOML ({error})") from None
        except ValueError as error:
            raise InputError(f"{file}: {without_function_name(str(error))}") from None
        if name:
            if name not in found:
                raise InputError(f"{file} has no model {name!r}; it has {', '.join(found)}")
            return found[name], [], None
        if len(found) > 1:
            raise InputError(f"{file} holds {', '.join(found)}: pick one as {file}:NAME")
        return next(iter(found.values())), [], None
    return read_checkpoint(file)


def load_chip_file(path: str | None) -> list[str]:
    """Add the chips of ``--chip-file`` to the presets; returns their names."""
    if path is None:
        return []
    try:
        chips = hardware.load_chips(path)
    except OSError as error:
        why = os.strerror(error.errno) if error.errno else "cannot be read"
        raise InputError(f"--chip-file {path}: {why}") from None
    except ValueError as error:
        raise InputError(f"--chip-file: {without_function_name(str(error))}") from None
    for chip in chips.values():
        hardware.add_chip(chip)
    return list(chips)


def weight_format(args: argparse.Namespace, checkpoint: WeightFormat | None) -> WeightFormat:
    """Each part's format: the dtype options where given (embeddings bf16 unless
    ``--embedding-dtype``), else the checkpoint's ``quantization_config``, else bf16."""
    for flag, text in (
        ("--dtype", args.dtype),
        ("--expert-dtype", args.expert_dtype),
        ("--embedding-dtype", args.embedding_dtype),
        ("--kv-dtype", getattr(args, "kv_dtype", None)),
    ):
        if text is not None and not text.strip():  # empty: refused, not read as the default
            parse_dtype(text, flag)
    flags = (args.dtype, args.expert_dtype, args.embedding_dtype)
    if checkpoint is not None and flags == (None, None, None):
        return checkpoint
    dtype = parse_dtype(args.dtype or "bf16", "--dtype")
    return WeightFormat.of(
        embeddings=parse_dtype(args.embedding_dtype or "bf16", "--embedding-dtype"),
        attention=dtype,
        mlp=dtype,
        experts=parse_dtype(args.expert_dtype or dtype, "--expert-dtype"),
    )


def kv_cache(args: argparse.Namespace, checkpoint: CheckpointFormats | None) -> KVCacheDtype:
    """The KV cache's format: ``--kv-dtype``, else the checkpoint's ``kv_cache_scheme``, else
    its own dtype, else bf16 (:func:`~llmmath.core.hf_quant.kv_cache_dtype`); ``--dtype``
    sets the weights and matmuls only."""
    text = getattr(args, "kv_dtype", None)
    given = None if text is None else parse_dtype(text, "--kv-dtype")
    if checkpoint is None:
        return kv_cache_dtype(given)
    return kv_cache_dtype(given, checkpoint.kv_cache, checkpoint.dtype)


def build_deployment(
    args: argparse.Namespace, model: ModelConfig, checkpoint: CheckpointFormats | None = None
) -> tuple[Deployment, list[str], KVCacheDtype]:
    """The deployment the options describe, notes on how its layout was read, and where its
    KV cache's format came from."""
    chip_name, n = parse_cluster(args.cluster)
    chip = hardware.get_chip(chip_name)
    layout_text = given_layout(getattr(args, "layout", None))
    layout, notes = None, list[str]()
    redundant = getattr(args, "redundant_experts", None)
    if layout_text is not None:
        layout, model, notes = place(layout_text, n, model, redundant)
    elif redundant is not None:
        raise InputError("--redundant-experts needs an ep degree in --layout")
    utilization = parse_share(args.memory_utilization, "--memory-utilization")[0]
    reserve = parse_number(args.reserve, "--reserve", low=0)
    if reserve >= chip.hbm_bytes * utilization:
        raise InputError(f"--reserve {args.reserve} leaves no HBM: {chip.name} holds "
                         f"{chip.hbm_bytes / 1e9:,.0f} GB, x --memory-utilization "
                         f"{utilization:g}")  # fmt: skip
    fmt = weight_format(args, checkpoint.weights if checkpoint is not None else None)
    kv = kv_cache(args, checkpoint)
    compute = fmt.main if fmt.main in chip.peak_flop_per_s else "bf16"
    attention = parse_dtype(getattr(args, "attention_dtype", "bf16"), "--attention-dtype")
    if attention not in chip.peak_flop_per_s:
        raise InputError(f"--attention-dtype {attention}: {chip.name} has no peak for it")
    flops, bandwidth = _efficiency(getattr(args, "efficiency", "1"))
    dispatch, dispatch_dtype = expert_dispatch(args, model, chip, compute)
    return (
        Deployment(
            model,
            chip,
            n,
            layout=layout,
            hbm_utilization=utilization,
            reserve_bytes_per_chip=reserve,
            compute_dtype=compute,
            weight_dtype=fmt.main,
            kv_dtype=kv.dtype,
            flops_efficiency=flops,
            bandwidth_efficiency=bandwidth,
            usd_per_chip_hour=parse_price(getattr(args, "price", None)),
            weight_format=fmt,
            attention_dtype=attention,
            expert_dispatch=dispatch,
            dispatch_dtype=dispatch_dtype,
        ),
        notes,
        kv,
    )


def expert_dispatch(
    args: argparse.Namespace, model: ModelConfig, chip: hardware.Chip, compute: str
) -> tuple[str, str | None]:
    """How an EP all-to-all is counted: by default node-limited where the config's routing
    is group-limited (DeepSeek's n_group/topk_group), and then dispatched in fp8 where the
    experts compute in fp8 (DeepSeek's own choice); else one bf16 copy per routed expert."""
    choice = getattr(args, "dispatch", "auto")
    grouped = bool(model.expert_groups)
    kind = {"auto": "node_limited" if grouped else "per_expert", "per-expert": "per_expert",
            "node-limited": "node_limited"}[choice]  # fmt: skip
    text = getattr(args, "dispatch_dtype", None)
    if text is not None:
        dtype = parse_dtype(text, "--dispatch-dtype")
        if dtype not in chip.peak_flop_per_s:
            raise InputError(f"--dispatch-dtype {dtype}: {chip.name} has no {dtype} arithmetic")
        return kind, dtype
    fp8 = kind == "node_limited" and choice == "auto" and compute == "fp8"
    return kind, "fp8" if fp8 else None


def _efficiency(text: str) -> tuple[float, float]:
    values = parse_share(text, "--efficiency", (1, 2))
    return values[0], values[-1]


def request_lengths(args: argparse.Namespace, dep: Deployment) -> tuple[float, float]:
    """``--input`` and ``--output`` (each the workload's default where not given), checked
    against the model's context limit."""
    I = parse_number(args.input or WORKLOAD_INPUT, "--input", whole=True, low=1)  # noqa: E741
    O = parse_number(args.output or WORKLOAD_OUTPUT, "--output", whole=True, low=1)  # noqa: E741
    if dep.model.max_context < I + O:
        raise InputError(f"--input + --output must be <= {dep.model.name}'s max_context="
                         f"{dep.model.max_context:,}; got {I + O:,.0f}")  # fmt: skip
    return I, O


__all__ = [
    "BEST_CONTEXT",
    "WORKLOAD_INPUT",
    "WORKLOAD_OUTPUT",
    "build_deployment",
    "expert_dispatch",
    "kv_cache",
    "load_chip_file",
    "request_lengths",
    "resolve_model",
    "weight_format",
]
