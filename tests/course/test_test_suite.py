"""The test suite's own promises (#41): the model's tests run without the browser driver, and
every wait's budget comes from one place (tests/wait_support.py) that scales with the machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import wait_support

ROOT = Path(__file__).resolve().parents[2]
# A Python that cannot import playwright: an import hook, loaded by site before pytest starts.
NO_PLAYWRIGHT = """\
import sys

class NoPlaywright:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "playwright":
            raise ModuleNotFoundError(f"No module named {name!r} (hidden by the test)")

sys.meta_path.insert(0, NoPlaywright())
"""


def test_the_model_tests_run_without_playwright(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(NO_PLAYWRIGHT)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    hidden = subprocess.run(
        [sys.executable, "-c", "import playwright"], env=env, capture_output=True, text=True
    )
    assert hidden.returncode != 0, "the hook did not hide playwright"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
         "tests/model/test_roofline.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=wait_support.seconds(120),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout


def test_budgets_scale_with_the_environment_factor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wait_support, "load_factor", lambda: 1.5)
    monkeypatch.setenv("LLMMATH_WAIT_FACTOR", "2")
    assert wait_support.seconds(10) == pytest.approx(30)
    assert wait_support.ms(10) == pytest.approx(30_000)
    monkeypatch.delenv("LLMMATH_WAIT_FACTOR")
    assert wait_support.seconds(10) == pytest.approx(15)


@pytest.mark.parametrize("bad", ["0.5", "fast", "nan", ""])
def test_a_bad_factor_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("LLMMATH_WAIT_FACTOR", bad)
    with pytest.raises(ValueError, match="LLMMATH_WAIT_FACTOR must be a number >= 1"):
        wait_support.seconds(1)


def test_the_load_factor_stays_between_one_and_its_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    cores = os.cpu_count() or 1
    for load, expected in ((0.0, 1.0), (4.0 * cores, 2.0), (1000.0 * cores, 4.0)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert wait_support.load_factor() == pytest.approx(expected)


def test_a_wait_returns_what_it_waited_for_and_says_what_it_saw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wait_support, "factor", lambda: 1.0)
    answers = iter([None, 0, "ready"])
    assert wait_support.wait_until(lambda: next(answers), "an answer", 5, every=0) == "ready"
    with pytest.raises(AssertionError, match=r"for the file written; saw: 3 bytes"):
        wait_support.wait_until(lambda: False, "the file written", 0.05, lambda: "3 bytes")
