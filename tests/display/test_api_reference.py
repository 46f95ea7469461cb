"""The book's API reference (book/api/, book/_ext/llmmath_api.py): every public module on one
layer's page, every public callable with Parameters and Returns from its contract, entries
linked to the lessons that use them and lessons' code linked back."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from html import unescape

import pytest
from site_support import HTML, ROOT

import llmmath
from llmmath.core.contracts import Contract

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import llmmath_api  # book/_ext is Sphinx's, not a package

API = HTML / "book" / "api"


def public_modules() -> list[str]:
    found = [m.name for m in pkgutil.walk_packages(llmmath.__path__, "llmmath.")]
    shown = (n.removeprefix("llmmath.") for n in found if "._" not in n)
    return sorted(shown)


def test_every_public_module_is_on_exactly_one_page() -> None:
    listed = [m for layer in llmmath_api.LAYERS.values() for m in layer.modules]
    twice = sorted({m for m in listed if listed.count(m) > 1})
    assert not twice, f"modules on two API pages: {twice}"
    missing = sorted(set(public_modules()) - set(listed))
    assert not missing, f"modules on no API page (add them to LAYERS in llmmath_api.py): {missing}"
    gone = sorted(set(listed) - set(public_modules()))
    assert not gone, f"LAYERS lists modules the package no longer has: {gone}"
    pages = sorted(p.stem for p in (ROOT / "book" / "api").glob("*.rst"))
    assert pages == sorted(llmmath_api.LAYERS), "one book/api/<layer>.rst page per layer"


@pytest.mark.parametrize(
    ("name", "unit"),
    [
        ("decode_s", "seconds"),
        ("kv_bytes", "bytes"),
        ("hbm_bandwidth_bytes_per_s", "bytes per second"),
        ("peak_flop_per_s", "FLOP per second"),
        ("usd_per_chip_hour", "US dollars per chip-hour"),
        ("input_usd_per_million", "US dollars per million tokens"),
        ("batch", "sequences"),
        ("prompt_tokens", "tokens"),
        ("flops_efficiency", "a fraction"),
        ("n_layers", "a count"),
        ("model", ""),
        ("overlap", ""),
    ],
)
def test_a_name_says_its_unit(name: str, unit: str) -> None:
    assert llmmath_api.unit_of(name) == unit


def contracted() -> list[tuple[str, object]]:
    """Every public function and method with a contract, by its documented dotted name."""
    found = []
    for layer in llmmath_api.LAYERS.values():
        for short in layer.modules:
            module = importlib.import_module(f"llmmath.{short}")
            for name, value in vars(module).items():
                if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
                    continue
                members = [(name, value)]
                if inspect.isclass(value):
                    members += [
                        (f"{name}.{m}", v)
                        for m, v in vars(value).items()
                        if not m.startswith("_") and callable(v)
                    ]
                found += [
                    (f"{module.__name__}.{n}", v)
                    for n, v in members
                    if isinstance(getattr(v, "__contract__", None), Contract)
                ]
    return found


def entries() -> dict[str, str]:
    """Each documented object's entry on the built API pages: dotted name -> its text."""
    if not (API / "core.html").exists():
        pytest.fail("the book is not built: run `make book`", pytrace=False)
    found = {}
    for page in API.glob("*.html"):
        text = page.read_text()
        starts = list(re.finditer(r'<dt class="sig[^"]*" id="(llmmath\.[\w.]+)">', text))
        ends = [m.start() for m in starts[1:]] + [len(text)] * bool(starts)  # to the next one
        for match, end in zip(starts, ends, strict=True):
            words = unescape(re.sub(r"<[^>]+>", " ", text[match.end() : end])).split()
            found[match.group(1)] = re.sub(r" ([.,;:)])", r"\1", " ".join(words))
    return found


def test_every_contracted_callable_has_parameters_and_its_constraints() -> None:
    shown = entries()
    functions = contracted()
    assert len(functions) > 200, f"found only {len(functions)} contracted callables"
    missing = [name for name, _ in functions if name not in shown]
    assert not missing, f"contracted callables with no API entry: {missing[:10]}"
    for name, function in functions:
        spec = function.__contract__  # type: ignore[attr-defined]
        text = " ".join(shown[name].split())
        for parameter, constraint in spec.constraints.items():
            assert "Parameters" in text, f"{name}: no Parameters"
            assert f"{parameter} – " in text or f"{parameter} –" in text, f"{name}: {parameter}"
            # The words of its error message, less the overflow bound the page says once.
            words = " ".join(str(constraint.allowed).split())
            words = words.replace(f" and <= {llmmath_api.MAX_REAL:g}", "")
            words = llmmath_api.E_NOTATION.sub(lambda m: llmmath_api._plain(float(m[0])), words)
            assert words in text, f"{name}: {parameter} lacks {words!r}"


def test_decode_step_says_units_constraints_returns_and_its_lessons() -> None:
    text = " ".join(entries()["llmmath.core.serving.decode_step"].split())
    assert (
        "batch – unit: sequences. accepts: a number or an array of numbers, finite and > 0" in text
    )
    assert "context – unit: tokens." in text
    assert "overlap – accepts: a string, one of ['none', 'perfect']. Default 'perfect'." in text
    assert "Returns: DecodeStep" in text
    page = (API / "core.html").read_text()
    entry = page[page.index('id="llmmath.core.serving.decode_step"') :]
    entry = entry[: entry.index('<dt class="sig', 10)]
    assert 'href="../../lessons/batching.html"' in entry, "decode_step does not link its lesson"


def test_a_lessons_code_links_to_its_reference_entry() -> None:
    """pages.source(kv_cache.max_context) in the KV lesson links to its API entry, and that
    entry links back, saying its code is shown there."""
    lesson = (HTML / "lessons" / "kv_cache.html").read_text()
    assert 'href="../book/api/chapters.html#llmmath.kv_cache.max_context"' in lesson
    text = " ".join(entries()["llmmath.kv_cache.max_context"].split())
    assert "Taught in: The KV cache" in text and "(its code is shown there)" in text, text
    shown = llmmath_api.lessons_using()["llmmath.kv_cache.max_context"]
    assert shown == {"lessons/kv_cache": True}


def test_every_source_a_lesson_shows_is_linked() -> None:
    """Each ``pages.source(...)`` target found in the lessons links to its entry."""
    shown = {n: docs for n, docs in llmmath_api.lessons_using().items() if any(docs.values())}
    assert len(shown) >= 20, f"found only {len(shown)} pages.source targets in the lessons"
    for name, docs in shown.items():
        for doc, is_source in docs.items():
            if is_source:
                page = (HTML / f"{doc}.html").read_text()
                assert f"#{name}" in page, f"{doc} shows {name}'s code without a link to it"


def test_the_reference_reads_as_prose() -> None:
    """#45: no parameter repeats the overflow bound ("<= 1e+30", said once per page), no
    constant prints a long array whole, no bound is in e-notation; and the addresses the
    released exercises import (llmmath.serving, llmmath.deployment,
    llmmath.setting) are listed."""
    for page in sorted(API.glob("*.html")):
        text = unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        bound = re.findall(r"accepts: [^.]*?1e\+30", text)  # (an example's error may say it)
        assert not bound, f"{page.name} repeats the overflow bound: {bound[:2]}"
        assert "array([" not in text, f"{page.name} prints an array whole"
        long_values = [v for v in re.findall(r"= (.{300,}?)\n", text)]
        assert not long_values, f"{page.name}: {long_values[0][:80]}..."
    chapters = (API / "chapters.html").read_text()
    for address in llmmath_api.EXERCISE_ADDRESSES:
        assert f'id="module-llmmath.{address}"' in chapters, address


def test_a_long_constant_is_summarized() -> None:
    import numpy as np

    assert llmmath_api.summarize_value(np.linspace(1.0, 2.0, 5000)) == (
        "array of 5,000 float64 from 1 to 2"
    )
    assert llmmath_api.summarize_value((1, 2)) is None
    assert llmmath_api.summarize_value(tuple(range(100))) == "tuple of 100 items"
