"""Fixtures shared by the test modules, and how ``make test`` shares the tests between cores.

``make test`` runs the suite on both cores (pytest-xdist, ``--dist loadgroup``, scheduled by
``GroupScheduling`` below): each group of tests runs whole on one worker, so a module's server,
browser and built files are set up once. A group is a test file, except the long tests in
``APART`` that start servers or courses of their own: each of those groups runs apart from its
file, so that the other core can take it. Groups start longest first (xdist's default starts
the files with the most tests first, and left the hub, two tests and five minutes, for last).
Each worker process starts one headless Chromium, on the first test that asks for it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
import wait_support

if TYPE_CHECKING:  # imported where a test asks for a browser: the model's tests run without it
    from playwright.sync_api import Browser

# Tests that need no fixture of their module's, so run apart from it: test name -> group.
APART = {
    "test_thirty_students_submit_at_once": "hub-thirty",  # its own hub of thirty
    # No class hub: the forger's OS users and no hub at all; the restart's hub of its own.
    "test_a_forged_submission_is_refused_and_reported": "hub-alone",
    "test_the_class_survives_a_restart": "hub-alone",
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
# Longest first, by the wall time of a run on two workers (seconds, 2 cores; the two workers
# ended 1 s apart); the rest keep their order.
LONGEST_FIRST = (
    "test_instructor.py",  # 126: the term's grading, regrade, SIGKILL, the formgrader
    "hub-thirty",  # 130: thirty servers started, thirty submissions
    "test_lab.py",  # ~135: every lesson and exercise in Lab (178 before they shared tabs)
    "test_hub.py",  # ~204 of 306 (the rest is hub-alone): a class of three, the launch button
    # ~120 (est.: 276 -> ~150 test-s since axe's colour contrast runs on one element of each
    # look outside one page of each kind): axe over every page, the keyboard, a phone's width
    "test_accessibility.py",
    "hub-alone",  # ~102: a forged submission (OS users, no hub), a hub stopped and restarted
    "test_visible_checks.py",  # ~80 (160 under load 18): was unlisted, so scheduled last
    "test_hub_attacks.py",  # 58: a hub of two, an attacker's submission in the formgrader
    "lab-check",  # 45
    "test_browser.py",  # ~45 (est.: 59 before each page was loaded once for all its tests)
    "test_grading.py",  # 42
    "test_grading_sandbox.py",  # ~100 alone: the attackers' class, and a killed regrade
    "test_plots_widgets.py",  # 16
    "instructor-apart",  # 17
)


def group_of(nodeid: str) -> str:
    """``tests/<kind>/test_x.py::test_name[param]`` -> its group: the test's APART group or its
    file."""
    path, _, name = nodeid.partition("@")[0].partition("::")
    return APART.get(name.split("[")[0], path.rsplit("/", 1)[-1])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest groups first; sort is stable, so each group keeps its tests' order."""
    rank = {group: i for i, group in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: fine without it (-p no:xdist)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Whole groups per worker, in collection order. (xdist's own loadgroup reads
    ``xdist_group`` marks through a node id that pytest 9 no longer lets it change: every test
    became a group of one, and module fixtures, a whole graded course among them, were built on
    both workers.)"""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    config.option.loadscopereorder = False  # keep the longest-first order of the collection
    return GroupScheduling(config, log)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before anything runs: remove the hubs a killed run left (their ``finally`` never ran),
    with their students' servers, accounts and mounts, and the grading jails whose worker died
    with a kernel inside. Root's only (only root starts hubs and makes cgroups); the
    controller's only (xdist's workers start later, and a live run's are not touched)."""
    if hasattr(session.config, "workerinput") or os.geteuid() != 0:
        return
    from llmmath_course.hub.leftovers import sweep
    from llmmath_course.instructor.jail_cgroups import sweep_orphaned_jails

    for line in [*sweep(), *sweep_orphaned_jails()]:
        print(line, file=sys.stderr)


def pytest_report_header(config: pytest.Config) -> str:
    return (
        f"waits: budgets x{wait_support.factor():.2f} now (LLMMATH_WAIT_FACTOR "
        f"{wait_support.env_factor():g} x load {wait_support.load_factor():.2f}; "
        "tests/wait_support.py)"
    )


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    from site_support import chromium

    with chromium() as launched:
        yield launched


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A test that fails with pages open in this process's browser (the session's ``browser``)
    gets their screenshots: paths in its report, "open pages when it failed"."""
    report = yield
    if report.failed and call.when == "call":
        from llmmath_course.browser import running

        opened = running()
        if opened is not None and opened.is_connected():
            shots = wait_support.screenshot_pages(opened, item.nodeid)
            if shots:
                report.sections.append(("open pages when it failed", "\n".join(shots)))
    return report
