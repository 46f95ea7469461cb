"""The exercises' parts on the depth sections pin numbers the package computes.

A hidden test holds literals (listed in tests/specs/<assignment>.py, where test_grading.py
checks they are what the hidden tests pin); here the package recomputes each one from the
exercise's inputs, so a change in a model or its data that moves an answer fails here, by name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from grading_support import AssignmentSpec, load_specs

from llmmath.beyond import focus, number_formats, speculative
from llmmath.core.deployment import Deployment

ROOT = Path(__file__).resolve().parents[2]
ANSWERS = {spec.assignment: spec.answers for spec in load_specs()}


def roofline_laptop() -> dict[str, float]:
    """Part 5: the laptop (90e9 B/s, 32e9 B, 75% usable), no KV cache (context 0)."""
    laptop = focus.FocusMachine("laptop", "the roofline exercise's laptop", 32e9, 90e9, 0.75)
    small = focus.local_decode(laptop, "Gemma-3-12B", "int4", 0)
    large = focus.local_decode(laptop, "Gemma-3-27B", "int8", 0)
    missing = large.memory_needed_bytes - laptop.usable_bytes
    assert (missing > 0) == (not large.fits), "missing bytes and the package's fits disagree"
    return {"gemma_12b_int4_tokens_per_s": small.tokens_per_s, "missing_27b_int8_bytes": missing}


def batching_speculative() -> dict[str, float]:
    """Part 5: k = 4 drafts, a = 0.75, 3% of a weight read each; Llama-3-70B on 8 H100s."""
    llama = Deployment("Llama-3-70B", "H100", 8)
    drafts, acceptance, share = 4, 0.75, 0.03
    step = speculative.speculative_step(llama, 4, 2048, drafts, acceptance, share)
    return {
        "spec_tokens_per_step": float(speculative.expected_tokens_per_step(acceptance, drafts)),
        "spec_speedup_batch4": float(step.speedup),
        # The smallest batch at which speculation stops paying, at 256 tokens of context.
        "spec_break_even_batch": speculative.break_even_batch(
            llama, 256, drafts, acceptance, share
        ),
    }


def kv_cache_fp8() -> dict[str, float]:
    """Part 5: Llama-3.1-405B on 16 H100s at 131,072 tokens, FP8 cache, then FP8 weights."""
    recipes = (("bf16", "fp8", "bf16"), ("fp8", "fp8", "fp8"))
    fmt = number_formats.format_effects("Llama-3.1-405B", "H100", 16, 131_072, recipes)
    # The exercise runs the FP8 server at its capacity wall: the package's cheapest batch.
    assert fmt.batch[1] == fmt.max_batch[1] < fmt.critical_batch[1]
    return {
        "max_batch_128k_fp8_kv": float(fmt.max_batch[0]),
        "max_batch_128k_fp8": float(fmt.max_batch[1]),
        "tokens_per_s_128k_fp8": float(fmt.batch[1] / fmt.step_time_s[1]),
    }


@pytest.mark.parametrize(
    ("assignment", "computed"),
    [
        ("roofline", roofline_laptop),
        ("batching", batching_speculative),
        ("kv_cache", kv_cache_fp8),
    ],
)
def test_pinned_answers_are_the_packages(
    assignment: str, computed: Callable[[], dict[str, float]]
) -> None:
    values = computed()
    pinned = {name: ANSWERS[assignment][name] for name in values}
    assert pinned == pytest.approx(values, rel=1e-12), f"tests/specs/{assignment}.py"


# ---- each lesson's "Graded exercise." paragraph says what the exercise holds -----------------
NUMBER_WORDS = {"four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


@pytest.mark.parametrize("spec", load_specs(), ids=lambda spec: spec.assignment)
def test_lesson_states_the_exercise_s_parts_and_points(spec: AssignmentSpec) -> None:
    lesson = (ROOT / "lessons" / f"{spec.assignment}.md").read_text()
    words = " ".join(lesson.split("**Graded exercise.**", 1)[1].split()[:40])
    found = re.search(r"(\w+) autograded parts .*? (\d+) points", words)
    assert found, f"lessons/{spec.assignment}.md: no 'N autograded parts ... M points' line"
    assert NUMBER_WORDS[found.group(1)] == len(spec.test_cells)
    assert float(found.group(2)) == spec.autograded_points + spec.manual_points


def test_instructor_guide_states_the_roofline_exercise_s_points() -> None:
    roofline = {spec.assignment: spec for spec in load_specs()}["roofline"]
    guide = " ".join((ROOT / "book" / "instructor.md").read_text().split())
    assert f"roofline exercise ({roofline.autograded_points:g} autograded points)" in guide
