"""Controls declared once, built in two flavours.

A chapter declares its explorer once (:class:`Explorer`): the figure it drives and each
:class:`Control` (the ``update()`` keyword it sets, its label, where it starts, the static
book's stops and what the live flavour accepts). :func:`explorer` then builds

* ``live``: with a kernel (JupyterLab), every change re-runs the model and redraws, for any
  value the control accepts;
* ``static``: for the built book, where no kernel runs. Every frame is rendered at build time
  (in the book, a file under ``_static/frames/`` loaded by URL, see :func:`frame_files`;
  elsewhere inline PNG bytes), and the explorer is plain HTML (:class:`StaticExplorer`): a
  native ``<select>``, a range input or a radio group per control and the frame shown as an
  ``<img>``, with every frame listed in the page; ``book/static/explorer.js`` (a few kB,
  deferred, loaded only by pages that have an explorer) switches frames as the controls move,
  with no Python and no widget renderer behind it (#45: the ipywidgets renderer was 4.4 MB).

:func:`explorer` picks the flavour with :func:`static_mode`: static while the book is being
built (the Makefile sets ``LLMMATH_STATIC_WIDGETS=1``), live otherwise.
"""

from __future__ import annotations

import base64
import hashlib
import html
import itertools
import json
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import ipywidgets as w
from matplotlib.figure import Figure

from llmmath.display.plots.common import SENT, FastFigure

STATIC_ENV = "LLMMATH_STATIC_WIDGETS"
#: A folder for the static frames as files ("" inlines them); unset, a book build finds its own.
FRAMES_ENV = "LLMMATH_FRAMES_DIR"
#: The book's frames, relative to its root. ``_config.yml`` lists the folder above it in
#: ``html_static_path``, so the built book serves them as ``_static/frames/``.
BOOK_FRAMES = Path("book/static_frames/frames")
Settings = dict[str, Any]
Look = Literal["menu", "buttons", "slider"]


def static_mode() -> bool:
    """True while the book is built: controls must work without a kernel."""
    return os.environ.get(STATIC_ENV, "") == "1"


@dataclass(frozen=True)
class Range:
    """A live slider (or, with ``box``, a number box) from ``low`` to ``high``."""

    low: float
    high: float
    step: float | None = None
    #: A log slider in this base (its ``step`` is in powers of the base).
    log_base: float | None = None
    #: Round the value to a whole number before passing it on.
    integer: bool = False
    box: bool = False
    readout_format: str | None = None


@dataclass(frozen=True)
class Options:
    """A live menu, row of buttons or selection slider over ``values`` (or (label, value))."""

    values: Sequence[Any]
    look: Look = "menu"


@dataclass(frozen=True)
class Control:
    """One control, declared once for both flavours.

    ``stops`` are the static book's values (shown as ``static``, labelled ``labels``); empty
    for a control only the live flavour has. ``live`` is what the live flavour accepts: a
    :class:`Range`, :class:`Options`, ``None`` for the stops themselves, or ``False`` for a
    control only the static book has (a preset the live flavour offers as separate controls).
    """

    name: str
    label: str
    start: Any
    stops: Sequence[Any] = ()
    static: Look = "slider"
    live: Range | Options | Literal[False] | None = None
    labels: Sequence[str] | None = None
    #: How a stop is labelled when ``labels`` is not given, e.g. ``"{:.0%}"``.
    fmt: str = "{}"
    style: Mapping[str, Any] = field(default_factory=dict)
    width: str | None = None

    @property
    def in_static(self) -> bool:
        return bool(self.stops)

    @property
    def in_live(self) -> bool:
        return self.live is not False

    def stop_labels(self) -> list[str]:
        return (
            list(self.labels)
            if self.labels is not None
            else [self.fmt.format(s) for s in self.stops]
        )


@dataclass(frozen=True)
class Explorer:
    """An explorer, declared once: the view it drives and its controls.

    ``view`` makes what the controls drive: an object with ``update(**settings)`` and either
    ``png()`` (a ``FastFigure``) or ``html()`` (a panel of text).

    ``settings`` turns the values of one flavour's controls (a dict keyed by control name,
    holding only that flavour's controls) into the view's ``update()`` keywords. ``rows`` lays
    the controls out (names; a row whose controls are all absent is dropped), and
    ``static_rows``, if given, lays out the static flavour's. ``wire`` couples
    live controls (a model change moving a slider's maximum ...); ``status`` writes the line
    under the live controls after a redraw.
    """

    view: Callable[[], Any]
    controls: tuple[Control, ...]
    rows: tuple[tuple[str, ...], ...]
    settings: Callable[[Settings], Settings] = dict
    caption: str = ""
    note: str = ""
    #: Nesting order of the static frames, outermost first (default: declaration order).
    #: Put the control that only moves a marker last: its frames reuse one scene.
    nesting: tuple[str, ...] = ()
    static_view: Callable[[], Any] | None = None
    static_rows: tuple[tuple[str, ...], ...] = ()
    wire: Callable[[LiveControls], None] | None = None
    status: Callable[[Settings], str] | None = None
    #: The control the Lab benchmark moves on the lesson's page (``scripts/bench_lab.py``),
    #: by name: the one the chapter's issue names; default the first live slider.
    timed: str = ""

    def control(self, name: str) -> Control:
        return next(c for c in self.controls if c.name == name)

    def timed_control(self) -> Control:
        """The control named by ``timed``, else the first with a live slider (a Range)."""
        if self.timed:
            return self.control(self.timed)
        return next(c for c in self.controls if isinstance(c.live, Range))

    def static_controls(self) -> list[Control]:
        order = self.nesting or tuple(c.name for c in self.controls if c.in_static)
        return [self.control(name) for name in order]

    def frame_count(self) -> int:
        """Frames the static flavour renders (CONTRIBUTING: keep it under ~150)."""
        return math.prod(len(c.stops) for c in self.static_controls())

    def start(self) -> Settings:
        """The static book's first frame, as control values."""
        return {c.name: c.start for c in self.static_controls()}

    def figure(self, **values: Any) -> Figure:
        """The static view at the start, or with ``values`` of static controls: the figure a
        lesson shows captioned is the explorer at one state."""
        view = (self.static_view or self.view)()
        view.update(**self.settings({**self.start(), **values}))
        figure = view.as_figure()
        assert isinstance(figure, Figure)
        return figure


# ---- building -----------------------------------------------------------------------------
class LiveBox(w.VBox):  # type: ignore[misc]  # ipywidgets has no type hints
    """The live flavour as the page shows it (a ``VBox``), with its controls by name, the view
    they drive and ``redraw`` (which the benchmark times)."""

    def __init__(
        self,
        children: list[w.Widget],
        controls: dict[str, w.Widget],
        view: Any,
        redraw: Callable[[], None],
    ):
        super().__init__(children)
        self.controls = controls
        self.view = view
        self.redraw = redraw


def explorer(spec: Explorer) -> ExplorerView:
    """The static flavour while the book is built, the live one otherwise."""
    return static_explorer(spec) if static_mode() else live_explorer(spec)


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return hasattr(get_ipython(), "kernel")


def frame_files() -> FrameFiles | None:
    """Where the static flavour puts its frames: ``$LLMMATH_FRAMES_DIR`` if set (empty: inline
    in the page), else, for a notebook of the book run by a kernel (the book build), the
    book's frames folder, loaded relative to the page; else None (inline)."""
    chosen = os.environ.get(FRAMES_ENV)
    if chosen is not None:
        return FrameFiles(Path(chosen), Path(chosen).as_posix()) if chosen else None
    if not _in_kernel():
        return None
    here = Path.cwd().resolve()
    for root in (here, *here.parents):
        if (root / "_config.yml").is_file() and (root / BOOK_FRAMES).parent.is_dir():
            up = Path(os.path.relpath(root, here)).as_posix()
            return FrameFiles(root / BOOK_FRAMES, f"{up}/_static/{BOOK_FRAMES.name}")
    return None


def _rows(rows: Sequence[Sequence[str]], made: Mapping[str, w.Widget]) -> list[w.Widget]:
    rows = [[made[name] for name in row if name in made] for row in rows]
    return [row[0] if len(row) == 1 else w.HBox(row) for row in rows if row]


def _look_kwargs(control: Control, buttons: bool) -> Settings:
    """Label, style and width; a button width only where the flavour shows buttons."""
    kwargs: Settings = {"description": control.label}
    style = {k: v for k, v in control.style.items() if buttons or k != "button_width"}
    if style:
        kwargs["style"] = style
    if control.width:
        kwargs["layout"] = w.Layout(width=control.width)
    return kwargs


#: The live flavour's widget for each look of a list of options.
_LIVE_LOOKS = {"menu": w.Dropdown, "buttons": w.ToggleButtons, "slider": w.SelectionSlider}


def live_widget(control: Control) -> w.Widget:
    """The live flavour of ``control``: any value its :class:`Range` or :class:`Options` allow."""
    live = control.live
    if live is None:
        live = Options(list(zip(control.stop_labels(), control.stops, strict=True)), control.static)
    buttons = isinstance(live, Options) and live.look == "buttons"
    kwargs = {**_look_kwargs(control, buttons), "value": control.start}
    if isinstance(live, Options):
        return _LIVE_LOOKS[live.look](options=list(live.values), **kwargs)
    assert isinstance(live, Range)
    if live.readout_format:
        kwargs["readout_format"] = live.readout_format
    if live.step is not None:
        kwargs["step"] = live.step
    if live.box:
        box = w.BoundedIntText if live.integer else w.BoundedFloatText
        return box(min=live.low, max=live.high, **kwargs)
    if live.log_base is not None:
        low, high = (math.log(v, live.log_base) for v in (live.low, live.high))
        return w.FloatLogSlider(base=live.log_base, min=round(low, 9), max=round(high, 9), **kwargs)
    slider = w.IntSlider if live.integer else w.FloatSlider
    return slider(min=live.low, max=live.high, **kwargs)


def log_range(low: float, high: float, integer: bool = True, fmt: str = ",.0f") -> Range:
    """A live log slider (base 2, ten stops per doubling) for a control that spans orders of
    magnitude: every doubling takes the same drag, so a threshold is reachable by dragging."""
    return Range(low, high, 0.1, log_base=2, integer=integer, readout_format=fmt)


def set_high(widget: w.Widget, high: float) -> None:
    """Move a live control's top to ``high`` (a log slider keeps its bounds as exponents).

    A drawn slider is redrawn with its new bounds: ipywidgets moves them with noUiSlider's
    ``updateOptions``, which leaves the Home and End keys on the range the slider was drawn
    with, so End stopped at the previous model's longest context (#46). A change of
    orientation is what makes ipywidgets' slider view draw its noUiSlider afresh; flipped and
    flipped back, the slider looks as before."""
    top = round(math.log(high, widget.base), 9) if isinstance(widget, w.FloatLogSlider) else high
    if widget.max == top:
        return
    widget.max = top
    if isinstance(widget, (w.FloatLogSlider, w.FloatSlider, w.IntSlider)):
        drawn = widget.orientation
        widget.orientation = "vertical" if drawn == "horizontal" else "horizontal"
        widget.orientation = drawn


class LiveControls:
    """The live flavour's controls, by name, for a chapter's ``wire`` to couple."""

    def __init__(self, spec: Explorer) -> None:
        self.spec = spec
        self.widgets = {c.name: live_widget(c) for c in spec.controls if c.in_live}
        self._held = 0

    def __getitem__(self, name: str) -> w.Widget:
        return self.widgets[name]

    def values(self) -> Settings:
        values = {name: widget.value for name, widget in self.widgets.items()}
        for name in values:
            live = self.spec.control(name).live
            if isinstance(live, Range) and live.integer:
                values[name] = round(values[name])
        return values

    @property
    def held(self) -> bool:
        return self._held > 0

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Change several controls without a redraw for each (the caller redraws after)."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1


def live_explorer(spec: Explorer) -> LiveBox:
    """Every control redraws through the kernel, for any value it accepts; a setting the
    model rejects says why in the line under the controls."""
    view = spec.view()
    if isinstance(view, FastFigure):
        view.compress_level = SENT  # a live frame is sent once: encode it fast
    controls = LiveControls(spec)
    shown = w.Image(format="png") if hasattr(view, "png") else w.HTML()
    status = w.HTML()

    def redraw(_change: object = None) -> None:
        if controls.held:
            return
        values = controls.values()
        try:
            view.update(**spec.settings(values))
        # Invalid input only: a setting that does not fit is a model result the view draws
        # itself (the static book has no status line), CONTRIBUTING "Refusals".
        except ValueError as error:  # the package's message names the value to change
            status.value = f"<span style='color:#b2182b'>{html.escape(str(error))}</span>"
            if isinstance(view, FastFigure):  # the refused scene is not the one drawn
                view.forget_scene()
            return
        status.value = spec.status(values) if spec.status else ""
        shown.value = view.png() if hasattr(view, "png") else view.html()

    if spec.wire is not None:  # before redraw: a coupled control is set first, drawn once
        spec.wire(controls)
    for widget in controls.widgets.values():
        widget.observe(redraw, names="value")
    redraw()
    note = [w.HTML(f"<small>{spec.note}</small>")] if spec.note else []
    children = [*_rows(spec.rows, controls.widgets), status, shown, *note]
    return LiveBox(children, controls.widgets, view, redraw)


# ---- the static flavour: plain HTML and one small script -----------------------------------
@dataclass(frozen=True)
class Frame:
    """One precomputed frame: a PNG (``format`` "png": its bytes inline; "url": the URL of its
    file) with ``said``, what it shows in words (its titles and readouts: the image's alt and
    the live region's announcement), or a panel of HTML (``format`` "html")."""

    format: Literal["png", "url", "html"]
    value: bytes | str
    said: str = ""
    width: int = 0
    height: int = 0

    def src(self) -> str:
        """What an ``<img>`` loads: the file's URL, or the PNG inline as a data URL."""
        if self.format == "url":
            return str(self.value)
        assert isinstance(self.value, bytes)
        return f"data:image/png;base64,{base64.b64encode(self.value).decode()}"

    def as_json(self) -> dict[str, Any]:
        if self.format == "html":
            return {"html": self.value}
        return {"src": self.src(), "said": self.said}


def _png_size(png: bytes) -> tuple[int, int]:
    """A PNG's width and height from its header (0, 0 for anything else)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 24:
        return 0, 0
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


@dataclass(frozen=True)
class FrameFiles:
    """Where static frames are written, and the URL a page loads that folder by."""

    folder: Path
    url: str

    def frame(self, png: bytes, said: str = "") -> Frame:
        """A frame that loads ``png`` from a file named by its content (written once): a page
        carries a short URL per frame, and a browser fetches only the frames shown."""
        name = f"{hashlib.sha1(png).hexdigest()[:20]}.png"
        path = self.folder / name
        if not path.exists():
            # Whole or absent: the book's lessons run side by side, and two may share a frame.
            self.folder.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}.part")
            partial.write_bytes(png)
            partial.replace(path)
        return Frame("url", f"{self.url}/{name}", said, *_png_size(png))


def _frame(view: Any, files: FrameFiles | None = None) -> Frame:
    """The frame ``view`` shows now: a PNG (in a file, or inline) or a panel of HTML."""
    if not hasattr(view, "png"):
        return Frame("html", view.html())
    png = view.png()
    said = view.summary() if hasattr(view, "summary") else ""
    return files.frame(png, said) if files else Frame("png", png, said, *_png_size(png))


@dataclass(frozen=True)
class StaticControl:
    """A static control: the declaration's stops, ``index`` the one shown first."""

    control: Control

    @property
    def name(self) -> str:
        return self.control.name

    @property
    def look(self) -> Look:
        return self.control.static

    @property
    def options(self) -> list[tuple[str, Any]]:
        return list(zip(self.control.stop_labels(), self.control.stops, strict=True))

    @property
    def index(self) -> int:
        return list(self.control.stops).index(self.control.start)

    @property
    def value(self) -> Any:
        return self.control.start


def static_widget(control: Control) -> StaticControl:
    """The static flavour of ``control``: its stops, labelled, the start chosen."""
    return StaticControl(control)


_EXPLORER_IDS = itertools.count(1)


@dataclass(frozen=True)
class StaticExplorer:
    """The static flavour as the built book shows it: plain HTML (a native ``<select>``, a
    range input with a read-only readout, a radio group per row of toggles, the frame shown
    as an ``<img>`` whose alt says what it shows, a polite live region), with every frame
    listed in the page. ``book/static/explorer.js``, loaded (deferred) by the pages that have
    an explorer (book/_ext/lean_pages.py), switches frames as the controls move: no kernel,
    no widget renderer.

    ``frames`` holds one frame per combination of stops, keyed by the stops' indices in the
    order of ``controls`` (the declaration's ``nesting``), outermost first."""

    controls: dict[str, StaticControl]
    frames: dict[tuple[int, ...], Frame]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    key: str = field(default_factory=lambda: f"explorer-{next(_EXPLORER_IDS)}")

    def start(self) -> tuple[int, ...]:
        return tuple(c.index for c in self.controls.values())

    def shown(self) -> Frame:
        """The frame the page shows before any control moves."""
        return self.frames[self.start()]

    def strides(self) -> list[int]:
        """How far one step of each control moves in the list of frames."""
        sizes = [len(c.options) for c in self.controls.values()]
        return [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]

    def alt(self) -> str:
        """The first frame's alt (explorer.js adds the section's heading in the page)."""
        settings = ", ".join(
            f"{c.control.label} {c.options[c.index][0]}" for c in self.controls.values()
        )
        said = self.shown().said
        return f"Explorer figure, {settings}" + (f". It shows: {said}" if said else "")

    def _control_html(self, control: StaticControl, level: int, stride: int) -> str:
        ident = f"{self.key}-{control.name}"
        label = html.escape(control.control.label)
        data = f'data-level="{level}" data-stride="{stride}"'
        labels = [html.escape(text) for text, _ in control.options]
        if control.look == "menu":
            options = "".join(
                f'<option value="{i}"{" selected" if i == control.index else ""}>{text}</option>'
                for i, text in enumerate(labels)
            )
            return (
                f'<div class="explorer-control explorer-menu">'
                f'<label class="explorer-label" for="{ident}">{label}</label>'
                f'<select id="{ident}" {data}>{options}</select></div>'
            )
        if control.look == "buttons":
            radios = "".join(
                f'<label class="explorer-choice"><input type="radio" name="{ident}" value="{i}"'
                f"{' checked' if i == control.index else ''}><span>{text}</span></label>"
                for i, text in enumerate(labels)
            )
            return (
                f'<fieldset class="explorer-control explorer-buttons" role="radiogroup" '
                f'aria-labelledby="{ident}-label" {data}>'
                f'<legend class="explorer-label" id="{ident}-label">{label}</legend>'
                f'<div class="explorer-choices">{radios}</div></fieldset>'
            )
        shown = labels[control.index]
        return (
            f'<div class="explorer-control explorer-slider">'
            f'<label class="explorer-label" for="{ident}">{label}</label>'
            f'<input type="range" id="{ident}" min="0" max="{len(labels) - 1}" step="1" '
            f'value="{control.index}" aria-valuetext="{shown}" '
            f"data-labels='{html.escape(json.dumps([t for t, _ in control.options]))}' {data}>"
            f'<output class="explorer-readout" for="{ident}">{shown}</output></div>'
        )

    def _view_html(self) -> str:
        shown = self.shown()
        if shown.format == "html":
            assert isinstance(shown.value, str)
            return f'<div class="explorer-panel">{shown.value}</div>'
        size = f' width="{shown.width}" height="{shown.height}"' if shown.width else ""
        return (
            f'<img class="explorer-frame" src="{html.escape(shown.src())}"{size} '
            f'alt="{html.escape(self.alt())}">'
        )

    def _repr_html_(self) -> str:
        levels = {name: level for level, name in enumerate(self.controls)}
        strides = self.strides()
        rows = []
        for row in self.rows:
            made = [
                self._control_html(self.controls[n], levels[n], strides[levels[n]])
                for n in row
                if n in self.controls
            ]
            if made:
                rows.append(f'<div class="explorer-row">{"".join(made)}</div>')
        # Every frame, in order; "</" escaped so that no frame's HTML can end the script.
        frames = json.dumps([f.as_json() for f in self.frames.values()]).replace("</", "<\\/")
        caption = f'<p class="explorer-caption"><small>{self.caption}</small></p>'
        return (
            f'<div class="llm-explorer" id="{self.key}">{"".join(rows)}'
            f'<div class="explorer-view">{self._view_html()}</div>'
            '<div class="frame-announcer visually-hidden" role="status" aria-live="polite">'
            "</div>"
            f'<script type="application/json" class="explorer-frames">{frames}</script>'
            f"{caption if self.caption else ''}</div>"
        )

    def __repr__(self) -> str:
        names = ", ".join(self.controls)
        return f"<static explorer: {len(self.frames)} frames over {names}>"


def static_explorer(spec: Explorer) -> StaticExplorer:
    """Precomputed frames over every stop of every static control, switched in the browser."""
    view = (spec.static_view or spec.view)()
    order = spec.static_controls()
    files = frame_files()
    frames = {}
    for position in itertools.product(*(range(len(c.stops)) for c in order)):
        stops = {c.name: c.stops[i] for c, i in zip(order, position, strict=True)}
        view.update(**spec.settings(stops))
        frames[position] = _frame(view, files)
    return StaticExplorer(
        {c.name: static_widget(c) for c in order},
        frames,
        tuple(map(tuple, spec.static_rows or spec.rows)),
        spec.caption,
    )


#: What :func:`explorer` returns: the static flavour in the book build, the live one otherwise.
ExplorerView = StaticExplorer | LiveBox
