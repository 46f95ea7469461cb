"""The environment ``make setup`` builds is requirements.lock, exactly, and stays fast to import.

The lock is installed with ``--no-deps`` (Makefile), so it has to be complete on its own; and it
leaves out rfc3987-syntax and lark on purpose: jsonschema imports rfc3987-syntax whenever it is
installed, and that import builds a parser for about a second in every Jupyter server, nbgrader
command and notebook validation (dozens of processes in a test run, thirty servers on a hub).
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
UNWANTED = re.search(r"^UNWANTED := (.+)$", (ROOT / "Makefile").read_text(), re.M)


def pins() -> dict[str, str]:
    lines = LOCK.read_text().splitlines()
    pairs = (line.split("==") for line in lines if line and not line.startswith("#"))
    return {name.lower(): version for name, version in pairs}


def unwanted() -> list[str]:
    assert UNWANTED, "the Makefile names the packages the lock leaves out (UNWANTED := ...)"
    return UNWANTED.group(1).split()


def test_every_pin_is_installed_at_its_version() -> None:
    wrong = {}
    for name, version in pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = "missing"
        if installed != version:
            wrong[name] = f"{installed}, lock says {version}"
    assert not wrong, f"run `make setup` again: {wrong}"


def test_the_lock_lacks_no_dependency() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"installed --no-deps, the lock must be whole:\n{result.stdout}"


@pytest.mark.parametrize("name", ["lark", "rfc3987-syntax"])
def test_the_slow_optional_import_stays_out(name: str) -> None:
    assert name in unwanted(), "the Makefile's UNWANTED list"
    assert name not in pins(), f"{name} is back in requirements.lock: re-run `make lock`"
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.version(name)
        pytest.fail(f"{name} is installed: run `make setup` (it uninstalls UNWANTED)")


def test_validating_a_notebook_and_starting_nbgrader_import_no_parser() -> None:
    code = "import sys, nbformat.validator, nbgrader.apps; print(sorted(m for m in sys.modules"
    code += " if m.split('.')[0] in ('lark', 'rfc3987_syntax')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout
