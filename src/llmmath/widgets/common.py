"""Shared widget plumbing: the static/live switch and client-side linked frame stacks.

* ``live``: with a kernel (JupyterLab), every change re-runs the model and redraws, for any
  value of the controls.
* ``static``: for the built book, where no kernel runs. Every frame is rendered at build time
  into an ``ipywidgets.Image`` inside nested ``Stack`` widgets, and each control is
  ``jslink``-ed to the ``selected_index`` of the Stacks it drives, so moving it switches
  frames in the browser with no Python behind it.

Each chapter's explorer picks the flavour with :func:`static_mode`: static while the book is
being built (the Makefile sets ``LLMMATH_STATIC_WIDGETS=1``), live otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as w

STATIC_ENV = "LLMMATH_STATIC_WIDGETS"


def static_mode() -> bool:
    """True while the book is built: controls must work without a kernel."""
    return os.environ.get(STATIC_ENV, "") == "1"


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
