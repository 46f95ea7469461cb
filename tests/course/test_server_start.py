"""A course's Jupyter server starts without running ``node yarn.js config --json``
(lab/learner/no_yarn_config.py): ``make lab``'s learner server and the hub's students' and
grader's servers load their config files before JupyterLab, and those files keep
``import jupyterlab.labapp`` from asking yarn for the npm registry (0.5 s of CPU a start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from wait_support import seconds

from llmmath_course.hub.configs import write_configs

ROOT = Path(__file__).resolve().parents[2]
# Loads a config file as a server does (traitlets runs it with get_config and __file__), then
# imports JupyterLab's server application as the server does next, recording every process
# started meanwhile. Prints their command lines as JSON.
LOAD_THEN_IMPORT = """
import json, subprocess, sys
from pathlib import Path
from traitlets.config.loader import PyFileConfigLoader

started = []
popen_init = subprocess.Popen.__init__
def recording(self, args, *rest, **kwargs):
    started.append(args if isinstance(args, str) else " ".join(map(str, args)))
    return popen_init(self, args, *rest, **kwargs)
subprocess.Popen.__init__ = recording
if sys.argv[1]:
    config = Path(sys.argv[1])
    PyFileConfigLoader(config.name, str(config.parent)).load_config()
import jupyterlab.labapp
print(json.dumps(started))
"""


def started_by(config: Path | None, pythonpath: Path | None = None) -> list[str]:
    """The processes started while ``config`` loads and JupyterLab's server app is imported."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    result = subprocess.run(
        [sys.executable, "-c", LOAD_THEN_IMPORT, str(config or "")],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=seconds(120),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return list(json.loads(result.stdout.strip().splitlines()[-1]))


def yarn(started: list[str]) -> list[str]:
    return [line for line in started if "yarn" in line]


def test_jupyterlab_alone_runs_yarn_at_import() -> None:
    """What the course's configs prevent, still there in the pinned JupyterLab (else this file's
    other tests would pass for nothing)."""
    assert yarn(started_by(None)), "importing jupyterlab.labapp no longer runs yarn"


def test_make_labs_learner_server_runs_no_yarn() -> None:
    config = ROOT / "lab" / "learner" / "jupyter_server_config.py"
    assert yarn(started_by(config)) == []


@pytest.mark.parametrize("role", ["student", "grader"])
def test_the_hubs_servers_run_no_yarn(tmp_path: Path, role: str) -> None:
    write_configs(tmp_path, tmp_path / "exchange")
    config = tmp_path / "config" / role / "jupyter_server_config.py"
    assert yarn(started_by(config, pythonpath=tmp_path / "config" / "python")) == []
