"""Controls declared once, built in two flavours.

A chapter declares its explorer once (:class:`Explorer`): the figure it drives and each
:class:`Control` (the ``update()`` keyword it sets, its label, where it starts, the static
book's stops and what the live flavour accepts). :func:`explorer` then builds

* ``live``: with a kernel (JupyterLab), every change re-runs the model and redraws, for any
  value the control accepts;
* ``static``: for the built book, where no kernel runs. Every frame is rendered at build time
  into an ``ipywidgets.Image`` inside nested ``Stack`` widgets (in the book, a file under
  ``_static/frames/`` the image loads by URL, see :func:`frame_files`; elsewhere inline
  PNG bytes), and each control is
  ``jslink``-ed to the ``selected_index`` of the Stacks it drives, so moving it switches
  frames in the browser with no Python behind it.

:func:`explorer` picks the flavour with :func:`static_mode`: static while the book is being
built (the Makefile sets ``LLMMATH_STATIC_WIDGETS=1``), live otherwise.
"""

from __future__ import annotations

import hashlib
import html
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

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
class StaticBox(w.VBox):  # type: ignore[misc]  # ipywidgets has no type hints
    """The static flavour as the page shows it (a ``VBox``), with its controls by name and the
    nested Stacks they switch."""

    def __init__(self, children: list[w.Widget], controls: dict[str, w.Widget], stacks: w.Stack):
        super().__init__(children)
        self.controls = controls
        self.stacks = stacks


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


def explorer(spec: Explorer) -> StaticBox | LiveBox:
    """The static flavour while the book is built, the live one otherwise."""
    return static_explorer(spec) if static_mode() else live_explorer(spec)


@dataclass(frozen=True)
class FrameFiles:
    """Where static frames are written, and the URL a page loads that folder by."""

    folder: Path
    url: str

    def image(self, png: bytes, summary: str = "") -> w.Image:
        """An image widget that loads ``png`` from a file named by its content (written once):
        a page carries a short URL per frame, and a browser fetches only the frames shown.
        ``summary`` (what the frame says in words) rides in the URL's fragment, which no
        request sends: the book's a11y.js reads it into the frame's ``alt`` and announces it
        when the frame changes (#45)."""
        name = f"{hashlib.sha1(png).hexdigest()[:20]}.png"
        path = self.folder / name
        if not path.exists():
            # Whole or absent: the book's lessons run side by side, and two may share a frame.
            self.folder.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}.part")
            partial.write_bytes(png)
            partial.replace(path)
        fragment = f"#{quote(summary, safe='')}" if summary else ""
        return w.Image(value=f"{self.url}/{name}{fragment}".encode(), format="url")


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


def _leaf(view: Any, files: FrameFiles | None = None) -> w.Widget:
    if hasattr(view, "png"):
        png = view.png()
        summary = view.summary() if hasattr(view, "summary") else ""
        return files.image(png, summary) if files else w.Image(value=png, format="png")
    return w.HTML(view.html())


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


_STATIC_WIDGETS = {"menu": w.Dropdown, "buttons": w.ToggleButtons, "slider": w.SelectionSlider}


def static_widget(control: Control) -> w.Widget:
    """The static flavour of ``control``: its stops, by index (each has an ``index`` trait),
    labelled; its ``value`` is the stop itself."""
    make = _STATIC_WIDGETS[control.static]
    options = list(zip(control.stop_labels(), control.stops, strict=True))
    index = list(control.stops).index(control.start)
    look = _look_kwargs(control, control.static == "buttons")
    return make(options=options, index=index, **look)


def static_explorer(spec: Explorer) -> StaticBox:
    """Precomputed frames over every stop of every static control, switched client-side."""
    view = (spec.static_view or spec.view)()
    order = spec.static_controls()
    made = {c.name: static_widget(c) for c in order}
    files = frame_files()

    def frame(*stops: Any) -> w.Widget:
        view.update(**spec.settings(dict(zip((c.name for c in order), stops, strict=True))))
        return _leaf(view, files)

    stacks = nested_stacks([list(c.stops) for c in order], frame, [made[c.name] for c in order])
    caption = [w.HTML(f"<small>{spec.caption}</small>")] if spec.caption else []
    return StaticBox([*_rows(spec.static_rows or spec.rows, made), stacks, *caption], made, stacks)


def live_widget(control: Control) -> w.Widget:
    """The live flavour of ``control``: any value its :class:`Range` or :class:`Options` allow."""
    live = control.live
    if live is None:
        live = Options(list(zip(control.stop_labels(), control.stops, strict=True)), control.static)
    buttons = isinstance(live, Options) and live.look == "buttons"
    kwargs = {**_look_kwargs(control, buttons), "value": control.start}
    if isinstance(live, Options):
        return _STATIC_WIDGETS[live.look](options=list(live.values), **kwargs)
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


def nested_stacks(
    axes: Sequence[Sequence[Any]],
    make_leaf: Callable[..., w.Widget],
    controls: Sequence[w.Widget],
) -> w.Stack:
    """A Stack per level of ``axes``; ``controls[i]`` drives every Stack at level ``i``.

    Each control must have an ``index`` trait (Dropdown, ToggleButtons, SelectionSlider)
    whose positions match ``axes[i]``; links run in the browser via ``jslink``.
    """

    def build(level: int, chosen: tuple[Any, ...]) -> w.Widget:
        if level == len(axes):
            return make_leaf(*chosen)
        children = [build(level + 1, (*chosen, value)) for value in axes[level]]
        stack = w.Stack(children=children, selected_index=int(controls[level].index))
        w.jslink((controls[level], "index"), (stack, "selected_index"))
        return stack

    root = build(0, ())
    assert isinstance(root, w.Stack)
    return root
