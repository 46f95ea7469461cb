"""Build the book as ``jupyter-book build`` does, with its pages read on every core.

Reading a lesson executes it (MyST-NB's inline mode), and the six lessons are most of the
build. Jupyter Book 1's command line has no ``-j``, although the ``build_sphinx`` it calls
takes ``jobs``; this passes it, and changes two things Sphinx would otherwise do:

- Sphinx reads in parallel only when every extension says that is safe.
  ``sphinx_multitoc_numbering``, which sphinx-external-toc always loads, says nothing; it only
  replaces how section numbers are assigned, which runs in the main process after every page
  is read, so it is declared safe here.
- Sphinx hands each process a batch of pages in name order (up to ten), which put all six
  lessons in one batch on one core. Here each page is its own task, the lessons first, so that
  none of them starts last while the other cores wait.

(``sphinx_jupyterbook_latex`` does not say either; it only serves PDF builds, and _config.yml
turns it off.) An extension added later that does not say makes Sphinx warn "doing serial
read", which ``make book``'s ``-W`` turns into a failed build, so it cannot slip in unseen.
On this machine's two cores the build takes 30-32 s, against 45-48 s one page at a time.

It also names the file in which the pages that measure the machine building the book (the
roofline chapter, the validation page) keep that one measurement:
``llmmath.core.measure.measure_machine_once`` measures on the first page that asks and reads it
on every other, so the book shows one machine (``make book-clean`` measures afresh).

Usage: the same arguments as ``jupyter-book build`` (``make book`` passes them).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

import jupyter_book.sphinx
import sphinx.builders
import sphinx_multitoc_numbering
from jupyter_book.cli.main import main

from llmmath.core import measure

EXECUTED = "lessons/"  # the pages read by executing them (_config.yml: execute)
# Beside the built book, not in it (_build/html is what is published).
MACHINE_FILE = Path(__file__).resolve().parent.parent / "_build" / "measured_machine.json"


def one_page_per_task(docnames: list[str], nproc: int, maxbatch: int = 10) -> list[list[str]]:
    """Sphinx's ``make_chunks``, one page per chunk, the pages that execute first."""
    return [[name] for name in sorted(docnames, key=lambda name: not name.startswith(EXECUTED))]


def multitoc_setup(app: Any, _setup: Any = sphinx_multitoc_numbering.setup) -> dict[str, Any]:
    return {**(_setup(app) or {}), "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    # Inherited by every process that reads a page and by the kernels that execute them.
    os.environ[measure.MACHINE_FILE_ENV] = str(MACHINE_FILE)
    sphinx_multitoc_numbering.setup = multitoc_setup
    # Sphinx is pinned (requirements.lock); a release that moves this fails here, not silently.
    if not callable(getattr(sphinx.builders, "make_chunks", None)):
        sys.exit("scripts/build_book.py: sphinx.builders.make_chunks is gone; see its docstring")
    sphinx.builders.make_chunks = one_page_per_task
    build = jupyter_book.sphinx.build_sphinx
    jupyter_book.sphinx.build_sphinx = functools.partial(build, jobs=len(os.sched_getaffinity(0)))
    sys.exit(main(["build", *sys.argv[1:]]))
