"""Fixtures shared by the test modules, and how ``make test`` shares the tests between cores.

``make test`` runs the suite on both cores (pytest-xdist, ``--dist loadgroup``): each group of
tests runs whole on one worker, so a module's server, browser and built files are set up once.
A group is a test file, except the long tests below that start servers or courses of their
own: each of those is a group by itself, so that the other core can take it. Groups start
longest first (``--no-loadscope-reorder`` keeps this order; xdist's default would start the
files with the most tests first and leave the hub, two tests and five minutes, for last).
Each worker process starts one headless Chromium, on the first test that asks for it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser
from site_support import chromium

# Tests that need no fixture of their module's, so run apart from it: test name -> group.
APART = {
    "test_thirty_students_submit_at_once": "hub-thirty",  # its own hub of thirty
    "test_gradebook_on_postgresql_with_parallel_autograde": "instructor-apart",  # own courses
    "test_a_patched_builtin_never_reaches_the_next_students_tests": "instructor-apart",
    "test_make_check_passes_a_correct_copy": "lab-check",  # `make check` needs no Lab server
    "test_make_check_reports_an_empty_copy_part_by_part": "lab-check",
    "test_check_reports_a_partial_copy_part_by_part": "lab-check",
    "test_make_check_runs_no_hidden_test": "lab-check",
    "test_make_check_reads_every_exercise": "lab-check",
    "test_make_check_on_a_missing_copy_says_what_to_do": "lab-check",
    "test_an_answer_wrapped_in_float_passes_part_1_and_its_plot_runs": "lab-check",
}
# Longest first, by the wall time of a CI run (seconds, two workers); the rest keep their order.
LONGEST_FIRST = (
    "test_instructor.py",  # 250: the term's grading, regrade, SIGKILL, the formgrader
    "hub-thirty",  # 200: thirty servers started, thirty submissions
    "test_lab.py",  # 170: every lesson and exercise in JupyterLab
    "test_hub.py",  # 130: a class of three in the browser, and its hub's shutdown
    "lab-check",  # 100
    "test_browser.py",  # 60
    "test_grading.py",  # 55
    "test_notebooks.py",  # 50
    "test_plots_widgets.py",  # 50
    "instructor-apart",  # 40
)


def group_of(item: pytest.Item) -> str:
    name = getattr(item, "originalname", item.name)
    return APART.get(name, item.path.name)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group_of(item)))
    rank = {group: i for i, group in enumerate(LONGEST_FIRST)}
    # sort is stable: within a group, and among the short files, the order stays as collected
    items.sort(key=lambda item: rank.get(group_of(item), len(rank)))


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched
