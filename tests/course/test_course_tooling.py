"""The course tooling (src/llmmath_course/): its shape, and what it relies on inside the pinned
nbgrader and jupyter_client, so that an upgrade that changes any of it fails here, loudly,
instead of grading slower or not at all. tests/course/test_instructor.py grades whole classes
with it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from wait_support import seconds

import llmmath_course
from llmmath_course.instructor import forkkernel
from llmmath_course.instructor.course import course_config

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(llmmath_course.__file__).parent
MODULES = sorted(
    info.name for info in pkgutil.walk_packages([str(PACKAGE)], prefix="llmmath_course.")
)
MAX_LINES = 500  # as src/llmmath (tests/model/test_package.py)


@pytest.mark.parametrize("module", MODULES)
def test_modules_stay_short_and_import_alone(module: str) -> None:
    path = Path(importlib.import_module(module).__file__ or "")
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it along a seam"


def test_the_course_tooling_never_imports_the_model_package() -> None:
    """The hub runs it with an environment that does not install llmmath (scripts/hub.py)."""
    found = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if re.search(r"^\s*(from|import) llmmath\b(?!_course)", path.read_text(), re.M)
    ]
    assert not found, f"{found} import llmmath"


def test_the_wrapper_runs_the_command_line() -> None:
    """``python scripts/instructor.py`` is the documented command (book/instructor.md)."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "instructor.py"), "--help"],
        capture_output=True, text=True, timeout=seconds(60), check=True,
    )  # fmt: skip
    for command in ("grade", "autograde", "regrade", "release-feedback", "review", "report"):
        assert command in out.stdout, out.stdout


def test_a_forked_kernel_gets_only_its_own_arguments() -> None:
    """Given ``-m ipykernel_launcher`` too, IPython would run that module inside each kernel."""
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "/tmp/k.json"]
    assert forkkernel._kernel_args(argv) == ["-f", "/tmp/k.json"]
    assert forkkernel._kernel_args(["/usr/bin/kernel", "-f", "k.json"]) == ["-f", "k.json"]


# ---- what the fork kernels rely on in nbgrader and jupyter_client ------------------------------
def test_nbgrader_autogrades_with_a_replaceable_execute_step() -> None:
    """The course's ``Autograde.autograde_preprocessors`` (a configurable setting) hold one
    Execute step, the sandboxed one, which every autograde from the course's config runs (the
    formgrader's button too); instructor.py swaps it for its own limits, ``ForkExecute`` or
    nbgrader's ``Execute``, each setting nbclient's ``kernel_manager_class``."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    from llmmath_course.instructor.autograde import grading_config

    steps = list(Autograde(config=course_config(ROOT)).autograde_preprocessors)
    runs = [s for s in steps if isinstance(s, type) and issubclass(s, Execute)]
    assert [s.__name__ for s in runs] == ["SandboxedExecute"], steps
    assert Execute not in steps, "nbgrader's own Execute would run submissions unsandboxed"
    assert "kernel_manager_class" in Execute.class_trait_names()
    assert "CheckHiddenTests" in [getattr(s, "__name__", "") for s in steps]
    for kernels, name in (("sandbox", "SandboxExecute"), ("fork", "ForkExecute")):
        swapped = grading_config(ROOT, None, kernels)["Autograde"]["autograde_preprocessors"]
        assert [s.__name__ for s in swapped if issubclass(s, Execute)] == [name], swapped
    fresh = grading_config(ROOT, None, "fresh")["Autograde"]["autograde_preprocessors"]
    assert Execute in fresh and runs[0] not in fresh, fresh


def test_jupyter_client_provisioner_uses_only_what_a_forked_process_has() -> None:
    """``ForkProvisioner`` is jupyter_client's ``LocalProvisioner`` (its documented extension
    point) with ``launch_kernel`` replaced: every ``self.process`` method the rest of
    ``LocalProvisioner`` calls must exist on ``ForkedProcess``, and the fields it sets must
    still be the ones ``launch_kernel`` sets."""
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner

    source = inspect.getsource(LocalProvisioner)
    used = set(re.findall(r"self\.process\.(\w+)", source)) - {"win32_interrupt_event"}
    process = forkkernel.ForkedProcess(server=None, pid=0)  # type: ignore[arg-type]
    missing = sorted(name for name in used if not hasattr(process, name))
    assert not missing, f"LocalProvisioner now calls process.{missing}: ForkedProcess lacks them"
    assert inspect.iscoroutinefunction(LocalProvisioner.launch_kernel)
    set_there = set(
        re.findall(r"self\.(\w+)\s*=", inspect.getsource(LocalProvisioner.launch_kernel))
    )
    assert set_there <= {"process", "pid", "pgid", "cwd", "connection_info", "ip", "ports_cached"}


def test_jupyter_client_still_has_the_private_hook_the_kernel_manager_overrides() -> None:
    """``ForkKernelManager`` overrides ``AsyncKernelManager._async_pre_start_kernel`` (private)
    to choose ipc sockets and its provisioner before the kernel starts."""
    from jupyter_client.manager import AsyncKernelManager

    hook = getattr(AsyncKernelManager, "_async_pre_start_kernel", None)
    assert hook is not None and inspect.iscoroutinefunction(hook), "the hook is gone"
    for name in ("transport", "ip", "provisioner", "kernel_id", "kernel_spec"):
        assert hasattr(AsyncKernelManager, name), f"AsyncKernelManager.{name} is gone"


def test_plain_nbgrader_is_untouched_by_grading() -> None:
    """Nothing in nbgrader is patched: setting up a grading worker leaves its classes alone."""
    code = (
        "from nbgrader import api; from nbgrader.nbgraderformat import common; import jsonschema\n"
        "before = (api.Gradebook.__init__, common.jsonschema)\n"
        "from llmmath_course.instructor.autograde import grading_config\n"
        "from pathlib import Path\n"
        f"grading_config(Path({str(ROOT)!r}), None, 'fork')\n"
        "after = (api.Gradebook.__init__, common.jsonschema)\n"
        "print(before == after, common.jsonschema is jsonschema)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=seconds(120)
    )
    assert out.stdout.split() == ["True", "True"], out.stdout + out.stderr


def test_nbgrader_still_has_what_the_course_plugins_override() -> None:
    """grading/llmmath_nbgrader.py's collect (refusing a submission not owned by its student)
    overrides ``ExchangeCollect.init_src`` and calls its private ``_path_to_record`` and
    ``_sort_by_timestamp``, and sets ``src_records``, which ``copy_files`` reads; its release
    overrides ``ExchangeReleaseAssignment.ensure_root``. Each must still be there, and mean the
    same: a record names its file, its student and its time."""
    from nbgrader.exchange.default.collect import ExchangeCollect
    from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
    from nbgrader.utils import check_directory

    for owner, name in [
        (ExchangeCollect, "init_src"),
        (ExchangeCollect, "_path_to_record"),
        (ExchangeCollect, "_sort_by_timestamp"),
        (ExchangeCollect, "copy_files"),
        (ExchangeReleaseAssignment, "ensure_root"),
    ]:
        assert callable(getattr(owner, name, None)), f"nbgrader's {owner.__name__}.{name} is gone"
    assert "self.src_records" in inspect.getsource(ExchangeCollect.copy_files)
    assert callable(check_directory)
    collect = ExchangeCollect.__new__(ExchangeCollect)  # the two helpers read no settings
    record = collect._path_to_record("/x/inbound/bob+roofline+2026-12-05 10:00:00.000000 UTC+abc")
    assert (record["username"], record["filename"]) == (
        "bob",
        "bob+roofline+2026-12-05 10:00:00.000000 UTC+abc",
    ), record
    later = {**record, "timestamp": record["timestamp"].replace(hour=11)}
    assert collect._sort_by_timestamp([record, later])[0] is later


# ---- what the grading sandbox relies on --------------------------------------------------------
def test_nbclient_and_jupyter_client_still_have_what_the_sandbox_overrides() -> None:
    """``SandboxExecute`` overrides nbclient's ``NotebookClient.output`` (to cap outputs) and
    its provisioner ``LocalProvisioner.launch_kernel`` (to jail the command) and ``cleanup``."""
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner
    from nbclient import NotebookClient

    params = list(inspect.signature(NotebookClient.output).parameters)
    assert params == ["self", "outs", "msg", "display_id", "cell_index"], params
    for name in ("launch_kernel", "cleanup"):
        assert inspect.iscoroutinefunction(getattr(LocalProvisioner, name)), name


def test_a_cell_past_its_output_cap_is_cut_with_one_note() -> None:
    from llmmath_course.instructor.output_cap import capped_output
    from llmmath_course.instructor.sandbox import Limits

    class Client:
        def __init__(self) -> None:
            self._sent: dict[int, int] = {}

    client = Client()

    outs: list[Any] = []

    def keep(outs: list[Any], msg: dict[str, Any], display_id: Any, cell_index: int) -> Any:
        outs.append(msg["content"]["text"])
        return msg

    limits = Limits(output_bytes=10)
    for text in ("12345", "67890", "abc", "def"):
        msg = {"content": {"text": text}}
        capped_output(client, keep, outs, msg, None, 0, limits)
    assert outs[:2] == ["12345", "67890"]
    assert len(outs) == 3 and "output over" in outs[2].text


def test_copies_compare_answers_without_comments_and_whitespace() -> None:
    import nbformat

    from llmmath_course.instructor.copies import normalized
    from llmmath_course.instructor.sandbox import parse_size

    one = nbformat.v4.new_code_cell("x = 2 * 3  # my answer\n\ny=x")  # type: ignore[no-untyped-call]
    two = nbformat.v4.new_code_cell("x=2*3\ny = x\n")  # type: ignore[no-untyped-call]
    other = nbformat.v4.new_code_cell("x = 3 * 2\ny = x")  # type: ignore[no-untyped-call]
    assert normalized(one) == normalized(two) != normalized(other)
    assert parse_size("512M") == 512 << 20 and parse_size("2G") == 2 << 30
    with pytest.raises(ValueError, match="K, M or G"):
        parse_size("lots")


#: A grading worker's ``die_with_run`` on the run ``sys.argv[1]``, with ``pidfd_open`` refused as
#: Linux before 5.3 refuses it (ENOSYS) when ``sys.argv[2]`` is "no-pidfd"; it says so, then waits.
WORKER = """
import errno, os, sys, time
from llmmath_course.instructor import autograde
if sys.argv[2] == "no-pidfd":
    def refused(pid, flags=0):
        raise OSError(errno.ENOSYS, "Function not implemented")
    os.pidfd_open = refused
autograde.die_with_run(int(sys.argv[1]))
print("watching", flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("pidfd", ["pidfd", "no-pidfd"])
def test_a_grading_worker_ends_with_its_run(pidfd: str) -> None:
    """A worker's parent is the fork server, which outlives a killed run, so each worker
    watches the run itself: through its pidfd, or, where the kernel has none, by looking at it.
    Either way the worker is SIGKILLed once the run is gone, and a worker started for a run
    that is already gone exits at once."""
    run = subprocess.Popen(["sleep", "600"])
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(run.pid), pidfd], stdout=subprocess.PIPE, text=True
    )
    try:
        assert worker.stdout is not None
        said = select.select([worker.stdout], [], [], seconds(60))[0]
        assert said and worker.stdout.readline() == "watching\n", "the worker never watched"
        assert worker.poll() is None, "the worker ended while its run lives"
        run.kill()
        run.wait()
        assert worker.wait(timeout=seconds(10)) == -signal.SIGKILL
    finally:
        for process in (run, worker):
            process.kill()
            process.wait()
    late = subprocess.run(
        [sys.executable, "-c", WORKER, str(run.pid), pidfd],
        capture_output=True, text=True, timeout=seconds(60),
    )  # fmt: skip
    assert (late.returncode, late.stdout) == (1, ""), "a worker outlived a run already gone"
