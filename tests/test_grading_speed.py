"""The grading worker's shortcuts (scripts/fastgrade.py, scripts/forkkernel.py) change nothing
nbgrader records or accepts; tests/test_instructor.py grades whole classes through them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import fastgrade  # noqa: E402
import forkkernel  # noqa: E402

GOOD_META = {
    "grade": True, "solution": False, "locked": True, "points": 2,
    "grade_id": "test_part1", "schema_version": 3,
}  # fmt: skip


@pytest.fixture
def shortcuts() -> Iterator[None]:
    fastgrade.install()
    try:
        yield
    finally:
        fastgrade.uninstall()  # the rest of the session uses nbgrader as it ships


def test_a_forked_kernel_gets_only_its_own_arguments() -> None:
    """Given ``-m ipykernel_launcher`` too, IPython would run that module inside each kernel."""
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "/tmp/k.json"]
    assert forkkernel._kernel_args(argv) == ["-f", "/tmp/k.json"]
    assert forkkernel._kernel_args(["/usr/bin/kernel", "-f", "k.json"]) == ["-f", "k.json"]


def test_the_gradebook_keeps_one_engine_and_separate_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shortcuts: None
) -> None:
    from nbgrader.api import Course, Gradebook

    # A new gradebook stamps its schema with alembic, which sits next to this interpreter.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url, "llmmath") as first:
        first.add_student("alice")
        with Gradebook(url, "llmmath") as second:
            assert second.engine is first.engine, "the engine is built once"
            assert second.db() is not first.db(), "each gradebook has its own session"
            assert [s.id for s in second.students] == ["alice"]
    with Gradebook(url, "other") as third:  # a new course is still recorded
        assert {c.id for c in third.db.query(Course).all()} == {"llmmath", "other"}


def test_cell_metadata_is_checked_as_strictly(shortcuts: None) -> None:
    from jsonschema import ValidationError
    from nbformat.v4 import new_code_cell
    from nbgrader.nbgraderformat import MetadataValidator

    validator = MetadataValidator()
    validator.validate_cell(new_code_cell(metadata={"nbgrader": GOOD_META}))
    for bad in ({**GOOD_META, "points": "two"}, {**GOOD_META, "locked": "yes"}):
        with pytest.raises(ValidationError):
            validator.validate_cell(new_code_cell(metadata={"nbgrader": bad}))


def test_plain_nbgrader_is_untouched() -> None:
    """Only a grading worker installs the shortcuts: plain nbgrader keeps its own."""
    code = (
        "import jsonschema; from nbgrader.nbgraderformat import common; "
        "print(common.jsonschema is jsonschema)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
