"""One setting, one answer (issue 42): the settings that appear in more than one place.

Each entry names a setting (a :class:`~llmmath.core.setting.Setting` and a batch) and every
place that shows a number of it: a lesson's ``{eval}`` name (what its hidden cells compute),
a sentence of a book page, a line of the ``llmmath`` command the CLI page runs, or an
exercise's answer (the value its hidden tests pin; the part prints the Setting's line). The test
computes the number once from the setting and holds every place to it, so a number carried
from one chapter to another, or to the CLI, is the same number, and a place that changes its
setting without saying so fails here.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter

import pytest
from grading_support import load_specs, printed_settings
from lesson_support import ROOT, lesson

from llmmath import cli, pricing
from llmmath.core import capacity
from llmmath.core import data as tables
from llmmath.core.deployment import Deployment
from llmmath.core.placement import Layout
from llmmath.core.setting import Setting
from llmmath.display import numbers

EVEN = Deployment("Llama-3-70B", "H100", 8)
TP8 = Deployment("Llama-3-70B", "H100", 8, layout=Layout(tp=8))
#: Llama-3-70B on one H100: a what-if (its bf16 weights do not fit), the roofline's worked step.
ALONE = Deployment("Llama-3-70B", "H100", 1, allow_overflow=True)
BIG = Deployment("Llama-3.1-405B", "H100", 16)
#: Llama-3-70B's shape with a 128k context (Llama-3.1-70B's): 2026 traffic's server (#43).
AGENTIC = Deployment(pricing.with_context_limit("Llama-3-70B", 131_072), "H100", 8)
FRONTIER = Deployment(
    "DeepSeek-V3",
    "H100",
    16,
    weight_dtype="fp8",
    compute_dtype="fp8",
    attention_dtype="bf16",
    layout=Layout(ep=16),
    expert_dispatch="node_limited",  # DeepSeek's routing: as the CLI counts it
    dispatch_dtype="fp8",
)


def ms(decimals: int) -> Callable[[Setting, float], str]:
    return lambda s, b: format(float(s.step(b).time_s) * 1e3, f".{decimals}f")


def cost(decimals: int) -> Callable[[Setting, float], str]:
    return lambda s, b: format(float(s.step(b).cost_per_million_tokens_usd()), f".{decimals}f")


def weight_read_ms(s: Setting, b: float) -> str:
    return format(float(s.step(b).weight_read_s) * 1e3, ".2f")


def batch(s: Setting, b: float) -> str:
    return format(b, ",.0f")


def what_if_read_ms(s: Setting, b: float) -> str:
    return format(float(s.step(b, allow_overflow=True).memory_s) * 1e3, ".1f")


def answer_ms(decimals: int) -> Callable[[float], str]:
    """An exercise's answer in seconds, shown as a place that shows milliseconds would."""
    return lambda seconds: format(seconds * 1e3, f".{decimals}f")


def answer_count(value: float) -> str:
    return format(value, ",.0f")


SPECS = {spec.assignment: spec for spec in load_specs()}


@dataclass(frozen=True)
class Place:
    #: A lesson's file name, a book page's path from the root ("book/intro.md"), or an
    #: exercise's source ("solutions/<assignment>/<assignment>.ipynb").
    page: str
    #: The lesson's {eval} name, for a book page the sentence the number sits in, with ``{}``
    #: where it goes, or the exercise's answer.
    name: str
    shows: Callable[[Setting, float], str]
    #: For an exercise: its answer (the hidden tests' value) written as ``shows`` writes it.
    answer: Callable[[float], str] | None = None


@dataclass(frozen=True)
class Entry:
    what: str
    setting: Setting
    batch: float
    places: tuple[Place, ...]


REGISTRY = (
    Entry(
        "Llama-3-70B on 8 H100, alone, nothing cached: the weight read",
        Setting(EVEN, 0),
        1,
        (
            Place(
                "book/intro.md",
                "four latencies in the course, each true in its own "
                "setting: {} ms with an empty cache",
                ms(2),
            ),
            Place("batching.md", "latency.weight_floor_ms_2f", ms(2)),
            Place("batching.md", "worked.one_weight_ms", weight_read_ms),
            Place("parallelism.md", "latency.tp8_weights_ms", weight_read_ms),
        ),
    ),
    Entry(
        "Llama-3-70B on 8 H100, alone, 2,048 tokens, floor",
        Setting(EVEN, 2048),
        1,
        (
            Place("book/intro.md", "{} ms with 2,048 tokens cached (the batching chapter", ms(2)),
            Place("batching.md", "worked.one_ms", ms(2)),
            Place("batching.md", "latency.pareto_2k_1_ms", ms(2)),
            Place("batching.md", "speculative.draft_plain_ms", ms(2)),
            Place("batching.md", "slow.chips_8.alone_ms", ms(1)),
            Place("batching.md", "slow.chips_8.alone_cost", cost(2)),
            Place("batching.md", "cost.one_cost_1f", cost(1)),
        ),
    ),
    Entry(
        "Llama-3-70B on 8 H100 as TP8, alone, 2,048 tokens, serial estimate",
        Setting(TP8, 2048, "none"),
        1,
        (
            Place("book/intro.md", "and {} ms at 2,048 tokens with TP8's all-reduces", ms(2)),
            Place("parallelism.md", "latency.tp8_serial_ms", ms(2)),
            Place("batching.md", "slow.chips_8.tp_ms", ms(1)),
            Place("batching.md", "slow.chips_8.tp_cost", cost(2)),
            Place("solutions/parallelism/parallelism.ipynb", "step_s", ms(2), answer_ms(2)),
        ),
    ),
    Entry(
        "Llama-3-70B on 8 H100 as TP8, alone, 8,192 tokens, floor",
        Setting(TP8, 8192),
        1,
        (
            Place("book/intro.md", "{} ms with 8,192 tokens cached as TP8", ms(2)),
            Place("book/cli.md", "serve Llama-3-70B H100x8 --layout tp8", ms(2)),
            Place("batching.md", "latency.pareto_8k_1_ms", ms(2)),  # spread evenly: the same floor
        ),
    ),
    Entry(
        "Llama-3-70B on 8 H100, 2,048 tokens, the HBM full",
        Setting(EVEN, 2048),
        float(capacity.max_batch(EVEN, 2048)),
        (
            Place("batching.md", "cost.full_2k_batch", batch),
            Place("batching.md", "falling.max_b_2k", batch),
            Place("batching.md", "fast.fast_std_batch", batch),
            Place("batching.md", "slow.slow_floor_batch", batch),
            Place("batching.md", "cost.full_2k_cost", cost(3)),
            Place("overtraining_pricing.md", "serving.full_2k_batch", batch),
        ),
    ),
    Entry(
        "DeepSeek-V3 on 16 H100 as EP16, 2,048 tokens, 20 ms per token",
        Setting(FRONTIER, 2048),
        1105,
        (
            Place("batching.md", "frontier.fleet_batch", batch),
            Place("batching.md", "frontier.fleet_step_ms", ms(1)),
        ),
    ),
    Entry(
        "Llama-3-70B on one H100 (a what-if), alone, nothing cached: the weight read",
        Setting(ALONE, 0),
        1,
        (
            Place("roofline.md", "decode.llama_memory_ms", what_if_read_ms),
            Place(
                "solutions/roofline/roofline.ipynb",
                "weight_read_time_s",
                what_if_read_ms,
                answer_ms(1),
            ),
        ),
    ),
    Entry(
        "Llama-3-70B on 8 H100, 8,192 tokens, the HBM full",
        Setting(EVEN, 8192),
        float(capacity.max_batch(EVEN, 8192)),
        (
            Place("batching.md", "falling.max_b_8k", batch),
            Place("kv_cache.md", "capacity.llama_max_batch_8k", batch),
            Place("solutions/batching/batching.ipynb", "max_batch_8k", batch, answer_count),
            Place(
                "solutions/batching/batching.ipynb", "step_time_max_batch_s", ms(2), answer_ms(2)
            ),
        ),
    ),
    Entry(
        "Llama-3.1-405B on 16 H100, 131,072 tokens, the HBM full",
        Setting(BIG, 131072),
        float(capacity.max_batch(BIG, 131072)),
        (
            Place("kv_cache.md", "capacity.big_max_batch_128k", batch),
            Place("solutions/kv_cache/kv_cache.ipynb", "max_batch_128k", batch, answer_count),
            Place("solutions/kv_cache/kv_cache.ipynb", "step_time_128k_s", ms(2), answer_ms(2)),
        ),
    ),
    Entry(
        "Llama-3-70B's shape with a 128k context on 8 H100, 65,536 tokens, the HBM full",
        Setting(AGENTIC, 65_536),
        float(capacity.max_batch(AGENTIC, 65_536)),
        (
            Place("batching.md", "agentic.agentic_batch", batch),
            Place("overtraining_pricing.md", "traffic.agentic_batch", batch),
        ),
    ),
)


def _text(page: str) -> str:
    return " ".join((ROOT / page).read_text().split())


def _cli_floor_ms(command: str, batch: float) -> str:
    """The floor column of the CLI page's own ``llmmath`` command, for one batch."""
    (line,) = [
        line for line in _text("book/cli.md").split('llmmath("')[1:] if line.startswith(command)
    ]
    argv = line.split('")')[0].split()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(argv) == 0
    row = re.search(rf"^\s+{int(batch)}\s+([\d.]+)\s", out.getvalue(), re.MULTILINE)
    assert row, f"no row for batch {batch} in the output of {command}"
    return row.group(1)


def _shown(place: Place) -> str | None:
    """What ``place`` shows, or None for a book sentence (checked by its pattern)."""
    if place.page.endswith("cli.md"):
        return None
    if "/" in place.page:
        return None
    return str(attrgetter(place.name)(lesson(place.page)))


@pytest.mark.parametrize(
    ("entry", "place"),
    [(e, p) for e in REGISTRY for p in e.places],
    ids=lambda x: x.what if isinstance(x, Entry) else f"{x.page}:{x.name[:30]}",
)
def test_every_place_shows_the_settings_number(entry: Entry, place: Place) -> None:
    expected = place.shows(entry.setting, entry.batch)
    if place.page.endswith("cli.md"):
        assert _cli_floor_ms(place.name, entry.batch) == expected
    elif place.answer is not None:
        assignment = place.page.split("/")[1]
        shown = place.answer(SPECS[assignment].answers[place.name])
        assert shown == expected, f"{place.page}'s {place.name} is {shown}, not {entry.what}'s"
    elif "/" in place.page:
        sentence = " ".join(place.name.format(expected).split())
        assert sentence in _text(place.page), f"{place.page} should say {sentence!r}"
    else:
        assert _shown(place) == expected, f"{place.page}'s {place.name} is not {entry.what}"


def test_the_frontier_batch_is_the_lessons_own() -> None:
    # The entry's batch is the batching lesson's search result, not a number typed here.
    n = numbers.batching.numbers()
    assert n.frontier.fleet.batch == REGISTRY[5].batch
    assert n.frontier.frontier == FRONTIER


def test_each_setting_says_what_it_counts() -> None:
    lines = {e.what: e.setting.describe() for e in REGISTRY}
    assert "no communication counted" in lines[REGISTRY[0].what]
    assert "TP all-reduces counted" in lines[REGISTRY[2].what]
    assert "serial estimate" in lines[REGISTRY[2].what]
    assert "EP all-to-alls" in lines[REGISTRY[5].what]


def test_validation_takeaway_spans_the_old_cases_and_the_cli_reproductions() -> None:
    # Issue 42: the takeaway said 0.25-0.76 for four 2020-22 cases while the course's newer
    # reproductions (book/cli.md, --calibrate) land outside it; both ranges are now computed.
    from llmmath.validation import published

    bounded = [c for c in published.published_comparisons() if c.is_floor]
    assert len(bounded) == 4
    low, high = min(c.efficiency for c in bounded), max(c.efficiency for c in bounded)
    assert (round(low, 2), round(high, 2)) == (0.25, 0.76)
    ratios = []
    for spec in tables.table("systems")["reproduced"].values():
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            cli.main(shlex.split(f"workload {spec['workload']} --calibrate {spec['value']} --json"))
        ratios.append(float(json.loads(out.getvalue())["measured_over_floor"]))
    assert min(ratios) < low  # which is why the old range was not the takeaway's to give
    assert max(ratios) <= 1.0 and high <= 1.0  # the floors are never beaten
    words = _text("book/validation.md")
    assert "land between {glue:text}`serving_low:.2f` and {glue:text}`serving_high:.2f`" in words
    assert "Published systems land between {glue:text}`palm_decode_eff:.2f`" not in words


@pytest.mark.parametrize(
    ("page", "name", "entry"),
    [
        ("batching.md", "worked.setting", 1),
        ("batching.md", "fast.fast_setting", 1),
        ("batching.md", "speculative.spec_setting", 1),
        ("parallelism.md", "latency.setting", 2),
        ("batching.md", "frontier.frontier_setting", 5),
    ],
)
def test_the_line_a_page_shows_is_the_registrys_setting(page: str, name: str, entry: int) -> None:
    # The Setting a page prints above its numbers is the registry's, so the line, the
    # numbers and the other places that show them cannot drift apart.
    assert attrgetter(name)(lesson(page)) == REGISTRY[entry].setting
    assert numbers.batching.numbers().slow.lone_tp[8] == REGISTRY[2].setting


def test_workload_charges_the_mtp_draft_as_the_lesson_does() -> None:
    # The batching lesson's MTP step on the frontier setting (DeepSeek-V3 on 16 H100 as EP16,
    # 1,024 sequences at 2,048 tokens) charges the draft's own KV read; `llmmath workload
    # --mtp` times its decode step with layout_search.workload, which must charge the same.
    from llmmath.beyond.layout_search import workload

    n = numbers.batching.numbers()
    lesson_step = n.speculative.mtp_big
    assert float(lesson_step.draft_kv_share) > 0  # the lesson charges it
    # Requests whose mean context is the lesson's T: I + O / 2 = 2,048.
    view = workload(FRONTIER, 1548, 1000, 1024, mtp_acceptance=n.speculative.mtp["acceptance_low"])
    assert numbers.batching.T == 1548 + 1000 / 2 and n.frontier.frontier == FRONTIER
    assert view.mtp_tokens_per_step == pytest.approx(float(lesson_step.tokens_per_step), rel=1e-12)
    assert view.decode_step_s == pytest.approx(float(lesson_step.time_s), rel=1e-12)


@pytest.mark.parametrize(
    ("assignment", "line", "entry"),
    [
        ("parallelism", "setting_part6", 2),
        ("roofline", "setting_part2", 6),
        ("batching", "setting_part3", 7),
        ("kv_cache", "setting_part2", 8),
        ("kv_cache", "setting_part3", 8),
    ],
)
def test_the_line_an_exercise_prints_is_the_registrys_setting(
    assignment: str, line: str, entry: int
) -> None:
    # The Setting a part prints is the registry's, so the part's answers (held to the entry's
    # numbers above) and the lessons that show the same setting cannot drift apart.
    (printed,) = printed_settings(assignment)[line]
    assert printed == REGISTRY[entry].setting, f"{assignment} {line}: not {REGISTRY[entry].what}"
    assert any(place.page.endswith(f"{assignment}.ipynb") for place in REGISTRY[entry].places)
