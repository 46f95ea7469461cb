"""llmmath.display.plots and llmmath.display.widgets: figures come back as Figures, PNG frames
are PNGs, the static explorer's controls are wired to its Stacks, and the live one redraws."""

from __future__ import annotations

import html
import io
import itertools
import json
import math
import re
from collections.abc import Iterator
from dataclasses import replace
from html.parser import HTMLParser
from types import SimpleNamespace
from typing import Any

import ipywidgets as w
import jupytext
import numpy as np
import pytest
import yaml
from lesson_support import ROOT, hidden_namespace
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

from llmmath.core import capacity, roofline
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import list_chips
from llmmath.core.measure import MachineRoofline
from llmmath.core.models import list_models
from llmmath.core.placement import DoesNotFitError
from llmmath.display import chapters, plots, widgets
from llmmath.display.plots import roofline as roofline_plots
from llmmath.display.plots.fast_text import FastCanvas
from llmmath.display.widgets import roofline as roofline_widgets

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_image(data: bytes | memoryview) -> Image.Image:
    data = bytes(data)  # ipywidgets.Image keeps its value as a memoryview
    assert data.startswith(PNG_SIGNATURE)
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


# ---- plots --------------------------------------------------------------------------------
@pytest.mark.parametrize(("chip", "dtype"), [("H100", "bf16"), ("TPU-v5e", "int8")])
def test_roofline_curve_returns_a_figure_of_the_roofline(chip: str, dtype: str) -> None:
    figure = roofline_plots.roofline_curve(chip, dtype)
    assert isinstance(figure, Figure)
    (ax,) = figure.axes
    assert chip in ax.get_title() and dtype in ax.get_title()
    x, y = ax.lines[0].get_data()
    np.testing.assert_allclose(y, roofline.attainable_flop_per_s(np.asarray(x), chip, dtype))
    spec = roofline_plots.get_chip(chip)
    assert max(y) == spec.peak(dtype)
    # The dotted ridge line sits at C / W.
    ridge_x = ax.lines[1].get_xdata()
    assert ridge_x[0] == pytest.approx(spec.critical_intensity(dtype))


def test_roofline_curve_draws_into_a_given_axes() -> None:
    figure = Figure()
    ax = figure.add_subplot(1, 2, 2)
    assert roofline_plots.roofline_curve("A100", ax=ax) is figure
    assert len(ax.lines) == 2


def test_roofline_curve_rejects_a_dtype_the_chip_lacks() -> None:
    with pytest.raises(ValueError, match="fp8"):
        roofline_plots.roofline_curve("A100", "fp8")


def test_machine_roofline_figure() -> None:
    result = MachineRoofline(
        peak_flop_per_s=1e11,
        bandwidth_bytes_per_s=1e10,
        sweep_batch=np.array([1.0, 64.0]),
        sweep_dim=256,
        sweep_flops=np.array([1.3e5, 8.4e6]),
        sweep_bytes=np.array([2.6e5, 3.9e5]),
        sweep_measured_s=np.array([3e-5, 1e-4]),
    )
    figure = roofline_plots.machine_roofline(result)
    assert isinstance(figure, Figure)
    (ax,) = figure.axes
    assert [t.get_text() for t in ax.texts] == ["B=1", "B=64"]
    np.testing.assert_allclose(ax.lines[1].get_ydata(), result.sweep_achieved_flop_per_s)


def test_machine_roofline_figure_shows_the_spread() -> None:
    """With the median of the repeats, each point's bar runs from the best run down to it."""
    result = MachineRoofline(
        peak_flop_per_s=1e11,
        bandwidth_bytes_per_s=1e10,
        sweep_batch=np.array([1.0, 64.0]),
        sweep_dim=256,
        sweep_flops=np.array([1.3e5, 8.4e6]),
        sweep_bytes=np.array([2.6e5, 3.9e5]),
        sweep_measured_s=np.array([3e-5, 1e-4]),
        sweep_median_s=np.array([6e-5, 1e-4]),
        blas_threads=1,
    )
    (ax,) = roofline_plots.machine_roofline(result).axes
    (bars,) = ax.containers
    segments = bars.lines[2][0].get_segments()
    lows = [min(y for _, y in segment) for segment in segments]
    highs = [max(y for _, y in segment) for segment in segments]
    np.testing.assert_allclose(highs, result.sweep_achieved_flop_per_s)
    np.testing.assert_allclose(lows, result.sweep_flops / result.sweep_median_s)
    assert "1 BLAS thread)" in ax.get_title()


def test_explorer_figure_draws_the_chip_and_batch_asked_for() -> None:
    figure = roofline_widgets.declaration().figure(chip="B200", batch=8)
    ax_roof, ax_time = figure.axes
    assert ax_roof.get_title().startswith("B200, ")
    # The step-time curves are the model's, for B200 (not the first frame's H100).
    sweep = roofline.decode_time_curves("Llama-3-70B", "B200")
    compute, memory, floor = ax_time.lines[:3]
    np.testing.assert_allclose(compute.get_ydata(), sweep.compute_s, rtol=1e-12)
    np.testing.assert_allclose(memory.get_ydata(), sweep.memory_s, rtol=1e-12)
    np.testing.assert_allclose(floor.get_ydata(), sweep.lower_s, rtol=1e-12)
    # The markers sit at batch 8's decode step on both panels, and the readout says so.
    point = roofline.decode_point("Llama-3-70B", 8, "B200")
    roof_x, roof_y = ax_roof.lines[-1].get_data()
    time_x, time_y = ax_time.lines[-1].get_data()
    assert roof_x[0] == pytest.approx(point.intensity, rel=1e-12)
    assert roof_y[0] == pytest.approx(point.attainable_flop_per_s, rel=1e-12)
    assert time_x[0] == 8 and time_y[0] == pytest.approx(point.time_s, rel=1e-12)
    assert not point.compute_bound
    (readout,) = ax_time.texts
    assert readout.get_text() == f"batch 8: {1e3 * point.time_s:.3g} ms, memory-bound"


def test_figure_png_limits_the_palette() -> None:
    figure = roofline_plots.roofline_curve("H100")
    image = png_image(plots.figure_png(figure, colours=4))
    assert image.mode == "P"
    colours = image.getcolors()
    assert colours is not None and len(colours) <= 4
    assert image.size == (600, 400)  # 6 x 4 inches at 100 dpi


def test_explorer_update_and_png() -> None:
    explorer = roofline_plots.RooflineExplorer()
    explorer.update("H100", "Llama-3-70B", 1)
    small = explorer.png()
    image = png_image(small)
    assert image.size == (800, 320)  # 10 x 4 inches at 80 dpi
    colours = image.getcolors()
    assert colours is not None and len(colours) <= 32
    assert "memory-bound" in explorer.readout.get_text()
    explorer.update("H100", "Llama-3-70B", 4096)
    assert "compute-bound" in explorer.readout.get_text()
    assert explorer.png() != small


def test_explorer_moves_its_markers_to_the_decode_step() -> None:
    explorer = roofline_plots.RooflineExplorer()
    explorer.update("H100", "Llama-3-8B", 64, "bf16", "int8")
    step = roofline.decode_weight_time("Llama-3-8B", 64, "H100", "bf16", "int8")
    x, y = explorer.time_point.get_data()
    assert x[0] == 64 and y[0] == pytest.approx(float(step.lower_s))
    critical = roofline.critical_batch("H100", "bf16", "int8")
    assert explorer.critical_line.get_xdata()[0] == pytest.approx(critical)
    assert "int8 weights" in explorer.ax_roof.get_title()


def test_explorer_rejects_bad_settings() -> None:
    explorer = roofline_plots.RooflineExplorer()
    with pytest.raises(ValueError, match="unknown chip"):
        explorer.update("H1000")
    with pytest.raises(ValueError, match="batch must be finite and > 0"):
        explorer.update(batch=0)


# ---- widgets: flavour ---------------------------------------------------------------------
def test_static_mode_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(widgets.STATIC_ENV, raising=False)
    assert not widgets.static_mode()
    monkeypatch.setenv(widgets.STATIC_ENV, "1")
    assert widgets.static_mode()
    monkeypatch.setenv(widgets.STATIC_ENV, "0")
    assert not widgets.static_mode()


@pytest.mark.parametrize(("env", "flavour"), [("1", "static"), ("", "live")])
def test_explorer_picks_the_flavour(
    monkeypatch: pytest.MonkeyPatch, env: str, flavour: str
) -> None:
    monkeypatch.setenv(widgets.STATIC_ENV, env)
    monkeypatch.setattr(widgets.common, "static_explorer", lambda spec: ("static", spec))
    monkeypatch.setattr(widgets.common, "live_explorer", lambda spec: ("live", spec))
    spec = roofline_widgets.declaration("Llama-3-8B")
    assert widgets.explorer(spec) == (flavour, spec)


# ---- widgets: static ----------------------------------------------------------------------
class LabelledFrames:
    """Stands in for RooflineExplorer: each frame's PNG bytes name the setting drawn, so the
    test can check every leaf holds the right frame without rendering 104 figures."""

    def __init__(self) -> None:
        self.setting: tuple[Any, ...] = ()

    def update(
        self, chip: str, model: str, batch: float, compute_dtype: str, weight_dtype: str
    ) -> None:
        self.setting = (chip, model, batch, compute_dtype, weight_dtype)

    def png(self) -> bytes:
        chip, model, batch, compute, weights = self.setting
        return f"{chip}|{model}|{batch:g}|{compute}|{weights}".encode()


@pytest.fixture
def static_box(monkeypatch: pytest.MonkeyPatch) -> widgets.StaticExplorer:
    monkeypatch.setattr(roofline_widgets, "RooflineExplorer", LabelledFrames)
    return widgets.common.static_explorer(roofline_widgets.declaration("Llama-3-8B"))


def leaves(box: widgets.StaticExplorer) -> list[widgets.common.Frame]:
    return list(box.frames.values())


def test_static_explorer_has_one_leaf_per_frame(static_box: widgets.StaticExplorer) -> None:
    images = leaves(static_box)
    assert len(images) == 4 * 2 * 13  # chips x weight formats x batches 1 ... 4096
    assert all(image.format == "png" for image in images)


def test_static_explorer_leaves_hold_the_frame_for_their_position(
    static_box: widgets.StaticExplorer,
) -> None:
    batches = [2**i for i in range(13)]
    for i, chip in enumerate(["A100", "H100", "B200", "TPU-v5e"]):
        for j, weights in enumerate(["bf16", "int8"]):
            for k, batch in enumerate(batches):
                leaf = static_box.frames[i, j, k]
                assert bytes(leaf.value) == f"{chip}|Llama-3-8B|{batch}|bf16|{weights}".encode()


def test_static_explorer_controls_match_the_frame_axes(static_box: widgets.StaticExplorer) -> None:
    chip, weights, batch = static_box.controls.values()
    assert [chip.look, weights.look, batch.look] == ["menu", "buttons", "slider"]
    assert [label for label, _ in chip.options] == ["A100", "H100", "B200", "TPU-v5e"]
    assert [value for _, value in weights.options] == ["bf16", "int8"]
    assert [value for _, value in batch.options] == [2**i for i in range(13)]
    assert (chip.value, weights.value, batch.value) == ("H100", "bf16", 1)
    # The page first shows the frame its controls show.
    assert static_box.start() == (1, 0, 0) and static_box.shown() is static_box.frames[1, 0, 0]


class ExplorerPage(HTMLParser):
    """What a static explorer's HTML holds: its controls (tag, attributes, options, the
    option or radio chosen), the frame shown and the frames listed for explorer.js."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.controls: list[dict[str, Any]] = []
        self.images: list[dict[str, str | None]] = []
        self.script = ""
        self._in_script = False
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "data-level" in found:
            self.controls.append({"tag": tag, **found, "choices": [], "chosen": None})
        elif tag in ("option", "input") and self.controls:
            choices = self.controls[-1]["choices"]
            if "selected" in found or "checked" in found:
                self.controls[-1]["chosen"] = len(choices)
            choices.append(found)
        elif tag == "img":
            self.images.append(found)
        self._in_script = tag == "script" and "explorer-frames" in (found.get("class") or "")

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.script += data

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False


def test_static_explorer_page_lists_each_frame_where_its_controls_find_it(
    static_box: widgets.StaticExplorer,
) -> None:
    """explorer.js shows frame ``sum(stop index x stride)`` of the page's list: each control
    in the page carries its level and stride, and that frame is the one for those stops."""
    page = ExplorerPage(static_box._repr_html_())
    listed = json.loads(page.script)
    assert len(listed) == len(static_box.frames)
    controls = sorted(page.controls, key=lambda c: int(c["data-level"]))
    assert [c["tag"] for c in controls] == ["select", "fieldset", "input"]
    strides = [int(c["data-stride"]) for c in controls]
    assert strides == static_box.strides() == [2 * 13, 13, 1]
    for position, frame in static_box.frames.items():
        at = sum(i * stride for i, stride in zip(position, strides, strict=True))
        assert listed[at]["src"] == frame.src()
    # Controls start where the frame shown is: the menu's option, the radio, the slider.
    chip, weights, batch = controls
    assert (chip["chosen"], weights["chosen"], int(batch["value"])) == static_box.start()
    assert len({radio["name"] for radio in weights["choices"]}) == 1  # one group, one Tab stop
    assert batch["type"] == "range" and batch["max"] == "12"
    (image,) = page.images
    assert image["src"] == static_box.shown().src()


def test_a_static_explorers_readout_takes_no_typing(static_box: widgets.StaticExplorer) -> None:
    """#45 item 5: a slider's readout is an <output> (the slider moves it; it takes no
    typing); the first frame's alt says the settings."""
    page = static_box._repr_html_()
    assert re.search(r'<output class="explorer-readout" for="[^"]+">1</output>', page)
    assert "contenteditable" not in page
    assert 'alt="Explorer figure, chip H100, weights bf16, batch 1"' in page


def test_no_frame_ends_the_script_that_lists_the_frames() -> None:
    panel = widgets.common.Frame("html", "<p>a</p><script>x</script>")
    box = widgets.StaticExplorer({}, {(): panel}, ())
    page = ExplorerPage(box._repr_html_())
    assert json.loads(page.script) == [{"html": "<p>a</p><script>x</script>"}]


# ---- widgets: live ------------------------------------------------------------------------
def live_parts(
    box: w.VBox,
) -> tuple[w.Dropdown, w.Dropdown, w.ToggleButtons, w.FloatLogSlider, w.Image]:
    row, batch, _status, image = box.children
    chip, model, weights = row.children
    assert [chip, model, weights, batch] == list(box.controls.values())
    return chip, model, weights, batch, image


def test_live_explorer_starts_with_a_frame() -> None:
    box = widgets.common.live_explorer(roofline_widgets.declaration("Llama-3-8B"))
    chip, model, weights, batch, image = live_parts(box)
    assert (chip.value, model.value, weights.value, batch.value) == (
        "H100",
        "Llama-3-8B",
        "bf16",
        1,
    )
    assert list(chip.options) == list_chips()
    assert list(model.options) == list_models()
    png_image(image.value)


def test_live_explorer_redraws_when_a_control_moves() -> None:
    box = widgets.common.live_explorer(roofline_widgets.declaration())
    chip, _model, weights, batch, image = live_parts(box)
    frames = [bytes(image.value)]
    batch.value = 1024
    frames.append(bytes(image.value))
    weights.value = "int8"
    frames.append(bytes(image.value))
    chip.value = "B200"
    frames.append(bytes(image.value))
    for frame in frames:
        png_image(frame)
    assert len(set(frames)) == len(frames)  # every change drew a new frame


def test_a_fast_redraw_matches_a_full_one() -> None:
    """Moving only the batch reuses the cached background; the frame must be the same."""
    moved = roofline_plots.RooflineExplorer()
    moved.update("H100", "Llama-3-70B", 1)
    moved.png()
    moved.update("H100", "Llama-3-70B", 512)
    fresh = roofline_plots.RooflineExplorer()
    fresh.update("H100", "Llama-3-70B", 512)
    assert png_image(moved.png()).tobytes() == png_image(fresh.png()).tobytes()


# ---- explorers declared once ----------------------------------------------------------------
#: Every explorer of every chapter in _toc.yml (``widgets.<ch>``'s ``*declaration``s).
DECLARATIONS = widgets.declarations()
#: The price sheets' view is a panel of text (``html()``), not a figure.
FIGURES = [n for n in DECLARATIONS if n != "overtraining_pricing.price_sheet"]


def test_the_chapter_list_is_the_table_of_contents() -> None:
    """One list: the lessons under "Chapters" in _toc.yml, in order; each has a lesson, a
    figures module and a widgets module whose explorers the tests below all check."""
    toc = yaml.safe_load(chapters.toc_path().read_text())
    (part,) = [p for p in toc["parts"] if p["caption"] == "Chapters"]
    expected = tuple(c["file"].removeprefix("lessons/") for c in part["chapters"])
    assert chapters.chapters() == expected
    assert expected[:3] == ("roofline", "batching", "kv_cache")
    for chapter in expected:
        assert (chapters.ROOT / "lessons" / f"{chapter}.md").is_file(), chapter
        assert getattr(plots, chapter).__name__ == f"llmmath.display.plots.{chapter}"
        assert widgets.chapter_declarations(chapter).keys() <= DECLARATIONS.keys() != set()
    assert {"kv_cache.tier", "overtraining_pricing.serving"} <= set(DECLARATIONS)


def test_a_missing_table_of_contents_says_where_it_looked(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chapters, "ROOT", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"_toc\.yml .*does not exist.*editable"):
        chapters.chapters()
    (tmp_path / "_toc.yml").write_text("parts:\n  - caption: Reference\n    chapters: []\n")
    with pytest.raises(ValueError, match="no lessons/<chapter>"):
        chapters.chapters()


def test_a_chapter_without_a_widgets_module_is_named() -> None:
    with pytest.raises(ModuleNotFoundError, match=r"chapter 'nowhere'.*widgets\.nowhere"):
        widgets.chapter_declarations("nowhere")


def test_each_main_explorer_times_the_control_its_issue_names() -> None:
    """The Lab benchmark's slider on each lesson's page (scripts/bench_lab.py)."""
    timed = {c: widgets.main_declaration(c)().timed_control() for c in chapters.chapters()}
    for control in timed.values():  # a slider on the page (Lab's .widget-slider)
        live = control.live
        assert isinstance(live, widgets.Range) or getattr(live, "look", "") == "slider", control
    assert {c: control.label for c, control in timed.items()} == {
        "roofline": "batch",
        "batching": "context",
        "kv_cache": "batch",
        "moe": "experts E",
        "parallelism": "microbatches",
        "overtraining_pricing": "loss",
    }


class Recorder:
    """Stands in for any explorer's figure: each frame is the settings it was drawn with."""

    def __init__(self) -> None:
        self.settings: dict[str, Any] = {}

    def update(self, **settings: Any) -> None:
        self.settings = settings

    def png(self) -> bytes:
        return repr(sorted(self.settings.items())).encode()


def recorded(spec: widgets.Explorer) -> widgets.Explorer:
    return replace(spec, view=Recorder, static_view=None)


def selected_leaf(box: widgets.StaticExplorer) -> widgets.common.Frame:
    return box.shown()


def test_a_control_declared_once_makes_both_flavours() -> None:
    batch = widgets.Control(
        "batch", "batch", 4, (1, 4, 16), live=widgets.Range(1, 64, integer=True)
    )
    static, live = widgets.common.static_widget(batch), widgets.common.live_widget(batch)
    assert static.look == "slider" and static.index == 1 and static.value == 4
    assert [label for label, _ in static.options] == ["1", "4", "16"]
    assert isinstance(live, w.IntSlider) and (live.min, live.max, live.value) == (1, 64, 4)
    log = replace(batch, live=widgets.Range(1, 4096, 0.5, log_base=2))
    slider = widgets.common.live_widget(log)
    assert isinstance(slider, w.FloatLogSlider)
    assert (slider.base, slider.min, slider.max, slider.value) == (2, 0, 12, 4)
    stops_only = replace(batch, static="buttons", live=None)
    assert widgets.common.static_widget(stops_only).look == "buttons"
    buttons = widgets.common.live_widget(stops_only)
    assert isinstance(buttons, w.ToggleButtons) and buttons.value == 4
    menu = widgets.Control(
        "chip", "chip", "B200", ("H100", "B200"), "menu", widgets.Options(["A100", "B200"])
    )
    assert widgets.common.static_widget(menu).look == "menu"
    assert widgets.common.live_widget(menu).options == ("A100", "B200")


@pytest.mark.parametrize("name", DECLARATIONS)
def test_static_flavour_has_a_frame_for_every_stop(name: str) -> None:
    spec = recorded(DECLARATIONS[name]())
    box = widgets.common.static_explorer(spec)
    frames = [bytes(leaf.value) for leaf in leaves(box)]
    assert len(frames) == len(set(frames)) == spec.frame_count() <= 150
    assert set(box.controls) == {c.name for c in spec.controls if c.in_static}
    # Each control is in the page, where explorer.js finds it.
    page = ExplorerPage(box._repr_html_())
    assert len(page.controls) == len(box.controls)
    first = selected_leaf(box)
    expected = Recorder()
    expected.update(**spec.settings(spec.start()))
    assert bytes(first.value) == expected.png()  # the first frame is the declared start


@pytest.mark.parametrize("name", DECLARATIONS)
def test_live_flavour_starts_where_the_static_one_does(name: str) -> None:
    spec = recorded(DECLARATIONS[name]())
    box = widgets.common.live_explorer(spec)
    assert set(box.controls) == {c.name for c in spec.controls if c.in_live}
    for control in spec.controls:
        if control.in_live and control.in_static:
            assert box.controls[control.name].value == control.start


@pytest.mark.parametrize("name", DECLARATIONS)
def test_no_live_slider_reads_out_an_exponent(name: str) -> None:
    """#36 item 7: a log slider's default readout ('.3g') shows 1e+13 or 3.6e+03; each says how
    it reads (three significant figures, or labelled stops such as 10^13 in superscripts)."""
    spec = recorded(DECLARATIONS[name]())
    box = widgets.common.live_explorer(spec)
    for control, widget in box.controls.items():
        if isinstance(widget, w.FloatLogSlider):
            assert "e" not in widget.readout_format and "g" not in widget.readout_format, control
        if isinstance(widget, w.SelectionSlider):
            labels = [str(o[0] if isinstance(o, tuple) else o) for o in widget.options]
            assert not any(re.search(r"\de[+-]", label) for label in labels), (control, labels)


def pixels(png: bytes | memoryview) -> bytes:
    return png_image(png).convert("RGB").tobytes()


@pytest.mark.parametrize("name", FIGURES)
def test_the_books_figure_is_the_explorer_at_its_start(name: str) -> None:
    """`declaration().figure()` (what a lesson shows captioned) draws the same pixels as the
    explorer's first frame: the book and the explorer cannot disagree."""
    spec = DECLARATIONS[name]()
    view = (spec.static_view or spec.view)()
    view.update(**spec.settings(spec.start()))
    assert pixels(plots.figure_png(spec.figure())) == pixels(view.png())


def test_the_roofline_figure_is_the_static_explorers_first_frame() -> None:
    spec = roofline_widgets.declaration()
    box = widgets.common.static_explorer(spec)
    shown = selected_leaf(box).value
    assert pixels(plots.figure_png(spec.figure())) == pixels(shown)


# ---- frames as files, redraws that only blit -----------------------------------------------
@pytest.fixture(scope="module")
def overtraining_inline() -> tuple[widgets.Explorer, widgets.StaticExplorer]:
    """The over-training explorer and its static flavour with every frame inline, drawn once
    (its 2 x 2 panels at every stop are most of a test's time) for the tests that only read
    its frames."""
    spec = widgets.overtraining_pricing.overtraining_declaration()
    with pytest.MonkeyPatch.context() as env:
        env.setenv(widgets.common.FRAMES_ENV, "")
        return spec, widgets.common.static_explorer(spec)


def test_static_frames_as_files_are_the_inline_frames(
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    overtraining_inline: tuple[widgets.Explorer, widgets.StaticExplorer],
) -> None:
    """With a frames folder, each leaf loads its frame by URL from a file holding the very
    PNG the inline flavour embeds; equal frames share one file, and the page names each
    frame's size."""
    spec, inline_box = overtraining_inline
    inline = [bytes(leaf.value) for leaf in leaves(inline_box)]
    assert all(leaf.format == "png" for leaf in leaves(inline_box))  # inline, not by URL
    monkeypatch.setenv(widgets.common.FRAMES_ENV, str(tmp_path))
    box = widgets.common.static_explorer(spec)
    urls = [str(leaf.value) for leaf in leaves(box)]
    assert all(leaf.format == "url" for leaf in leaves(box))
    assert all(url.startswith(f"{tmp_path.as_posix()}/") for url in urls)
    files = [(tmp_path / url.rsplit("/", 1)[1]).read_bytes() for url in urls]
    assert files == inline
    assert all(
        (leaf.width, leaf.height) == png_image(file).size
        for leaf, file in zip(leaves(box), files, strict=True)
    )
    assert len(list(tmp_path.iterdir())) == len(set(inline))
    # What each frame says goes with it (explorer.js puts it in the alt and announces it, #45).
    view = spec.view()
    view.update(**spec.settings(spec.start()))
    assert selected_leaf(box).said == view.summary() != ""
    assert html.escape(view.summary()) in box._repr_html_()


def test_frames_are_inline_outside_a_book_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(widgets.common.FRAMES_ENV, raising=False)
    assert widgets.common.frame_files() is None  # pytest is no kernel: nothing written


@pytest.mark.parametrize(
    ("low", "high", "steps", "expected"),
    [
        (2e-3, 0.7, 1, (1e-3, 1.0)),
        (0.02, 30.0, 2, (10**-2, 10**1.5)),
        (0.04, 40.0, 2, (10**-1.5, 100.0)),
        (1.0, 10.0, 1, (1.0, 10.0)),
    ],
)
def test_snapped_limits_hold_the_data(
    low: float, high: float, steps: int, expected: tuple[float, float]
) -> None:
    snapped = plots.common.snap_log_limits(low, high, steps)
    assert snapped == pytest.approx(expected)
    assert snapped[0] <= low and snapped[1] >= high


@pytest.mark.parametrize("name", FIGURES)
def test_a_blitted_frame_matches_a_fresh_figure(name: str) -> None:
    """Moving from the start to other settings (some panels redrawn alone over the last
    background), one control at a time, then back (a cached background): each frame has the
    pixels of a whole-figure draw at that setting, with no stale axes, curves or texts. (The
    reference figure starts at the start too: the layout is frozen at the first frame.)"""
    spec = DECLARATIONS[name]()
    path = [spec.start()]
    for control in spec.static_controls():
        path.append({**path[-1], control.name: control.stops[-1]})
    path.append(spec.start())
    for control in spec.static_controls()[::-1]:  # from a reused background, new ones again
        path.append({**spec.start(), control.name: control.stops[1]})
    moved, full = (spec.static_view or spec.view)(), (spec.static_view or spec.view)()
    for values in path:
        moved.update(**spec.settings(values))
        full.update(**spec.settings(values))
        full._backgrounds.clear()  # no background to reuse: canvas.draw() draws everything
        assert pixels(moved.png()) == pixels(full.png()), values


def test_a_move_that_keeps_the_axes_draws_no_axis() -> None:
    """The batch slider's moves are blits: matplotlib never redraws an axes for them; a new
    chip redraws the axes it changes, and a figure-wide draw is never needed again."""
    view = roofline_plots.RooflineExplorer()
    view.update("H100", "Llama-3-70B", 1)
    view.png()
    drawn: list[object] = []
    view.canvas.mpl_connect("draw_event", drawn.append)
    for ax in view.axes:
        draw = ax.draw
        ax.draw = lambda renderer, ax=ax, draw=draw: (drawn.append(ax), draw(renderer))[1]  # type: ignore[method-assign]
    for batch in (2, 64, 1024):
        view.update("H100", "Llama-3-70B", batch)
        view.png()
    assert not drawn
    view.update("B200", "Llama-3-70B", 1024)  # a new chip: new limits on both panels
    view.png()
    assert drawn == view.axes  # each panel once, and no figure-wide draw_event


@pytest.mark.parametrize("name", DECLARATIONS)
def test_controls_spanning_orders_of_magnitude_are_log_sliders(name: str) -> None:
    """A slider over 1-4096 moves on a log scale: each doubling takes the same drag, so a
    threshold ("raise the batch until ...") can be reached by dragging. Number boxes are typed."""
    box = widgets.common.live_explorer(DECLARATIONS[name]())
    for control_name, control in box.controls.items():
        if isinstance(control, w.IntSlider | w.FloatSlider):
            assert control.max / max(control.min, 1e-9) < 100, f"{name}.{control_name} is linear"


def test_a_log_slider_reaches_the_critical_batch() -> None:
    """The roofline's batch slider, moved by its own steps, crosses the critical batch: the
    readout turns from memory-bound to compute-bound."""
    box = widgets.common.live_explorer(roofline_widgets.declaration())
    slider = box.controls["batch"]
    assert isinstance(slider, w.FloatLogSlider) and slider.base == 2
    critical = roofline.critical_batch("H100", "bf16", "bf16")
    steps = [slider.min + k * slider.step for k in range(round(slider.max / slider.step) + 1)]
    below = max(e for e in steps if round(2**e) < critical)
    above = min(e for e in steps if round(2**e) >= critical)
    assert above - below == pytest.approx(slider.step)  # one step apart
    for exponent, bound in ((below, "memory-bound"), (above, "compute-bound")):
        slider.value = 2**exponent
        assert box.view.readout.get_text().endswith(bound)


def test_tier_explorer_titles_a_setting_that_does_not_fit_by_its_own_name() -> None:
    """After a setup that fits, one that does not must not keep the old title: every prefix and
    reuse count shows as its own frame, never as the last setup's picture."""
    from llmmath.display.plots.kv_cache import TierExplorer

    view = TierExplorer()
    view.update("Llama-3-70B", 8, "bf16", 8192, 60.0, 10)
    titles = set()
    for prefix in (1024, 65536):
        view.update("DeepSeek-V3", 16, "bf16", prefix, 60.0, 10)
        title = view.ax_cost.get_title()
        assert "DeepSeek-V3" in title and "does not fit" in title and "Llama" not in title
        titles.add(title)
    assert len(titles) == 2, titles


# ---- refusals: a view draws what does not fit, the live widget refuses bad input -----------
#: CONTRIBUTING "Refusals". For each explorer whose model finds that a setting does not fit,
#: such settings (live control values, set in order) and a phrase the view draws for each (or
#: the status line says, where the declaration clamps the setting to what fits).
SERVING_ROOM = int(capacity.max_batch(Deployment("Llama-3-70B", "H100", 8), 8192))
DOES_NOT_FIT = [
    ("batching", {"model": "Llama-3.1-405B", "n_chips": 2}, "405B does not fit on 2 × H100"),
    ("batching", {"batch": 1024, "context": 8192}, "batch 1024 does not fit"),
    ("kv_cache", {"model": "Llama-3.1-405B", "n_chips": 2}, "bf16 does not fit on 2 × H100"),
    ("kv_cache", {"batch": 1024, "context": 8192}, "B = 1024 does not fit"),
    ("kv_cache.tier", {"model": "DeepSeek-V3", "n_chips": 2}, "bf16 does not fit on 2 × H100"),
    ("parallelism", {"dp": 1, "tp": 1}, "over by"),  # memory per GPU past its HBM
    ("overtraining_pricing.serving", {"batch": 512, "context": 8192}, f"only {SERVING_ROOM} fit"),
]
#: Explorers whose model has no capacity to run out of, and why.
NO_CAPACITY = {
    "roofline": "one chip's decode-step floors against the batch",
    "moe": "the step time of an expert layer, whatever holds its weights",
    "overtraining_pricing.overtraining": "training and inference compute against model size",
    "overtraining_pricing.price_sheet": "published prices",
}
#: For every explorer, an invalid ``update()`` keyword and the refusal its message states.
INVALID = {
    "roofline": ("batch", -1, r"batch must be finite and > 0"),
    "batching": ("batch", -1, r"decode_step\(\): batch must be finite and > 0"),
    "kv_cache": ("batch", -1, r"step_time_curve\(\): batch must be finite and > 0"),
    "kv_cache.tier": ("reuses", -1, r"prefix_cache\(\): reuses must be finite and >= 0"),
    "moe": ("batch", -1, r"batch must be finite and > 0"),
    "parallelism": ("microbatches", 0, r"microbatches must be >= 1"),
    "overtraining_pricing.overtraining": ("target_loss", -1, r"target_loss must be finite"),
    "overtraining_pricing.serving": ("utilisation", 2, r"utilisation must be in \(0, 1\]"),
    "overtraining_pricing.price_sheet": ("model", "no such sheet", r"unknown sheet 'no such"),
}
REFUSED = re.compile(r"<span style='color:#b2182b'>(.*)</span>", re.DOTALL)


def status_and_frame(box: w.VBox, spec: widgets.Explorer) -> tuple[w.HTML, w.Widget]:
    """The live explorer's status line and the frame under it (its note, if any, comes last)."""
    end = len(box.children) - (1 if spec.note else 0)
    status, frame = box.children[end - 2 : end]
    assert isinstance(status, w.HTML)
    return status, frame


def test_every_explorer_is_held_to_both_kinds_of_refusal() -> None:
    fitting = {name for name, _, _ in DOES_NOT_FIT}
    assert fitting.isdisjoint(NO_CAPACITY)
    assert fitting | set(NO_CAPACITY) == set(DECLARATIONS) == set(INVALID)


@pytest.mark.parametrize(("name", "values", "phrase"), DOES_NOT_FIT)
def test_a_setting_that_does_not_fit_is_drawn_not_refused(
    name: str, values: dict[str, Any], phrase: str
) -> None:
    spec = DECLARATIONS[name]()
    box = widgets.common.live_explorer(spec)
    status, _frame = status_and_frame(box, spec)
    for control, value in values.items():
        box.controls[control].value = value
        assert box.controls[control].value == value  # the control reaches the setting
        assert not REFUSED.search(status.value), status.value
    drawn = [text.get_text() for text in box.view.as_figure().findobj(Text)]
    assert any(phrase in text for text in [*drawn, status.value]), (phrase, drawn)


@pytest.mark.parametrize("name", DECLARATIONS)
def test_an_invalid_value_is_refused_in_the_live_status_line(name: str) -> None:
    keyword, value, message = INVALID[name]
    spec = DECLARATIONS[name]()
    injected: dict[str, Any] = {}
    live = replace(spec, settings=lambda values: {**spec.settings(values), **injected})
    box = widgets.common.live_explorer(live)
    status, frame = status_and_frame(box, spec)
    shown = frame.value
    assert shown and not REFUSED.search(status.value)
    injected[keyword] = value
    # The live explorer shows the package's message, keeping the last frame ...
    box.redraw()
    said = REFUSED.search(status.value)
    assert said and re.search(message, html.unescape(said.group(1))), status.value
    assert frame.value == shown
    # ... which the view raised from update(), as bad input, not as a setting that does not
    # fit; again the same (a refusal halfway through a scene leaves no scene taken as drawn).
    values = {control: widget.value for control, widget in box.controls.items()}
    with pytest.raises(ValueError, match=message) as refused:
        box.view.update(**live.settings(values))
    assert not isinstance(refused.value, DoesNotFitError)


def test_every_static_frame_is_a_full_draw(
    overtraining_inline: tuple[widgets.Explorer, widgets.StaticExplorer],
) -> None:
    """Each precomputed frame of the over-training explorer (both panels' limits move with
    the loss) has the pixels of a whole-figure draw at its setting: no panel swapped in
    clips a neighbour's tick label (the last x label once lost its exponent's last digit)."""
    spec, box = overtraining_inline
    order = spec.static_controls()
    settings = [
        {order[0].name: outer, order[1].name: inner}
        for outer in order[0].stops
        for inner in order[1].stops
    ]
    full = spec.view()
    for values, leaf in zip(settings, leaves(box), strict=True):
        full.update(**spec.settings(values))
        full._backgrounds.clear()  # a whole-figure draw (the layout frozen at the first)
        assert pixels(leaf.value) == pixels(full.png()), values


def test_fast_text_draws_the_pixels_of_matplotlib() -> None:
    """The canvas that remembers layouts and glyphs draws what matplotlib's own Agg canvas
    draws: plain and mathtext labels, rotated text, a fraction (drawn by matplotlib itself),
    at fractional positions, first from an empty cache and again from a full one."""

    def draw(canvas_type: type[FigureCanvasAgg]) -> bytes:
        figure = Figure(figsize=(4.3, 3.1), dpi=83)
        canvas = canvas_type(figure)
        ax = figure.add_subplot()
        ax.loglog([1, 1e5], [3e-3, 7e2], label="μ-law 1,024 × ÷")
        ax.set(xlabel="batch B (tokens per step)", ylabel="time (s)", title="10 × H100: ≤ 4 ms")
        ax.text(0.37, 0.41, r"$\frac{2N}{B}$ and $10^{12}$", transform=ax.transAxes, rotation=17)
        ax.annotate("5 min", (30.3, 1.7), xytext=(2.3, -10.1), textcoords="offset points")
        ax.legend(fontsize=7.3)
        canvas.draw()
        return bytes(canvas.buffer_rgba())

    plain = draw(FigureCanvasAgg)
    assert draw(FastCanvas) == plain
    assert draw(FastCanvas) == plain  # every layout and glyph remembered


def test_moe_explorer_draws_every_expert_count_its_slider_offers() -> None:
    """#36 item 5: the live E slider stops only where the figure reads: an all-to-all line of
    at least two widths and no tick label twice on either axis, on every domain the book
    shows (a log slider once stopped at 181, a prime: one width, one point)."""
    view = widgets.moe.MoEExplorer()
    for experts in widgets.moe.expert_counts():
        for domain in widgets.moe.STATIC_DOMAINS:
            view.update(domain=domain, n_experts=experts, experts_per_token=min(8, experts))
            widths, _ = view.widths.a2a_line.get_data()
            assert len(widths) >= 2, (experts, domain)
            view.figure.canvas.draw()
            for ax in view.figure.axes:
                low, high = sorted(ax.get_ylim())
                shown = [
                    tick.get_text()
                    for tick in ax.get_yticklabels()
                    if tick.get_text() and low <= tick.get_position()[1] <= high
                ]
                assert len(shown) == len(set(shown)), (experts, domain, shown)


# ---- lines told apart without colour (#35) ---------------------------------------------------
def _machine() -> MachineRoofline:
    """A measured roofline for the roofline lesson's own-machine figure (the lesson measures
    the reader's machine in a cell of its own)."""
    batches = np.array([1.0, 8.0, 64.0, 512.0])
    flops, moved = 2 * batches * 512 * 512, 4 * (2 * batches * 512 + 512 * 512)
    best = np.maximum(flops / 2e11, moved / 2e10) * 1.3
    return MachineRoofline(2e11, 2e10, batches, 512, flops, moved, best, 1.5 * best, 4)


def lesson_figures(page: str) -> list[Figure]:
    """The captioned figures of a lesson (each ``pages.figure(...)`` cell, run over the
    lesson's own hidden setup)."""
    cells = [c for c in jupytext.read(ROOT / "lessons" / page).cells if c.cell_type == "code"]
    drawn: list[Figure] = []
    recording = SimpleNamespace(figure=lambda drawing, caption: drawn.append(drawing))
    namespace = {"machine": _machine(), **hidden_namespace(page)}
    namespace.update(plots=plots, widgets=widgets, pages=recording)
    shown = [c.source for c in cells if "pages.figure(" in c.source]
    for source in shown:
        exec(source, namespace)
    assert len(drawn) == len(shown), page
    return drawn


def _on_line(label: Any, line: Any) -> bool:
    """``label`` is a text in ``line``'s colour anchored at one of its points."""
    xy = getattr(label, "xy", label.get_position())
    points = np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float)
    same_colour = to_hex(label.get_color()) == to_hex(line.get_color())
    return same_colour and bool(np.any(np.all(np.isclose(points, xy, rtol=1e-9), axis=1)))


def colour_only_lines(figure: Figure) -> list[str]:
    """Curves (lines of three points or more: a two-point line is a reference line, named by a
    text, the legend or the caption) that share an axes and a line style with another and
    differ from it by colour alone: neither a marker of their own nor a direct label."""
    found = []
    for k, ax in enumerate(figure.axes):
        curves = [
            line
            for line in ax.get_lines()
            if line.get_visible() and line.get_linestyle() != "None" and len(line.get_xdata()) > 2
        ]
        for style in {line.get_linestyle() for line in curves}:
            same = [line for line in curves if line.get_linestyle() == style]
            unlabelled = [ln for ln in same if not any(_on_line(t, ln) for t in ax.texts)]
            markers = [str(line.get_marker()) for line in unlabelled]
            if len(same) > 1 and len(markers) != len(set(markers)):
                found += [f"axes {k}: {line.get_label()!r} ({style})" for line in unlabelled]
    return found


LESSONS = sorted(p.name for p in (ROOT / "lessons").glob("*.md"))


@pytest.mark.parametrize("page", LESSONS)
def test_a_lessons_figures_tell_their_lines_apart_without_colour(page: str) -> None:
    figures = lesson_figures(page)
    assert figures or page not in {f"{c}.md" for c in chapters.chapters()}
    for i, figure in enumerate(figures):
        assert not colour_only_lines(figure), (page, i, colour_only_lines(figure))


@pytest.mark.parametrize("name", FIGURES)
def test_an_explorers_figure_tells_its_lines_apart_without_colour(name: str) -> None:
    spec = DECLARATIONS[name]()
    for control in spec.static_controls():  # every stop of each control, from the start
        for stop in control.stops:
            figure = spec.figure(**{control.name: stop})
            assert not colour_only_lines(figure), (name, control.name, stop)


def test_colour_only_lines_are_found() -> None:
    """The check above can fail: solid curves in three colours are found; a direct label or a
    marker each tells them apart (the last one left plain is then the only plain one)."""
    figure, ax = plots.common.figure_and_axes(None)
    x = np.arange(5.0)
    lines = [ax.plot(x, k * x, color=f"C{k}")[0] for k in (1, 2, 3)]
    ax.axhline(1.0, color="C4")  # a reference line: not a curve
    ax.annotate("3x", (4.0, 12.0), color="C1")  # in a curve's colour, but not on it
    assert len(colour_only_lines(figure)) == 3
    plots.common.end_label(ax, lines[0], "x")
    assert len(colour_only_lines(figure)) == 2
    plots.common.mark_curves(lines[1])
    assert not colour_only_lines(figure)


@pytest.mark.parametrize("data", [([], []), ([1.0, 2.0], [np.inf, np.nan])], ids=["empty", "inf"])
def test_a_marked_curve_with_no_finite_point_draws_nothing_and_does_not_fail(
    data: tuple[list[float], list[float]],
) -> None:
    """matplotlib places spaced markers from a line's first finite point, and raised IndexError
    on a line with none: `make bench` moved an explorer's slider to a setting where one of its
    marked curves had no point, and the explorer stopped redrawing."""
    figure = Figure()
    ax = figure.add_subplot()
    marked, plain = ax.plot([1, 2], [1, 2]), ax.plot([1, 2], [2, 3])
    plots.common.mark_curves(marked[0], plain[0])
    marked[0].set_data(*data)
    FastCanvas(figure).draw()  # raised IndexError before
    assert marked[0].get_marker() == "s" and plain[0].get_marker() == "^"


# ---- every static frame shows the state its controls name (#45 item 1) ----------------------
def frame_texts(view: Any) -> list[str]:
    """What a frame says: every visible text of its figure (titles, readouts, labels, the
    warning), or a panel's HTML."""
    if not hasattr(view, "as_figure"):
        return [html.unescape(view.html())]
    figure = view.as_figure()
    return [t.get_text() for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]


def says(texts: list[str], value: Any) -> bool:
    """Whether a frame names ``value`` (as typed, or with thousands separators)."""
    spelled = {str(value), f"{value:,}" if isinstance(value, int | float) else str(value)}
    return any(s in text for s in spelled for text in texts)


def live_reading(controls: widgets.common.LiveControls, asked: dict[str, Any]) -> dict[str, Any]:
    """Set the live controls named in ``asked`` (in declaration order, so a model is chosen
    before the slider it bounds) and read back what they hold: a slider clamps to its range,
    a menu refuses a value it does not offer (read back as None)."""
    held = {}
    for name in controls.widgets:
        if name in asked:
            try:
                controls[name].value = asked[name]
            except Exception:  # ipywidgets' TraitError: not an option of this control
                held[name] = None
                continue
            held[name] = controls.values()[name]
    return held


def static_states(spec: widgets.Explorer) -> Iterator[dict[str, Any]]:
    order = spec.static_controls()
    for stops in itertools.product(*(c.stops for c in order)):
        yield dict(zip((c.name for c in order), stops, strict=True))


def same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-6)
    return bool(a == b)


@pytest.mark.parametrize("name", DECLARATIONS)
def test_every_static_frame_shows_the_state_its_controls_name(name: str) -> None:
    """#45: each precomputed frame is the state its controls read. Its settings are given to
    the live flavour's controls: where one clamps or refuses a value (a context past the
    model's longest, a batch past what fits), the frame must say so, naming the value asked;
    the declaration's settings must not change a control's value silently either; and the
    live view drawn at the frame's settings says what the frame says (title and numbers)."""
    spec = DECLARATIONS[name]()
    static = (spec.static_view or spec.view)()
    live_view = spec.view() if spec.static_view else None
    controls = widgets.common.LiveControls(spec)
    if spec.wire is not None:
        spec.wire(controls)
    unsaid = []
    for state in static_states(spec):
        settings = spec.settings(state)
        static.update(**settings)
        texts = frame_texts(static)
        held = live_reading(controls, settings)
        moved = {k: settings[k] for k, v in held.items() if not same(v, settings[k])}
        moved |= {k: v for k, v in state.items() if k in settings and not same(settings[k], v)}
        unsaid += [(state, k, v) for k, v in moved.items() if not says(texts, v)]
        if live_view is not None:
            live_view.update(**settings)
            assert frame_texts(live_view) == texts, state
    assert not unsaid, unsaid[:5]


@pytest.mark.parametrize("name", DECLARATIONS)
def test_every_static_stop_has_a_frame_that_draws(name: str) -> None:
    """#45: no stop of a static control is a refusal in every frame (DeepSeek-V3 on 16 H100s
    in bf16 only drew "does not fit"): each has a frame without the warning message."""
    spec = DECLARATIONS[name]()
    view = (spec.static_view or spec.view)()
    if not hasattr(view, "message"):
        pytest.skip(f"{name}'s view has no warning message: it draws every setting")
    drawn: set[tuple[str, Any]] = set()
    for state in static_states(spec):
        view.update(**spec.settings(state))
        if not view.message.get_text():
            drawn |= set(state.items())
    stops = {(c.name, s) for c in spec.static_controls() for s in c.stops}
    assert stops <= drawn, sorted(stops - drawn, key=str)


def test_the_price_sheet_says_its_assumptions_in_words() -> None:
    """#45 item 7: the price-sheet explorer printed its assumed ranges as Python tuples
    ("(2.0, 6.0) USD/chip-hour"); no raw tuple and no e-notation in any sheet's panel."""
    from llmmath import pricing

    for name in pricing.list_price_sheets():
        text = widgets.overtraining_pricing.price_sheet_html(name)
        assert not re.search(r"\(\d[\d.]*, \d", text), (name, text)
        assert not re.search(r"\b\d+(?:\.\d+)?e[+-]?\d+\b", text), (name, text)
        assert "2 to 6 USD/chip-hour" in text


def test_critical_batch_figure_draws_the_package_numbers() -> None:
    from llmmath import parallelism
    from llmmath.display.plots import parallelism as parallelism_plots

    figure = parallelism_plots.critical_batch_figure(
        [("16M of 8K", 16 * 2**20, 8192)], [("Llama 3", 16384, 128)]
    )
    trade_ax, degree_ax = figure.axes
    steps, examples = trade_ax.get_lines()[:2]
    ratio = np.asarray(steps.get_xdata())
    np.testing.assert_allclose(
        (np.asarray(steps.get_ydata()) - 1) * (np.asarray(examples.get_ydata()) - 1), 1.0
    )
    assert ratio.min() < 1 < ratio.max()
    line = degree_ax.get_lines()[0]
    sizes = [int(n) for n in line.get_xdata()]
    assert list(line.get_ydata()) == [
        parallelism.min_model_parallel_degree(n, 16 * 2**20, 8192) for n in sizes
    ]
