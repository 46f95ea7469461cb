"""llmmath.display.pages: the package code a lesson shows, and where its exercise link points."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from llmmath import batching
from llmmath.beyond import serving_modes
from llmmath.core import roofline
from llmmath.display import pages


def test_source_shows_the_function_that_runs_as_a_python_block() -> None:
    shown = pages.source(roofline.critical_batch).data
    assert shown.startswith("```python\ndef critical_batch(") and shown.endswith("\n```")
    assert inspect.getsource(roofline.critical_batch).strip().removeprefix("@contract()\n") in shown


def test_source_leaves_out_the_contract_however_long() -> None:
    shown = pages.source(serving_modes.slow_mode).data
    assert "@contract" not in shown and shown.startswith("```python\ndef slow_mode("), shown
    assert inspect.getsource(serving_modes.slow_mode).split("def slow_mode(", 1)[1] in shown + "\n"


def test_source_leaves_out_only_the_contract_brackets_in_its_strings_or_not() -> None:
    code = '@cache\n@contract(\n    unit=OneOf((")", "(")),\n    where=rule,\n)\n'
    code += "def f(unit):\n    return 1"
    assert pages._without_contract(code) == "@cache\ndef f(unit):\n    return 1"


def test_source_links_to_the_api_reference_in_the_book_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(pages.API_LINKS_ENV, raising=False)
    assert "{py:obj}" not in pages.source(roofline.critical_batch).data  # JupyterLab: no pages
    monkeypatch.setenv(pages.API_LINKS_ENV, "1")  # the book build (book/_ext/llmmath_api.py)
    shown = pages.source(batching.DecodeStep.time_s).data
    assert shown.startswith("```python\n@property\ndef time_s(self)"), shown
    name = "llmmath.core.serving.DecodeStep.time_s"  # where it is defined, not the re-export
    link = f"{{py:obj}}`DecodeStep.time_s in the API reference <{name}>`"
    assert shown.endswith(f"```\n\n{link}"), shown


def test_source_of_a_property_shows_its_getter() -> None:
    shown = pages.source(batching.DecodeStep.time_s).data
    assert shown.startswith("```python\n@property\ndef time_s(self)"), shown  # dedented


def test_source_of_a_property_without_getter_says_so() -> None:
    with pytest.raises(ValueError, match="without a getter"):
        pages.source(property())


def test_exercise_link_is_the_release_in_the_book(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pages.LEARNER_DIR_ENV, raising=False)
    monkeypatch.delenv(pages.HUB_ENV, raising=False)
    link = pages.exercise_link("roofline", "the roofline exercise").data
    assert link == (
        "[the roofline exercise](../exercises/roofline/roofline.ipynb) in JupyterLab (`make lab`)"
    )


def test_exercise_link_is_the_learners_copy_in_make_lab(monkeypatch: pytest.MonkeyPatch) -> None:
    """#36 item 7: a learner already in JupyterLab is not told to run make lab."""
    monkeypatch.setenv(pages.LEARNER_DIR_ENV, "my-work")
    assert pages.exercise_path("moe") == "../my-work/moe/moe.ipynb"
    link = pages.exercise_link("moe", "the MoE exercise").data
    assert link == "[the MoE exercise](../my-work/moe/moe.ipynb) (your own copy, in `my-work/moe/`)"
    assert "make lab" not in link


def test_exercise_link_on_the_hub_opens_the_students_copy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """#35: a hub kernel (LLMMATH_HUB=1, run in ~/<course>/lessons/) links to the server's
    llmmath/my-work/<course>/<assignment> under its prefix, not the release or `make lab`."""
    lessons = tmp_path / "llm-math" / "lessons"
    lessons.mkdir(parents=True)
    monkeypatch.chdir(lessons)
    monkeypatch.setenv(pages.LEARNER_DIR_ENV, "my-work")  # the hub's wins over make lab's
    monkeypatch.setenv(pages.HUB_ENV, "1")
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/s01/")
    link = pages.exercise_link("moe", "the MoE exercise").data
    assert link == (
        "[the MoE exercise](/user/s01/llmmath/my-work/llm-math/moe)"
        " (your own copy, in `my-work/moe/`)"
    )
    monkeypatch.setenv(pages.HUB_ENV, "0")  # only "1" means the hub
    assert "/llmmath/my-work/" not in pages.exercise_link("moe", "the MoE exercise").data


def test_figure_shows_the_drawing_then_returns_its_caption(monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    shown: list[object] = []
    monkeypatch.setattr(pages, "display", shown.append)
    drawing = Figure()
    caption = pages.figure(drawing, "  The weight read, shared by the batch.  ")
    assert shown == [drawing]  # the figure first, the caption beneath it
    assert caption.data == "**Figure.** The weight read, shared by the batch."


def test_figure_without_a_caption_is_refused() -> None:
    from matplotlib.figure import Figure

    with pytest.raises(ValueError, match="caption"):
        pages.figure(Figure(), " ")


def test_no_lesson_keeps_a_caption_where_jupyterlab_cannot_show_it() -> None:
    from pathlib import Path

    lessons = Path(__file__).resolve().parents[2] / "lessons"
    for lesson in lessons.glob("*.md"):
        assert "caption:" not in lesson.read_text(), (
            f"{lesson.name}: a figure caption in MyST-NB metadata is invisible in JupyterLab; "
            "show the figure with pages.figure(drawing, caption)"
        )
