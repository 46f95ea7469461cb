"""``llmmath``: the course's model as a calculator for your own model and cluster.

    llmmath serve Llama-3-70B H100x8 --layout tp8 --batch 1,16,64,256 --context 8192
    llmmath fit path/to/config.json H200x8
    llmmath train Llama-3.1-405B H100x8192 --layout tp8,pp16,dp64 --tokens 15.6e12
    llmmath best Mixtral-8x7B H100x8 --latency 30ms
    llmmath chips | llmmath models

MODEL is a preset name, a Hugging Face ``config.json`` (or the folder holding one), or a
TOML file in the package's own format (``file.toml`` or ``file.toml:NAME``). CHIPxN is a chip
preset (or one from ``--chip-file``) and a count. Exit status: 0 answered, 1 the weights do
not fit, 2 bad input (one line on stderr, never a traceback).

>>> parse_cluster("H100x8"), parse_layout("tp8,pp2", 32), parse_values("1,16,2:4", "--batch")
(('H100', 8), Layout(dp=2, tp=8, pp=2, ep=1, zero_stage=0, virtual_stages=1, embedding_as_layers=False), [1.0, 16.0, 2.0, 3.0, 4.0])
"""  # noqa: E501

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from . import cli_commands, cli_training, hardware
from .chip_prices import example_price, list_example_prices
from .cli_format import Report
from .deployment import Deployment
from .hf_config import read_hf_config
from .models import ModelConfig, get_model, list_models, load_models
from .placement import DoesNotFitError, Layout
from .serving import OVERLAP_RULES
from .training_memory import ACTIVATION_MODES

PROG = "llmmath"
#: The most values one range (START:STOP) may expand to.
MAX_VALUES = 1_000_000
_UNITS_S = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_SUFFIXES = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


class InputError(ValueError):
    """Input the command cannot use: shown as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ---- reading the inputs ---------------------------------------------------------------------
def parse_cluster(text: str) -> tuple[str, int]:
    """``"H100x8"`` -> ``("H100", 8)``; a bare chip name is one chip."""
    if text in hardware.list_chips():
        return text, 1
    match = re.fullmatch(r"(.+?)[x×](\d+)", text.strip())
    if not match or int(match.group(2)) < 1:
        raise InputError(f"cluster {text!r} is not CHIPxN, e.g. H100x8")
    return match.group(1), int(match.group(2))


def parse_layout(text: str, n_chips: int) -> Layout:
    """``"tp8,pp2"`` -> the layout on ``n_chips`` with DP filling the rest; ``zero1`` sets
    ZeRO, ``emb`` counts the embedding and output layers as pipeline slots (as Llama 3 did)."""
    degrees: dict[str, int] = {}
    parts = set(filter(None, re.split(r"[,\s]+", text.strip().lower())))
    emb = "emb" in parts
    for part in parts - {"emb"}:
        match = re.fullmatch(r"(tp|pp|ep|dp|zero)(\d+)", part)
        if not match:
            raise InputError(f"layout part {part!r} is not tpN, ppN, epN, dpN, zeroN or emb")
        degrees[match.group(1)] = int(match.group(2))
    zero = degrees.pop("zero", 0)
    dp = degrees.pop("dp", None)
    layout = Layout.for_cluster(n_chips, zero_stage=zero, embedding_as_layers=emb, **degrees)
    if dp is not None and dp != layout.dp:
        raise InputError(f"layout {text!r} on {n_chips} chips leaves dp={layout.dp}, not dp={dp}")
    return layout


def parse_number(text: str, name: str) -> float:
    """``"15e12"``, ``"15T"``, ``"16M"`` -> a float (decimal suffixes k, M, G, T)."""
    scale = _SUFFIXES.get(text[-1:], 1.0) if text else 1.0
    body = text[:-1] if scale != 1.0 else text
    try:
        return float(body.replace("_", "")) * scale
    except ValueError:
        raise InputError(f"{name} {text!r} is not a number (e.g. 8192, 15e12, 16M)") from None


def parse_values(text: str, name: str) -> list[float]:
    """``"1,16,64"`` and ranges ``"1:1000"`` or ``"1024:8192:1024"`` -> numbers."""
    values: list[float] = []
    for part in filter(None, text.split(",")):
        if ":" in part:
            bounds = [parse_number(p, name) for p in part.split(":")]
            if len(bounds) not in (2, 3) or (len(bounds) == 3 and bounds[2] <= 0):
                raise InputError(f"{name} range {part!r} is not START:STOP[:STEP]")
            start, stop, stride = bounds[0], bounds[1], bounds[2] if len(bounds) == 3 else 1.0
            n = int((stop - start) // stride) + 1
            if n > MAX_VALUES:
                raise InputError(
                    f"{name} range {part!r} gives {n:,} values; at most {MAX_VALUES:,}"
                )
            values.extend(start + stride * i for i in range(max(n, 0)))
        else:
            values.append(parse_number(part, name))
    if not values:
        raise InputError(f"{name} {text!r} holds no numbers")
    return values


def parse_latency(text: str) -> float:
    """``"30ms"`` -> 0.03 s; a unit (us, ms, s) is required."""
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(us|µs|ms|s)\s*", text)
    if not match:
        raise InputError(f"latency {text!r} needs a unit, e.g. 30ms or 0.03s")
    return parse_number(match.group(1), "latency") * _UNITS_S[match.group(2)]


def resolve_model(text: str) -> tuple[ModelConfig, list[str]]:
    """A preset, a Hugging Face config.json (or its folder), or ``file.toml[:NAME]``."""
    if text in list_models():
        return get_model(text), []
    path, _, name = text.partition(".toml:")
    path = path + ".toml" if name else text
    file = Path(path)
    if file.is_dir():
        file = file / "config.json"
    if not file.exists():
        raise InputError(
            f"model {text!r} is neither a preset ({', '.join(list_models())}) nor a file"
        )
    if file.suffix == ".toml":
        found = load_models(file)
        if name:
            if name not in found:
                raise InputError(f"{file} has no model {name!r}; it has {', '.join(found)}")
            return found[name], []
        if len(found) > 1:
            raise InputError(f"{file} holds {', '.join(found)}: pick one as {file}:NAME")
        return next(iter(found.values())), []
    return read_hf_config(file)


def load_chip_file(path: str | None) -> list[str]:
    """Add the chips of ``--chip-file`` to the presets; returns their names."""
    if path is None:
        return []
    chips = hardware.load_chips(path)
    for chip in chips.values():
        hardware.add_chip(chip)
    return list(chips)


def parse_efficiency(text: str) -> tuple[float, float]:
    values = parse_values(text, "--efficiency")
    if len(values) not in (1, 2):
        raise InputError(f"--efficiency {text!r} is FLOPS[,BANDWIDTH], e.g. 0.6,0.8")
    return values[0], values[-1]


def checked_layout(text: str, n_chips: int, model: ModelConfig) -> Layout:
    """:func:`parse_layout`, validated against ``model``, with the CLI's spelling of hints."""
    layout = parse_layout(text, n_chips)
    try:
        layout.validate(model)
    except ValueError as error:
        message = str(error).replace("(embedding_as_layers=True, ", "(add emb to --layout, ")
        raise InputError(message) from None
    return layout


def build_deployment(args: argparse.Namespace, model: ModelConfig) -> Deployment:
    chip_name, n = parse_cluster(args.cluster)
    chip = hardware.get_chip(chip_name)
    layout = checked_layout(args.layout, n, model) if args.layout else None
    compute = args.dtype if args.dtype in chip.peak_flop_per_s else "bf16"
    flops, bandwidth = parse_efficiency(args.efficiency)
    return Deployment(
        model,
        chip,
        n,
        layout=layout,
        compute_dtype=compute,
        weight_dtype=args.dtype,
        kv_dtype=args.kv_dtype or args.dtype,
        flops_efficiency=flops,
        bandwidth_efficiency=bandwidth,
        usd_per_chip_hour=args.price,
    )


# ---- the subcommands ------------------------------------------------------------------------
def _serve(args: argparse.Namespace, dep: Deployment) -> Report:
    context = parse_number(args.context, "--context")
    prompt = parse_number(args.prompt, "--prompt") if args.prompt else context
    batches = parse_values(args.batch, "--batch")
    return cli_commands.serve(dep, batches, context, max(prompt, 1.0), args.overlap)


def _fit(args: argparse.Namespace, dep: Deployment) -> Report:
    contexts = parse_values(args.context, "--context")
    contexts = [c for c in contexts if c <= dep.model.max_context] or [dep.model.max_context]
    return cli_commands.fit(dep, contexts, parse_values(args.batch, "--batch"))


def _best(args: argparse.Namespace, dep: Deployment) -> Report:
    if args.top < 1:
        raise InputError(f"--top must be >= 1; got {args.top}")
    latency = parse_latency(args.latency)
    context = parse_number(args.context, "--context")
    return cli_commands.best(dep, latency, context, args.top, args.overlap)


def _train(args: argparse.Namespace, model: ModelConfig) -> Report:
    chip_name, n = parse_cluster(args.cluster)
    chip = hardware.get_chip(chip_name)
    layout = checked_layout(args.layout or "", n, model)
    micro = args.microbatches or (1 if layout.pp == 1 else 2 * layout.pp)
    price = args.price
    if price is not None and not price > 0:
        raise InputError(f"--price must be > 0 USD per chip-hour; got {price}")
    if price is None and chip.name in list_example_prices():
        price = example_price(chip).usd_per_chip_hour
    return cli_training.train(
        model, chip, layout, parse_number(args.tokens, "--tokens"),
        parse_number(args.batch_tokens, "--batch-tokens"), micro, args.activations,
        parse_efficiency(args.mfu)[0], price,
    )  # fmt: skip


def _common(sub: argparse.ArgumentParser, *, cluster: bool = True) -> None:
    sub.add_argument("model", help="preset name, config.json (or its folder), or file.toml[:NAME]")
    if cluster:
        sub.add_argument("cluster", metavar="CHIPxN", help="chip preset and count, e.g. H100x8")
    sub.add_argument("--chip-file", help="TOML file of extra chips (shape of data/hardware.toml)")
    sub.add_argument("--price", type=float, help="USD per chip-hour (default: the example price)")
    sub.add_argument("--json", action="store_true", help="print JSON (SI units) for scripts")


def _serving_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--layout", help="e.g. tp8, tp4,pp2 or tp2,ep4 (DP fills the rest)")
    sub.add_argument("--dtype", default="bf16", help="weights (and matmuls, if the chip can)")
    sub.add_argument("--kv-dtype", help="KV cache (default: --dtype)")
    sub.add_argument("--efficiency", default="1.0", help="share of peak FLOPS[,BANDWIDTH]")
    sub.add_argument("--overlap", choices=OVERLAP_RULES, default="perfect",
                     help="perfect: the floor; none: the serial estimate")  # fmt: skip


EPILOG = """examples:
  llmmath serve Llama-3-70B H100x8 --layout tp8 --batch 1,16,64,256 --context 8192
  llmmath fit path/to/config.json H200x8
  llmmath best Mixtral-8x7B H100x8 --latency 30ms
  llmmath train Llama-3.1-405B H100x8192 --layout tp8,pp16,dp64,zero1,emb --tokens 15.6T

MODEL is a preset (llmmath models), a Hugging Face config.json or its folder, or
file.toml[:NAME] in the package's format; CHIPxN a chip preset (llmmath chips) or
one from --chip-file, and a count. Every time is a floor, not a promise.
Exit status: 0 answered, 1 the weights do not fit, 2 bad input."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="The LLM Math course's model as a calculator for your model and chips.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subs = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    serve = subs.add_parser("serve", help="decode step, TTFT and cost per batch")
    _common(serve)
    _serving_options(serve)
    serve.add_argument("--batch", default="1,16,64,256", help="e.g. 1,16,64 or 1:1000")
    serve.add_argument("--context", default="8192", help="tokens cached per sequence")
    serve.add_argument("--prompt", help="prompt tokens for TTFT and input cost (default: context)")
    fit = subs.add_parser("fit", help="max batch at a context, max context at a batch")
    _common(fit)
    _serving_options(fit)
    fit.add_argument("--context", default="2048,8192,32768,131072")
    fit.add_argument("--batch", default="1,16,64,256")
    best = subs.add_parser("best", help="cheapest layout and batch for a latency target")
    _common(best)
    _serving_options(best)
    best.add_argument("--latency", required=True, help="time per output token, e.g. 30ms")
    best.add_argument("--context", default="4096")
    best.add_argument("--top", type=int, default=8, help="rows to show (default 8)")
    train = subs.add_parser("train", help="days, chip-hours, memory, bubble, communication")
    _common(train)
    train.add_argument("--tokens", required=True, help="training tokens, e.g. 15e12 or 15T")
    train.add_argument("--layout", help="e.g. tp8,pp16,dp64,zero1 (default: DP only)")
    train.add_argument("--batch-tokens", default="16M", help="tokens per step (default 16M)")
    train.add_argument("--microbatches", type=int, help="per replica (default 1, or 2*pp)")
    train.add_argument("--activations", choices=ACTIVATION_MODES, default="stored")
    train.add_argument(
        "--mfu", default="1.0", help="matmuls' share of peak FLOP/s while they run (default 1)"
    )
    chips = subs.add_parser("chips", help="chip presets with their sources")
    chips.add_argument("--chip-file")
    chips.add_argument("--json", action="store_true")
    models = subs.add_parser("models", help="model presets (or files) with their sources")
    models.add_argument("model", nargs="*", help="files or presets (default: every preset)")
    models.add_argument("--json", action="store_true")
    return parser


def run(args: argparse.Namespace) -> tuple[Report, list[str]]:
    """The report of one parsed command line, and notes to print on stderr."""
    added = load_chip_file(getattr(args, "chip_file", None))
    if args.command == "chips":
        names = [*hardware.PRESET_NAMES, *added]
        return cli_training.chips({n: hardware.get_chip(n) for n in names}), []
    if args.command == "models":
        resolved = [resolve_model(m) for m in args.model or list_models()]
        notes = [f"{m.name}: {note}" for m, ns in resolved for note in ns]
        return cli_training.models([m for m, _ in resolved]), notes
    model, notes = resolve_model(args.model)
    if args.command == "train":
        return _train(args, model), notes
    commands = {"serve": _serve, "fit": _fit, "best": _best}
    return commands[args.command](args, build_deployment(args, model)), notes


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``llmmath`` with ``argv`` (default: the command line); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    where = f"{PROG} {args.command}"
    try:
        report, notes = run(args)
    except DoesNotFitError as error:
        print(f"{where}: does not fit: {error}", file=sys.stderr)
        return 1
    except (ValueError, TypeError, KeyError, OSError) as error:
        if os.environ.get("LLMMATH_DEBUG"):
            raise
        message = f"{error.strerror}: {error.filename}" if isinstance(error, OSError) else error
        print(f"{where}: error: {message}", file=sys.stderr)
        return 2
    report.data["notes"] = notes
    for note in notes:
        print(f"{where}: note: {note}", file=sys.stderr)
    try:
        print(report.render(args.json), flush=True)
    except BrokenPipeError:  # e.g. piped into head: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
