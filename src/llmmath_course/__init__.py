"""The course tooling: grading with nbgrader (``instructor``), simulated classes for the grading
tests and benchmark (``simulate``), the lessons' saved layout (``page_layout``), Debian's
chromium on a loopback server for the browser tests and benchmarks (``browser``), the learner's
folder and JupyterLab of ``make lab`` (``lab``) and the JupyterHub class of ``make hub``
(``hub``).

Standard library and the course's pinned Jupyter stack only: nothing here imports ``llmmath``,
so the hub copies this package beside ``scripts/instructor.py`` into an instructor's course root
and runs it with an environment that does not install the course's model package. The scripts
(``python scripts/instructor.py ...``, ``python scripts/normalize_pages.py``, ``scripts/lab.py``,
``scripts/hub.py``) are one-line wrappers around a ``main`` here.
"""
