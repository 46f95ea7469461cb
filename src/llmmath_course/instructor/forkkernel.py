"""Grading kernels forked from a pristine, pre-imported parent (used by ``autograde``).

A fresh ``python -m ipykernel_launcher`` per student costs about half a second of CPU to start
Python and import IPython, and the exercise's plot cell another 0.65 s to import matplotlib.
Here each grading worker starts one *fork server* at the beginning: a process that imports
ipykernel, numpy and matplotlib and then never runs any notebook code. For each student it
``fork()``s, and the child becomes that student's kernel: a new process with its own memory,
holding nothing of any other student (the parent never ran a student's cell, so a patched
``math.isclose`` or builtin dies with that student's kernel). The child then starts exactly as
``ipykernel_launcher`` would, with the connection file, working folder and environment the
kernel manager asked for.

``ForkExecute`` is nbgrader's ``Execute`` preprocessor with ``ForkKernelManager``; ``autograde``
puts it in ``Autograde.autograde_preprocessors`` in place of ``Execute``. Plain ``nbgrader
autograde`` and the formgrader keep nbgrader's own kernels.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

# Imported in the fork server before any student code runs; each one is then free in a kernel.
PRELOAD = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "ipykernel.debugger",  # imports debugpy and pydevd: 0.15 s of CPU per kernel otherwise
    "IPython.core.interactiveshell",
    "stack_data",  # tracebacks (every failing test prints one)
    "pygments.lexers.python",
    "pygments.formatters.terminal256",
    "numpy",
    "matplotlib",
    "matplotlib.pyplot",
    "matplotlib.backends.backend_agg",
    "matplotlib_inline.backend_inline",
)
#: prctl(2) option: the signal a process gets when its parent dies (Linux).
PR_SET_PDEATHSIG = 1
# What ipykernel sets for the kernel's plots; set before matplotlib is imported in the server.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


# ---- the fork server (its own process; reads one JSON request a line on stdin) ---------------
def serve() -> None:
    """Import PRELOAD, then fork one kernel per request; reap kernels as they exit."""
    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    # Every object alive now is shared with each kernel; keep the collector from walking
    # (and so copying) their memory pages in every child.
    gc.freeze()
    exited: dict[int, int] = {}

    def reap(_signum: int, _frame: Any) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            exited[pid] = os.waitstatus_to_exitcode(status)

    signal.signal(signal.SIGCHLD, reap)
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    print("ready", file=sys.stdout, flush=True)
    for line in requests:
        request = json.loads(line)
        if request["op"] == "launch":
            server = os.getpid()
            pid = os.fork()
            if pid == 0:
                _become_kernel(request, server)  # never returns
            reply: dict[str, Any] = {"pid": pid}
        else:  # "poll": None while running, else the exit code
            reply = {"exitcode": exited.pop(request["pid"], None)}
        replies.write(json.dumps(reply).encode() + b"\n")
        replies.flush()


def _log_cpu(started: float, ready: float) -> None:
    """Append this kernel's CPU seconds, start-up and the rest (its cells, its shutdown), to the
    file ``LLMMATH_KERNEL_CPU_LOG`` names, if any (scripts/bench_grading.py --breakdown)."""
    log = os.environ.get("LLMMATH_KERNEL_CPU_LOG")
    if log and ready:
        with open(log, "a") as fh:
            fh.write(f"{ready - started:.4f} {time.process_time() - ready:.4f}\n")


def _die_with(server: int) -> None:
    """End this kernel when the fork server ends, even if it ended a moment ago: the kernel
    asks Linux for SIGKILL on its parent's death, then checks it was not already orphaned
    (a kill between fork() and here would otherwise leave it running for good)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != server:
        os._exit(0)


def _kernel_args(argv: list[str]) -> list[str]:
    """The kernel's own arguments from the kernel spec's command line.

    ``python -m ipykernel_launcher -f conn.json`` must reach ``IPKernelApp`` as ``-f conn.json``
    only: given ``-m ipykernel_launcher`` too, IPython runs that module inside the new kernel
    (and formats the error it raises), half a second of CPU per student for nothing.
    """
    if "-m" in argv:
        return argv[argv.index("-m") + 2 :]
    return argv[1:]


def _become_kernel(request: dict[str, Any], server: int) -> None:
    started = ready = 0.0
    try:
        _die_with(server)
        os.setsid()  # its own process group, as Popen(start_new_session=True) would give
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)  # the kernel's own stdio is noise: outputs travel over zmq
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)
        # ipykernel exits when this parent (the fork server) goes, as it does for the parent
        # a Popen launch names: a worker killed mid-run leaves no kernel behind.
        os.environ["JPY_PARENT_PID"] = str(server)
        argv = _kernel_args(request["argv"])
        sys.argv = [sys.executable, *argv]
        from ipykernel.kernelapp import IPKernelApp

        started = time.process_time()
        app = IPKernelApp.instance()
        app.initialize(argv)  # type: ignore[no-untyped-call]  # ipykernel types neither
        ready = time.process_time()
        app.start()  # type: ignore[no-untyped-call]
    finally:
        _log_cpu(started, ready)
        os._exit(0)


# ---- the client side, in a grading worker ---------------------------------------------------
class ForkServer:
    """One fork server process, started on first use and stopped at exit."""

    _instance: ForkServer | None = None

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            # This file as a script: no import of the package it sits in (the hub's course
            # root has it beside scripts/instructor.py, on no path of its own).
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=dict(
                os.environ,
                OPENBLAS_NUM_THREADS="1",
                MPLBACKEND=INLINE_BACKEND,
                # debugpy, preloaded, warns on import that Python's stdlib is frozen: noise here.
                PYDEVD_DISABLE_FILE_VALIDATION="1",
            ),
        )
        atexit.register(self.close)  # the server and its kernels end with the worker
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != b"ready":
            raise RuntimeError("the grading fork server did not start")

    @classmethod
    def instance(cls) -> ForkServer:
        if cls._instance is None or cls._instance.process.poll() is not None:
            cls._instance = cls()
        return cls._instance

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.flush()
        reply: dict[str, Any] = json.loads(self.process.stdout.readline())
        return reply

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=10)


class ForkedProcess:
    """Enough of ``subprocess.Popen`` for jupyter_client's LocalProvisioner."""

    stdin = stdout = stderr = None

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server, self.pid, self.returncode = server, pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.ask({"op": "poll", "pid": self.pid})["exitcode"]
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.05)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def _provisioner_class() -> type:
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner

    class ForkProvisioner(LocalProvisioner):
        async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
            server = ForkServer.instance()
            env = dict(kwargs.get("env") or os.environ)
            cwd = str(kwargs.get("cwd") or Path.cwd())
            pid = server.ask({"op": "launch", "argv": cmd, "cwd": cwd, "env": env})["pid"]
            self.process = ForkedProcess(server, pid)  # type: ignore[assignment]  # as a Popen
            self.pid = self.pgid = pid
            self.cwd = cwd
            return self.connection_info

    return ForkProvisioner


def _kernel_manager_class() -> type:
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.paths import jupyter_runtime_dir

    provisioner = _provisioner_class()

    class ForkKernelManager(AsyncKernelManager):
        """A kernel forked from the worker's fork server, on local ipc sockets (no TCP)."""

        async def _async_pre_start_kernel(self, **kwargs: Any) -> Any:
            self.transport = "ipc"
            # ipc sockets are files: one prefix per kernel in Jupyter's runtime folder.
            runtime = Path(jupyter_runtime_dir())
            runtime.mkdir(parents=True, exist_ok=True)
            self.ip = str(runtime / f"grading-{uuid.uuid4().hex[:12]}")
            self.kernel_id = self.kernel_id or kwargs.pop("kernel_id", str(uuid.uuid4()))
            if self.provisioner is None:
                self.provisioner = provisioner(
                    kernel_id=self.kernel_id,
                    kernel_spec=self.kernel_spec,
                    parent=self,
                )
            return await super()._async_pre_start_kernel(**kwargs)

    return ForkKernelManager


def fork_execute_class() -> type:
    """nbgrader's Execute preprocessor, with kernels from the fork server."""
    from nbgrader.preprocessors import Execute

    manager = _kernel_manager_class()

    class ForkExecute(Execute):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["kernel_manager_class"] = manager
            super().__init__(*args, **kwargs)

    return ForkExecute


if __name__ == "__main__":
    serve()
