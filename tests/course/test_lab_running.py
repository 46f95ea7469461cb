"""A second ``make lab`` says one is running and gives its URL, instead of starting another
server on the next port (#46 item 5). The server is found from the runtime file every Jupyter
server writes; here a file naming this test's own (running) process stands in for it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from llmmath_course import lab


def write_server(runtime: Path, root: Path, pid: int) -> None:
    info = {"pid": pid, "root_dir": str(root), "url": "http://127.0.0.1:8899/", "token": "abc"}
    (runtime / f"jpserver-{pid}.json").write_text(json.dumps(info))


def test_a_second_make_lab_gives_the_running_one_s_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime, root = tmp_path / "runtime", tmp_path / "course"
    runtime.mkdir()
    root.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    write_server(runtime, root, os.getpid())
    monkeypatch.setattr(lab, "prepare", lambda root, learner: [])
    monkeypatch.setattr(os, "execv", lambda *a: pytest.fail("started a second server"))
    assert lab.main(["--root", str(root)]) == 0
    said = capsys.readouterr().out
    assert "already running" in said and "http://127.0.0.1:8899/lab?token=abc" in said, said


def test_a_stale_file_or_another_course_s_server_is_not_taken_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime, root = tmp_path / "runtime", tmp_path / "course"
    runtime.mkdir()
    root.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    write_server(runtime, tmp_path / "elsewhere", os.getpid())  # another course, running
    assert lab.running_server(root) is None
    ended = 2**22 + 12345  # beyond Linux's pid_max default: no such process
    write_server(runtime, root, ended)
    assert lab.running_server(root) is None
    write_server(runtime, root, os.getpid())
    assert lab.running_server(root) == "http://127.0.0.1:8899/lab?token=abc"
