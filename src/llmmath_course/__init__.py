"""The course tooling: grading with nbgrader (``instructor``) and simulated classes (``simulate``).

Standard library and the course's pinned Jupyter stack only: nothing here imports ``llmmath``,
so the hub copies this package beside ``scripts/instructor.py`` into an instructor's course root
and runs it with an environment that does not install the course's model package.
``python scripts/instructor.py ...`` is a one-line wrapper around ``instructor.cli.main``.
"""
