"""``llmmath``: the course's model as a calculator for your own model and cluster. This module
parses a command line (every subcommand's parser, its flags into a deployment), runs the
subcommand's report (:mod:`llmmath.cli.serve_and_fit`, :mod:`~llmmath.cli.search`,
:mod:`~llmmath.cli.training`, :mod:`~llmmath.cli.plan`, :mod:`~llmmath.cli.calibrate`), prints
it and exits with a status (:func:`main`).

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
import dataclasses
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from llmmath import __version__
from llmmath.beyond import layout_search, planning, serving_systems
from llmmath.cli import calibrate as cli_calibrate
from llmmath.cli import plan as cli_plan
from llmmath.cli import search as cli_search
from llmmath.cli import serve_and_fit
from llmmath.cli import training as cli_training
from llmmath.cli.formatting import (
    NUMBERS,
    InputError,
    Report,
    did_you_mean,
    given_layout,
    parse_cluster,
    parse_latency,
    parse_length,
    parse_number,
    parse_price,
    parse_share,
    parse_tokens,
    parse_values,
    place,
    without_function_name,
)
from llmmath.cli.formatting import parse_layout as parse_layout  # for scripts and the example above
from llmmath.cli.inputs import (
    BEST_CONTEXT,
    WORKLOAD_INPUT,
    WORKLOAD_OUTPUT,
    build_deployment,
    expert_dispatch,
    load_chip_file,
    request_lengths,
    resolve_model,
)
from llmmath.core import hardware
from llmmath.core.chip_prices import example_price, list_example_prices
from llmmath.core.deployment import Deployment
from llmmath.core.dtypes import BYTES_PER_ELEMENT
from llmmath.core.hf_quant import CheckpointFormats, KVCacheDtype
from llmmath.core.models import ModelConfig, list_models
from llmmath.core.placement import DoesNotFitError
from llmmath.core.serving import OVERLAP_RULES
from llmmath.core.training_memory import ACTIVATION_MODES

PROG = "llmmath"


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Each subcommand's options (set by build_parser), for "did you mean".
        self.flags: dict[str, list[str]] = {}

    def unknown(self, command: str, extra: list[str]) -> NoReturn:
        """Refuse the first of ``extra``, saying which option was meant or where it belongs."""
        flag = extra[0].split("=")[0]
        if not flag.startswith("-"):
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        elsewhere = [name for name, flags in self.flags.items() if flag in flags]
        hint = (
            f" ({' and '.join(elsewhere)} take{'s' * (len(elsewhere) == 1)} it)"
            if elsewhere
            else did_you_mean(flag, self.flags.get(command, []))
        )
        self.error(f"{command} has no option {flag}{hint}")

    def error(self, message: str) -> NoReturn:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            message += did_you_mean(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)))
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ---- the subcommands ------------------------------------------------------------------------
def _serve(args: argparse.Namespace, dep: Deployment, kv: KVCacheDtype) -> Report:
    context = parse_length(args.context, "--context", dep.model)
    prompt = parse_length(args.prompt, "--prompt", dep.model) if args.prompt else context
    batches = parse_values(args.batch, "--batch", whole=True, low=1)
    return serve_and_fit.serve(dep, batches, context, prompt, args.overlap, kv)


def _fit(args: argparse.Namespace, dep: Deployment, kv: KVCacheDtype) -> Report:
    limit = dep.model.max_context
    if args.context is None:  # the defaults up to the model's limit, and the limit
        contexts = [c for c in FIT_CONTEXTS if c < limit] + [float(limit)]
    else:
        contexts = parse_tokens(args.context, "--context", dep.model)
    batches = parse_values(args.batch, "--batch", whole=True, low=1)
    return serve_and_fit.fit(dep, contexts, batches, kv)


def _best(args: argparse.Namespace, dep: Deployment, kv: KVCacheDtype) -> Report:
    if args.top < 1:
        raise InputError(f"--top must be >= 1; got {args.top}")
    latency = parse_latency(args.latency)
    requests = None
    if args.input or args.output:
        if args.context:
            raise InputError("give --context (decode alone) or --input/--output (prefill "
                             "counted), not both")  # fmt: skip
        requests = request_lengths(args, dep)
    context = parse_length(args.context or BEST_CONTEXT, "--context", dep.model)
    return cli_search.best(dep, latency, context, args.top, args.overlap, requests, kv)


def _workload(args: argparse.Namespace, dep: Deployment, kv: KVCacheDtype) -> Report:
    I, O = request_lengths(args, dep)  # noqa: E741
    options = {
        "cache_hit_fraction": cli_plan.cache_hit(args.cache_hit) if args.cache_hit is not None
        else 0.0,
        "disaggregated": args.disaggregate,
        "mtp_acceptance": parse_share(args.mtp, "--mtp")[0] if args.mtp else None,
        "overlap": args.overlap,
    }  # fmt: skip
    if args.rate and args.concurrency:
        raise InputError("give --rate or --concurrency, not both")
    if args.prefill_chunk and args.disaggregate:
        raise InputError("--prefill-chunk is for colocated serving; --disaggregate prefills apart")
    chunk = parse_number(args.prefill_chunk, "--prefill-chunk", whole=True, low=1) if (
        args.prefill_chunk) else None  # fmt: skip
    if args.rate:
        rate = parse_number(args.rate, "--rate")
        if not rate > 0:
            raise InputError(f"--rate must be > 0 requests/s; got {args.rate!r}")
        view = layout_search.concurrency_for_rate(dep, rate, I, O, **options)
    else:
        C = parse_number(args.concurrency, "--concurrency", whole=True, low=1) if (
            args.concurrency) else None  # fmt: skip
        view = layout_search.workload(dep, I, O, C, **options)
    measured = efficiency = None
    at_floor = view
    if args.calibrate:
        measured = parse_number(args.calibrate, "--calibrate")
        if not measured > 0:
            raise InputError(f"--calibrate must be > 0 output tokens/s per chip; got {measured}")
        view, efficiency = layout_search.calibrate(view, measured)
    return cli_training.workload_report(
        view, args.overlap, measured, efficiency, at_floor, chunk, kv
    )


def _plan(
    args: argparse.Namespace, model: ModelConfig, checkpoint: CheckpointFormats | None
) -> tuple[Report, list[str]]:
    chips = cli_plan.parse_chips(args.chips)
    cli_plan.check_plot_path(args.plot)
    # The template: the model, formats and knobs on the first chip type, spread over the most
    # chips searched (the search replaces chips, counts and layouts).
    max_chips = parse_number(args.max_chips, "--max-chips", whole=True, low=1)
    args.cluster = f"{next(iter(chips))}x{max_chips:.0f}"
    dep, placed, kv = build_deployment(args, model, checkpoint)
    calibration = cli_calibrate.plan_calibration(args.calibrate, args.efficiency, workload_data)
    if calibration is not None:
        dep = dataclasses.replace(dep, flops_efficiency=calibration[0],
                                  bandwidth_efficiency=calibration[0])  # fmt: skip
    stream, targets = cli_plan.read_stream(args, dep)
    mode = args.mode
    plans = planning.plan(dep, chips, stream, targets, modes=mode)
    report = cli_plan.plan_report(dep, plans, stream, targets, mode, kv)
    report.data["calibration"] = None
    if calibration is not None:
        report.data["calibration"] = {"efficiency": calibration[0], "from": calibration[1]}
        report.add(calibration[1])
    if args.plot:
        cli_plan.frontier_plot(dep, plans, stream, targets, args.plot)
        report.data["plot"] = args.plot
        report.add(f"frontier drawn to {args.plot}")
    return report, placed


def _train(args: argparse.Namespace, model: ModelConfig) -> tuple[Report, list[str]]:
    chip_name, n = parse_cluster(args.cluster)
    chip = hardware.get_chip(chip_name)
    layout, model, placed = place(given_layout(args.layout) or "", n, model)
    if args.microbatches is not None and args.microbatches < 1:
        raise InputError(f"--microbatches must be >= 1; got {args.microbatches}")
    micro = args.microbatches or (1 if layout.pp == 1 else 2 * layout.pp)
    price = parse_price(args.price)
    if price is None and chip.name in list_example_prices():
        price = example_price(chip).usd_per_chip_hour
    tokens = parse_number(args.tokens, "--tokens", low=1)
    batch_tokens = parse_number(args.batch_tokens, "--batch-tokens", whole=True, low=1)
    if batch_tokens > tokens:
        raise InputError(
            f"--batch-tokens {args.batch_tokens} is more than --tokens {args.tokens}: "
            "a run takes at least one step"
        )
    if batch_tokens < layout.dp * micro:
        raise InputError(
            f"--batch-tokens {args.batch_tokens} leaves under one token per microbatch: "
            f"dp={layout.dp} replicas x {micro} microbatches need >= {layout.dp * micro:,}"
        )
    (mfu,) = parse_share(args.mfu, "--mfu")
    dispatch = expert_dispatch(args, model, chip, "bf16")  # training's matmuls: bf16
    report = cli_training.train(
        model, chip, layout, tokens, batch_tokens, micro, args.activations, mfu, price, dispatch
    )
    return report, placed


class _Help(argparse.RawDescriptionHelpFormatter):
    """Each option's help ends with its default, unless the help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "default" not in text:
            text += " (default: %(default)s)"
        return text


#: ``fit``'s contexts when none are given: those under the model's limit, then the limit.
FIT_CONTEXTS = (2048.0, 8192.0, 32768.0, 131072.0)
_LENGTHS = "tokens; 8k = 8,000, 8Ki = 8,192"
_JSON = "print JSON (SI units) for scripts"


def _common(sub: argparse.ArgumentParser, *, price: bool = True) -> None:
    sub.add_argument("model", help="preset name, config.json (or its folder), or file.toml[:NAME]")
    sub.add_argument("cluster", metavar="CHIPxN", help="chip preset and count, e.g. H100x8")
    sub.add_argument("--chip-file", help="TOML file of extra chips, shaped like "
                     "data/hardware.toml (default: the presets only)")  # fmt: skip
    if price:
        sub.add_argument("--price", type=float, help="USD per chip-hour (default: the chip's "
                         "example price, data/chip_prices.toml; some chips have none)")  # fmt: skip
    sub.add_argument("--json", action="store_true", help=_JSON)


def _dispatch_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--dispatch", choices=("auto", "per-expert", "node-limited"),
                     default="auto", help="how the EP all-to-all sends a token: one copy per "
                     "routed expert, or one per node it reaches (auto: node-limited where the "
                     "config's routing is: DeepSeek's n_group/topk_group)")  # fmt: skip
    _dispatch_dtype_option(sub)


def _dispatch_dtype_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--dispatch-dtype", help="format tokens go to their experts in (default: "
                     "fp8 for auto node-limited dispatch with fp8 matmuls, as DeepSeek serves; "
                     "else bf16)")  # fmt: skip


def _serving_options(
    sub: argparse.ArgumentParser, *, layout: bool = True, timed: bool = True
) -> None:
    if layout:
        sub.add_argument("--layout", help="e.g. tp8, tp4,pp2 or tp2,ep4; DP fills the rest; "
                         "tpN,epN as the engines write it (default: an even split, no "
                         "communication)")  # fmt: skip
        sub.add_argument("--redundant-experts", type=int, help="expert copies beside the E "
                         "experts under ep (default: the fewest that split evenly)")  # fmt: skip
    if timed:
        _dispatch_options(sub)
    sub.add_argument("--dtype", help="attention, MLP and expert weights, and matmuls where the "
                     f"chip has peaks for it ({', '.join(BYTES_PER_ELEMENT)}; default: a "
                     "config.json's quantization_config, else bf16); not the KV cache: "
                     "--kv-dtype")  # fmt: skip
    sub.add_argument("--expert-dtype", help="routed experts' weights (default: --dtype)")
    sub.add_argument("--embedding-dtype", help="input embedding and output layer (default: "
                     "bf16, as quantized checkpoints keep them)")  # fmt: skip
    sub.add_argument("--kv-dtype", help="KV cache (default: a config.json's kv_cache_scheme, "
                     "else its torch_dtype, float32 served as bf16, else bf16; --dtype leaves "
                     "it alone)")  # fmt: skip
    sub.add_argument("--memory-utilization", default="1.0", help="share of each chip's HBM "
                     "weights and KV may fill, in (0, 1]; vLLM's default is 0.9")  # fmt: skip
    sub.add_argument("--reserve", default="0", help="bytes per chip kept for activations, "
                     "CUDA graphs and the runtime, e.g. 4G")  # fmt: skip
    if timed:
        sub.add_argument("--attention-dtype", default="bf16",
                         help="the format attention's QK^T and AV compute in")  # fmt: skip
        sub.add_argument("--efficiency", default="1.0", help="share of peak FLOP/s[,of HBM "
                         "bandwidth], each in (0, 1]; one value sets both")  # fmt: skip
        sub.add_argument("--overlap", choices=OVERLAP_RULES, default="perfect",
                         help="perfect: the floor; none: the serial estimate")  # fmt: skip


EPILOG = f"""examples:
  llmmath serve Llama-3-70B H100x8 --layout tp8 --batch 1,16,64,256 --context 8Ki
  llmmath fit path/to/config.json H200x8
  llmmath best Mixtral-8x7B H100x8 --latency 30ms
  llmmath train Llama-3.1-405B H100x8192 --layout tp8,pp16,dp64,zero1,emb --tokens 15.6T
  llmmath plan Llama-3-70B --chips H100,B200=5 --rate 20 --input 2000 --output 500 \\
      --ttft 2s@p99 --tpot 50ms@p99 --dtype fp8

MODEL is a preset (llmmath models), a Hugging Face config.json or its folder, or
file.toml[:NAME] in the package's format; CHIPxN a chip preset (llmmath chips) or
one from --chip-file, and a count. Numbers take suffixes:
{NUMBERS}.
Every time is a floor, not a promise.
Exit status: 0 answered, 1 the weights do not fit, 2 bad input."""


def _plan_parser(plan: argparse.ArgumentParser) -> None:
    plan.add_argument("model", help="preset name, config.json (or its folder), or file.toml[:NAME]")
    cli_plan.add_stream_flags(plan)
    plan.add_argument("--json", action="store_true", help=_JSON)
    _serving_options(plan, layout=False, timed=False)
    _dispatch_options(plan)
    plan.add_argument("--attention-dtype", default="bf16",
                      help="the format attention's QK^T and AV compute in")  # fmt: skip
    plan.add_argument("--efficiency", default="1.0", help="share of peak FLOP/s[,of HBM "
                      "bandwidth], each in (0, 1]; one value sets both")  # fmt: skip
    plan.add_argument("--calibrate", nargs="?", const="benchmarks", help="size at a measured "
                      "efficiency instead of the floor: alone, the median that the published "
                      "benchmarks imply (llmmath calibrate); or one benchmark's KEY "
                      "(default: none, the floor)")  # fmt: skip


def build_parser() -> _Parser:
    parser = _Parser(
        prog=PROG,
        description="The LLM Math course's model as a calculator for your model and chips.",
        epilog=EPILOG,
        formatter_class=_Help,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subs = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return subs.add_parser(name, help=text, description=text, formatter_class=_Help)

    serve = command("serve", "decode step, TTFT and cost per batch")
    _common(serve)
    _serving_options(serve)
    serve.add_argument("--batch", default="1,16,64,256",
                       help="sequences per step (whole): 1,16,64 or 1:1000")  # fmt: skip
    serve.add_argument("--context", default="8192", help=f"tokens cached per sequence ({_LENGTHS})")
    serve.add_argument(
        "--prompt", help="prompt tokens for TTFT and input cost (default: --context)"
    )
    fit = command("fit", "max batch at a context, max context at a batch")
    _common(fit, price=False)
    _serving_options(fit, timed=False)
    fit.add_argument("--context", help=f"contexts ({_LENGTHS}; default: 2048, 8192, 32768 and "
                     "131072 below the model's limit, and the limit)")  # fmt: skip
    fit.add_argument(
        "--batch", default="1,16,64,256", help="batches to find the longest context of"
    )
    best = command("best", "cheapest layout and batch for a latency target (tries every layout)")
    _common(best)
    _serving_options(best, layout=False)
    best.add_argument("--latency", required=True, help="time per output token, e.g. 30ms")
    best.add_argument("--context", help=f"tokens cached per sequence, decode alone ({_LENGTHS}; "
                      f"default: {BEST_CONTEXT})")  # fmt: skip
    best.add_argument("--input", help="prompt tokens per request: rank the stream workload "
                      f"serves, prefill counted (default: {WORKLOAD_INPUT} with "
                      "--output)")  # fmt: skip
    best.add_argument("--output", help="output tokens per request, with --input (default: "
                      f"{WORKLOAD_OUTPUT} with --input)")  # fmt: skip
    best.add_argument("--top", type=int, default=8, help="rows to show")
    work = command("workload", "a stream of requests: throughput, TTFT, TPOT, cost per token")
    _common(work)
    _serving_options(work)
    work.add_argument("--input", help="prompt tokens per request, the mean of the stream's "
                      "(no length distribution is modelled; default: "
                      f"{WORKLOAD_INPUT})")  # fmt: skip
    work.add_argument("--output", help="output tokens per request, the mean (default: "
                      f"{WORKLOAD_OUTPUT})")  # fmt: skip
    work.add_argument("--prefill-chunk", help="tokens a step, decodes first, prompts chunked into "
                      f"the rest (default: {serving_systems.default_prefill_chunk():.0f}, vLLM's "
                      "and SGLang's on H100/H200)")  # fmt: skip
    work.add_argument("--concurrency", help="requests decoding at once (default: the most "
                      "that fit at --input + --output)")  # fmt: skip
    work.add_argument("--rate", help="requests per second instead (default: none)")
    work.add_argument("--cache-hit", help="share of prompt tokens from the prefix cache, "
                      "not recomputed (default: 0)")  # fmt: skip
    work.add_argument("--disaggregate", action="store_true",
                      help="prefill and decode on separate copies of the chips")  # fmt: skip
    work.add_argument("--mtp", help="one multi-token-prediction draft a step, accepted with "
                      "this probability (default: none)")  # fmt: skip
    work.add_argument("--calibrate", help="measured output tok/s per chip: fit the efficiency "
                      "that gives it (default: none, the floor)")  # fmt: skip
    _plan_parser(command("plan", "the cheapest chips and layout for a stream of requests within "
                         "TTFT and TPOT targets, queueing counted"))  # fmt: skip
    calib = command("calibrate", "published serving benchmarks against their floors: "
                    "measured/floor and the efficiency plan --calibrate carries")  # fmt: skip
    calib.add_argument("benchmark", nargs="*", help="benchmark keys (default: every one)")
    calib.add_argument("--json", action="store_true", help=_JSON)
    train = command("train", "days, chip-hours, memory, bubble, communication")
    _common(train)
    train.add_argument("--tokens", required=True, help="training tokens, e.g. 15e12 or 15T")
    train.add_argument("--layout", help="e.g. tp8,pp16,dp64,zero1 (default: DP only)")
    train.add_argument("--batch-tokens", default="16M", help="tokens per step, all replicas")
    train.add_argument("--microbatches", type=int,
                       help="per replica a step (default: 1; 2 x pp with a pipeline)")  # fmt: skip
    train.add_argument("--activations", choices=ACTIVATION_MODES, default="stored",
                       help="keep activations for the backward, or recompute")  # fmt: skip
    _dispatch_options(train)
    train.add_argument("--mfu", default="1.0",
                       help="matmuls' share of peak FLOP/s while they run, in (0, 1]")  # fmt: skip
    chips = command("chips", "chip presets with their sources")
    chips.add_argument("--chip-file", help="TOML file of extra chips to list (default: none)")
    chips.add_argument("--json", action="store_true", help=_JSON)
    models = command("models", "model presets (or files) with their sources")
    models.add_argument("model", nargs="*", help="files or presets (default: every preset)")
    models.add_argument("--json", action="store_true", help=_JSON)
    parser.flags = {
        name: sorted(flag for a in sub._actions for flag in a.option_strings)
        for name, sub in subs.choices.items()
    }
    return parser


def run(args: argparse.Namespace) -> tuple[Report, list[str]]:
    """The report of one parsed command line, and notes to print on stderr."""
    added = load_chip_file(getattr(args, "chip_file", None))
    if args.command == "chips":
        names = [*hardware.PRESET_NAMES, *added]
        return cli_training.chips({n: hardware.get_chip(n) for n in names}), []
    if args.command == "models":
        resolved = [resolve_model(m) for m in args.model or list_models()]
        notes = [f"{m.name}: {note}" for m, ns, _ in resolved for note in ns]
        held = [f.weights.description if f and f.weights else None for _, _, f in resolved]
        return cli_training.models([m for m, _, _ in resolved], held), notes
    if args.command == "calibrate":
        return cli_calibrate.calibrate(args.benchmark, workload_data), []
    model, notes, checkpoint = resolve_model(args.model)
    if args.command == "train":
        report, placed = _train(args, model)
        return report, [*notes, *placed]
    if args.command == "plan":
        report, placed = _plan(args, model, checkpoint)
        return report, [*notes, *placed]
    commands = {"serve": _serve, "fit": _fit, "best": _best, "workload": _workload}
    dep, placed, kv = build_deployment(args, model, checkpoint)
    return commands[args.command](args, dep, kv), [*notes, *placed]


def workload_data(argv: list[str]) -> dict[str, Any]:
    """``llmmath workload ARGV``'s report data (what ``calibrate`` runs each benchmark with)."""
    report, _ = run(build_parser().parse_args(argv))
    return report.data


def flag_message(message: str, args: argparse.Namespace) -> str:
    """A package error in the command's words: ``serving.decode_step(): batch must ...`` ->
    ``--batch must ...`` where the command has that option, else without the function."""
    match = re.match(r"^[\w.]+\(\): (\w+)\b", message)
    if not match:
        return message
    flag = "--" + match.group(1).replace("_", "-")
    text = without_function_name(message)
    return flag + text[len(match.group(1)) :] if hasattr(args, match.group(1)) else text


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``llmmath`` with ``argv`` (default: the command line); returns the exit status."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        assert isinstance(parser, _Parser)
        parser.unknown(args.command, extra)
    where = f"{PROG} {args.command}"
    try:
        report, notes = run(args)
    except DoesNotFitError as error:
        print(f"{where}: does not fit: {without_function_name(str(error))}", file=sys.stderr)
        return 1
    except (ValueError, TypeError, KeyError, OSError, ArithmeticError) as error:
        if os.environ.get("LLMMATH_DEBUG"):
            raise
        message = (
            f"{error.strerror}: {error.filename}"
            if isinstance(error, OSError)
            else flag_message(str(error), args)
        )
        print(f"{where}: error: {' '.join(message.split())}", file=sys.stderr)
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
