"""What a lesson page shows besides its figures' drawing: package source, captions, the
exercise link.

A leaf module (it imports IPython): lessons use it in hidden setup cells, so that the same page
reads the same in the built book (MyST-NB) and in JupyterLab (jupyterlab-myst), which cannot
read files from disk or resolve ``{doc}`` links to the book's pages.
"""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from IPython.display import Markdown, display
from matplotlib.figure import Figure

from llmmath.core.setting import Setting

#: Set by ``scripts/lab.py`` for the kernels of ``make lab``: the learner's folder, relative to
#: the course folder. Unset in the book build.
LEARNER_DIR_ENV = "LLMMATH_LEARNER_DIR"
#: Set to "1" by the book's API reference extension (``book/_ext/llmmath_api.py``) for the
#: kernels the book build runs: there the code a lesson shows links to its reference entry.
API_LINKS_ENV = "LLMMATH_API_LINKS"
#: Set to "1" for the hub's students' servers and their kernels (``hub/jupyterhub_config.py``,
#: started by ``scripts/hub.py``): there a lesson runs in ``~/<course>/lessons/``, pulled by the
#: book's launch button, and the student's copy of an exercise is made and opened by the
#: server's ``llmmath/my-work/<course>/<assignment>`` (``hub/llmmath_student_ext.py``).
HUB_ENV = "LLMMATH_HUB"


def source(function: Callable[..., Any] | property) -> Markdown:
    """``function``'s source (a function, method or property) as a Python code block.

    The code shown is the code that runs: it is read from the installed package. Its
    ``@contract(...)`` (the input checks at the package's edge) is left out: the lesson is about
    the arithmetic. In the book, a link to its entry in the API reference follows the code
    (JupyterLab has no reference pages to link to).
    """
    code = function.fget if isinstance(function, property) else function
    if code is None:
        raise ValueError("a property without a getter has no source to show")
    text = _without_contract(textwrap.dedent(inspect.getsource(code)).rstrip())
    shown = f"```python\n{text}\n```"
    if os.environ.get(API_LINKS_ENV) == "1":
        name = f"{code.__module__}.{code.__qualname__}"
        shown += f"\n\n{{py:obj}}`{code.__qualname__} in the API reference <{name}>`"
    return _markdown(shown)


def _without_contract(code: str) -> str:
    """``code`` (one definition) less its ``@contract(...)`` decorator, however many lines it
    spans; other decorators (``@property``) stay."""
    node = ast.parse(code).body[0]
    decorators = node.decorator_list if isinstance(node, ast.FunctionDef) else []
    dropped = {
        line
        for d in decorators
        if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "contract"
        for line in range(d.lineno, (d.end_lineno or d.lineno) + 1)
    }
    lines = code.splitlines()
    return "\n".join(text for number, text in enumerate(lines, 1) if number not in dropped)


def exercise_path(assignment: str) -> str:
    """The exercise notebook a lesson links to, relative to ``lessons/``: the learner's own copy
    in ``make lab``, the released exercise page in the book."""
    learner = os.environ.get(LEARNER_DIR_ENV)
    folder = learner.strip("/") if learner else "exercises"
    return f"../{folder}/{assignment}/{assignment}.ipynb"


def exercise_link(assignment: str, text: str) -> Markdown:
    """A Markdown link to ``exercise_path(assignment)`` (show it with ``{eval}``), and where to
    work it: in the book, in JupyterLab (``make lab``); in ``make lab``, the learner's own copy,
    already there (telling someone already in JupyterLab to run ``make lab`` confuses); on the
    hub (``HUB_ENV``), the server's address that makes the student's copy the first time and
    opens it."""
    if os.environ.get(HUB_ENV) == "1":
        mine = f"your own copy, in `my-work/{assignment}/`"
        return _markdown(f"[{text}]({_hub_my_work(assignment)}) ({mine})")
    link = f"[{text}]({exercise_path(assignment)})"
    learner = os.environ.get(LEARNER_DIR_ENV)
    if learner:
        return _markdown(f"{link} (your own copy, in `{learner.strip('/')}/{assignment}/`)")
    return _markdown(f"{link} in JupyterLab (`make lab`)")


def _hub_my_work(assignment: str) -> str:
    """The hub's ``llmmath/my-work/<course>/<assignment>`` under this server's prefix
    (``JUPYTERHUB_SERVICE_PREFIX``, ``/user/<name>/``, which the spawner sets for the server
    and its kernels inherit); the course is the folder holding the lesson's ``lessons/``, where
    the kernel runs."""
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/")
    course = Path.cwd().parent.name
    return f"{prefix.rstrip('/')}/llmmath/my-work/{course}/{assignment}"


def figure(drawing: Figure, caption: str) -> Markdown:
    """Show ``drawing``, then return its caption for the cell to show beneath it.

    A caption in the cell's output, not in MyST-NB's ``figure`` metadata, reads the same in the
    book and in JupyterLab (which shows no metadata), and its numbers can come from the package
    (an f-string in the cell) instead of being typed.
    """
    if not caption.strip():
        raise ValueError("caption must say what the figure shows, got an empty string")
    display(drawing)  # type: ignore[no-untyped-call]
    return _markdown(f"**Figure.** {caption.strip()}")


def setting(*settings: Setting, label: str = "Setting") -> Markdown:
    """The line (one per setting) a worked example shows above its numbers, written by
    :meth:`llmmath.core.setting.Setting.describe` from the object the numbers come from, so the
    text and the numbers cannot disagree about the model, the chips, the layout, the formats,
    the context or the overlap rule. Two settings compared side by side show a line each."""
    if not settings:
        raise ValueError("setting() needs at least one Setting to show, got none")
    for each in settings:
        if not isinstance(each, Setting):
            raise ValueError(f"setting() shows Setting objects, got {type(each).__name__}")
    # A dollar sign would open math in MyST and in JupyterLab's Markdown: escaped for both.
    lines = ["> **" + label + ".** " + each.describe().replace("$", "\\$") for each in settings]
    return _markdown("\n>\n".join(lines))


def _markdown(text: str) -> Markdown:
    return Markdown(text)  # type: ignore[no-untyped-call]
