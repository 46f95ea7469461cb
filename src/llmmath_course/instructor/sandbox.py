"""The grading sandbox: each submission's kernel in a bubblewrap jail of its own.

A submission is code the instructor runs. Without a jail it runs as the instructor: it can read
``solutions/`` and the gradebook, write the review ledger, keep a process running, read the
instructor server's ``JUPYTERHUB_API_TOKEN`` and exhaust the server's memory. Here every kernel is
started by Debian's ``bwrap`` (bubblewrap) in new mount, PID, network, IPC and UTS namespaces:

- it sees the read-only system (``/usr``, a few files of ``/etc``), the read-only Python
  environment, and one folder of its own holding a copy of its submission's folder (its working
  folder and home), its connection file and its sockets: no course root, no ``solutions/``, no
  gradebook or ledgers, no other submission, no home; a private ``/tmp`` (a size-capped tmpfs);
- no network (its own network namespace holds only a loopback), no ``JUPYTERHUB_*`` variable or
  any other of the grader's environment (``--clearenv``, then a short list);
- run by root (``make grade`` as root): it runs as the ``llmmath-grader`` system account, which
  owns nothing, with no capabilities (``setpriv``), in cgroups of its own (memory with no swap,
  and a process count), outside the grader's; run by another user (the hub's instructor): it runs
  in a user namespace as ``nobody`` (still the caller's uid to the rest of the system), with
  ``prlimit`` address-space, CPU and file-size limits, in a cgroup of its own only where one is
  delegated (``LLMMATH_GRADING_CGROUP``, a writable memory cgroup folder); the instructor's guide
  says what that gives up;
- its PID namespace ends with the kernel: ``bwrap``'s init is PID 1 there, and when the kernel
  exits (or the grading worker dies: ``--die-with-parent``) Linux kills every process left in it,
  detached or not; the cgroups are emptied and removed after.

Outputs are capped where they are received (``capped_output``): a cell printing 20 MB grows
no grading worker past its cap.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmmath_course.instructor.jail_cgroups import (
    CGROUP_PARENT,
    CGROUP_ROOT,
    process_start,
    remove_cgroup,
)
from llmmath_course.instructor.output_cap import capped_output

GRADER = "llmmath-grader"
NOBODY = 65534
# Files of /etc a Python kernel reads (the loader's cache, fonts for matplotlib, the time zone);
# nothing else of /etc (no passwd, no hosts, no ssl keys) is shown.
ETC = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/fonts",
    "/etc/localtime",
    "/etc/mime.types",
)
# The only environment a kernel gets (plus HOME, TMPDIR and its cache folders below).
KERNEL_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}


class SandboxUnavailableError(RuntimeError):
    """The grading sandbox cannot run here (the message says why)."""


@dataclass(frozen=True)
class Limits:
    """What one submission's kernel may use."""

    memory_bytes: int = 1 << 30  # its cgroup's (or, without one, its address space's) cap
    cpu_s: int = 600  # CPU seconds for the whole notebook (each cell also has the timeout)
    file_bytes: int = 64 << 20  # the largest file it may write
    tmp_bytes: int = 256 << 20  # its private /tmp
    pids: int = 256  # processes and threads, where a pids cgroup is available
    output_bytes: int = 4 << 20  # text and data a cell may send back; the rest is dropped


def parse_size(text: str) -> int:
    """``512M``, ``2G`` or a number of bytes, as bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text)
    except ValueError:
        raise ValueError(f"a size must be bytes or end in K, M or G, not {text!r}") from None


def check_sandbox() -> None:
    """Raise ``SandboxUnavailableError`` unless ``bwrap`` runs a sandboxed command here."""
    if shutil.which("bwrap") is None:
        raise SandboxUnavailableError(
            "bwrap is not installed (Debian: apt-get install bubblewrap); grading without the "
            "sandbox runs students' code as you: --kernels fork, knowingly"
        )
    if os.geteuid() == 0:
        grader_ids()
    probe = [*bwrap_args(Path("/"), None), "--", *_drop_privileges(), "/bin/true"]
    result = subprocess.run(probe, capture_output=True, text=True, check=False)
    if result.returncode:
        raise SandboxUnavailableError(
            f"bwrap cannot start a sandbox here ({result.stderr.strip()}); user namespaces may "
            "be off (sysctl kernel.unprivileged_userns_clone=1) or the container forbids them"
        )


def grader_ids() -> tuple[int, int]:
    """The uid and gid of the grader account, made (as a system account) if missing."""
    try:
        entry = pwd.getpwnam(GRADER)
    except KeyError:
        made = subprocess.run(
            [
                "useradd", "--system", "--user-group", "--no-create-home",
                "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", GRADER,
            ],
            check=False, capture_output=True, text=True,
        )  # fmt: skip
        try:  # made here, or by another grading process that raced this one (useradd exit 9)
            entry = pwd.getpwnam(GRADER)
        except KeyError:
            raise SandboxUnavailableError(f"no {GRADER} account: {made.stderr.strip()}") from None
    return entry.pw_uid, entry.pw_gid


def _course_package() -> set[str]:
    """The ``llmmath`` package's own folder, where it is installed outside the environment
    (an editable install: the checkout's ``src/llmmath``). An exercise's read-only setting cells
    print a part's setting with it; the folder holds the model's code and data only, never a
    solution or a hidden test (the rest of the checkout stays unbound). Located, not imported."""
    spec = importlib.util.find_spec("llmmath")
    if spec is None or not spec.submodule_search_locations:
        return set()
    return {str(Path(folder).resolve()) for folder in spec.submodule_search_locations}


def _python_trees() -> list[str]:
    """The Python environment's folders: the venv, the interpreter it was made from, and the
    course package's folder where an editable install keeps it outside them."""
    trees = {sys.prefix, sys.base_prefix, str(Path(sys.executable).resolve().parents[1])}
    trees |= _course_package()
    trees |= {str(Path(t).resolve()) for t in trees}
    # A folder inside another is bound with it; /usr is bound anyway.
    kept = sorted(t for t in trees if not t.startswith("/usr/") and t != "/usr")
    return [t for t in kept if not any(t != o and t.startswith(o + "/") for o in kept)]


def bwrap_args(work: Path, limits: Limits | None) -> list[str]:
    """bwrap's arguments for a kernel whose only writable folder is ``work``."""
    args = ["bwrap", "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:  # privileged bwrap; setpriv then drops to the grader account
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        args += ["--unshare-cgroup-try"]
    else:  # a user namespace, where the caller is nobody
        args += ["--unshare-all", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    args += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for etc in ETC:
        args += ["--ro-bind-try", etc, etc]
    # The private /tmp first: a Python tree below /tmp (a checkout cloned there) is bound over it.
    tmp = limits.tmp_bytes if limits else 1 << 20
    args += ["--size", str(tmp), "--perms", "1777", "--tmpfs", "/tmp"]
    made: set[str] = set()
    for tree in _python_trees():
        # bwrap makes missing parents 0700 (root's): the grader account could not pass them.
        for parent in reversed(Path(tree).parents[:-1]):
            folder = str(parent)
            if folder not in made:
                made.add(folder)
                args += ["--perms", "0755", "--dir", folder]
        args += ["--ro-bind", tree, tree]
    args += ["--proc", "/proc", "--dev", "/dev"]
    if work != Path("/"):
        home = work / "home"
        args += ["--bind", str(work), str(work), "--chdir", str(home)]
        args += ["--clearenv"]
        env = dict(KERNEL_ENV, HOME=str(home), TMPDIR="/tmp")
        env |= {"MPLCONFIGDIR": "/tmp/matplotlib", "IPYTHONDIR": "/tmp/ipython"}
        if os.environ.get("LD_LIBRARY_PATH"):  # the hub's Python finds its libpython by it
            env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
        # llmmath where no .pth of the environment's finds it (the hub's course copy, the
        # formgrader's PYTHONPATH): its folder's parent, where only that folder is bound.
        env["PYTHONPATH"] = os.pathsep.join(
            sorted({str(Path(p).parent) for p in _course_package()})
        )
        for key, value in env.items():
            args += ["--setenv", key, value]
    return args


def _drop_privileges() -> list[str]:
    """As root: become the grader account with no capabilities, no way back (setpriv)."""
    if os.geteuid() != 0:
        return []
    uid, gid = grader_ids()
    return [
        "setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--no-new-privs",
        "--inh-caps=-all", "--bounding-set=-all", "--",
    ]  # fmt: skip


def _rlimits(limits: Limits, cgroup: bool) -> list[str]:
    """prlimit's arguments: CPU time, file size, no core dumps; the address space too where no
    memory cgroup holds the kernel (a cap on mappings, not on memory: the guide says so)."""
    args = ["prlimit", f"--cpu={limits.cpu_s}", f"--fsize={limits.file_bytes}", "--core=0"]
    if not cgroup:
        args.append(f"--as={limits.memory_bytes}")
    return [*args, "--"]


class Jail:
    """One kernel's sandbox: its folder, its cgroups, its command line."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        # Short: the kernel's ipc socket paths must stay under 108 bytes.
        self.work = Path(tempfile.mkdtemp(prefix="llmg-", dir="/tmp"))
        (self.work / "home").mkdir()
        self.cgroups = self._make_cgroups()

    # ---- cgroups: memory (no swap) and a process count, as root; a delegated one otherwise
    def _make_cgroups(self) -> list[Path]:
        # Named for the grading process that owns the jail (pid and start time) and the jail's
        # folder: a jail whose owner died without closing it is found by ``sweep_orphaned_jails``.
        name = f"{CGROUP_PARENT}/{os.getpid()}.{process_start(os.getpid())}.{self.work.name}"
        made: list[Path] = []
        delegated = os.environ.get("LLMMATH_GRADING_CGROUP")
        try:
            if delegated:
                made.append(self._memory_cgroup(Path(delegated) / name.split("/")[1]))
            elif os.geteuid() == 0:
                if (CGROUP_ROOT / "cgroup.controllers").exists():  # cgroup v2
                    made.append(self._v2_cgroup(CGROUP_ROOT / name))
                else:
                    made.append(self._memory_cgroup(CGROUP_ROOT / "memory" / name))
                    if (CGROUP_ROOT / "pids").is_dir():
                        pids = CGROUP_ROOT / "pids" / name
                        pids.mkdir(parents=True)
                        made.append(pids)
                        (pids / "pids.max").write_text(str(self.limits.pids))
        except OSError:
            for path in reversed(made):
                remove_cgroup(path)
            return []  # no cgroup here: prlimit's address-space cap stands in
        return made

    def _memory_cgroup(self, path: Path) -> Path:
        path.mkdir(parents=True)
        (path / "memory.limit_in_bytes").write_text(str(self.limits.memory_bytes))
        memsw = path / "memory.memsw.limit_in_bytes"
        if memsw.exists():  # swap counted too, where the kernel accounts it
            memsw.write_text(str(self.limits.memory_bytes))
        return path

    def _v2_cgroup(self, path: Path) -> Path:
        (path.parent).mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            (path.parent / "cgroup.subtree_control").write_text("+memory +pids")
        path.mkdir()
        (path / "memory.max").write_text(str(self.limits.memory_bytes))
        (path / "memory.swap.max").write_text("0")
        (path / "pids.max").write_text(str(self.limits.pids))
        return path

    def out_of_memory(self) -> bool:
        """Whether the kernel's memory cgroup killed something for memory."""
        for path in self.cgroups:
            for name, key in (("memory.oom_control", "oom_kill"), ("memory.events", "oom_kill")):
                with contextlib.suppress(OSError):
                    for line in (path / name).read_text().splitlines():
                        if line.startswith(key + " ") and int(line.split()[1]) > 0:
                            return True
        return False

    # ---- the kernel
    def prepare(self, cwd: Path, connection_file: Path) -> Path:
        """Copy the submission's folder (plain files and folders only) into the jail's home and
        the connection file beside it; give both to the grader account. The copy's path."""
        home = self.work / "home"
        shutil.copytree(cwd, home, dirs_exist_ok=True, ignore=_not_plain, symlinks=True)
        inside = self.work / "kernel.json"
        shutil.copyfile(connection_file, inside)
        if os.geteuid() == 0:
            uid, gid = grader_ids()
            for parent, dirs, files in os.walk(self.work):
                for name in [parent, *(os.path.join(parent, n) for n in dirs + files)]:
                    os.lchown(name, uid, gid)
        os.chmod(self.work, 0o700)
        return inside

    def command(self, argv: list[str]) -> list[str]:
        """The kernel's command line, jailed: joins its cgroups, then bwrap, setpriv, prlimit.

        bwrap's ``--die-with-parent`` covers the sandbox once bwrap runs, but a grading worker
        killed while its kernel was still starting (a ``kill -9`` of ``regrade`` at the wrong
        moment) left bwrap orphaned for good. So the command asks for SIGKILL on its parent's
        death first (``setpriv --pdeathsig``), then checks that parent is still the worker
        that launched it, and only then starts bwrap: no window is left.
        """
        jailed = [
            *bwrap_args(self.work, self.limits), "--",
            *_drop_privileges(), *_rlimits(self.limits, bool(self.cgroups)), *argv,
        ]  # fmt: skip
        worker = os.getpid()
        guard = f'[ "$PPID" = {worker} ] || exit 112; exec "$@"'
        guarded = ["setpriv", "--pdeathsig", "KILL", "--", "/bin/sh", "-c", guard, "sandbox"]
        # Join the cgroups before bwrap starts: every process of the sandbox is born inside.
        join = "".join(
            f"echo $$ > {shlex.quote(str(path / 'cgroup.procs'))} || exit 111; "
            for path in self.cgroups
        )
        return ["/bin/sh", "-c", f'{join}exec "$@"', "sandbox", *guarded, *jailed]

    def peak_memory(self) -> int | None:
        """The most memory the kernel's cgroup held (bytes), where the cgroup says."""
        for path in self.cgroups:
            for name in ("memory.max_usage_in_bytes", "memory.peak"):
                with contextlib.suppress(OSError, ValueError):
                    return int((path / name).read_text())
        return None

    def close(self) -> None:
        """Kill whatever is left in the cgroups, remove them and the jail's folder."""
        log = os.environ.get("LLMMATH_KERNEL_MEMORY_LOG")  # scripts/bench_grading.py
        peak = self.peak_memory() if log else None
        if log and peak is not None:
            with open(log, "a") as fh:
                fh.write(f"{peak}\n")
        for path in self.cgroups:
            remove_cgroup(path)
        shutil.rmtree(self.work, ignore_errors=True)


def _not_plain(folder: str, names: list[str]) -> list[str]:
    """copytree's ignore: every entry that is not a plain file or folder (no link, no fifo)."""
    skipped = []
    for name in names:
        mode = os.lstat(os.path.join(folder, name)).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            skipped.append(name)
    return skipped


#: Imported by each kernel before it answers (as by the fork server, forkkernel.PRELOAD): their
#: import time is then kernel start-up, never part of the first cell's timeout.
PRELOAD = ("numpy", "matplotlib", "matplotlib.pyplot", "matplotlib_inline.backend_inline")


def preloading(argv: list[str]) -> list[str]:
    """``python -m ipykernel_launcher ARGS`` as ``python -c '<imports>; launch' ARGS``."""
    if argv[1:3] != ["-m", "ipykernel_launcher"]:
        return argv
    imports = "; ".join(f"import {name}" for name in PRELOAD)
    launch = "from ipykernel.kernelapp import launch_new_instance; launch_new_instance()"
    return [argv[0], "-c", f"{imports}; {launch}", *argv[3:]]


# ---- nbclient / jupyter_client side, in a grading worker --------------------------------------
#: What the report and the errors log say of a kernel its memory cgroup killed.
OUT_OF_MEMORY = "kernel killed: out of memory"
#: The submission folders whose kernel ran out of memory in this worker (the kernel manager's).
OOM_KILLED: set[str] = set()


def _provisioner_class() -> type:
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner

    class SandboxProvisioner(LocalProvisioner):
        async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
            manager: Any = self.parent
            jail: Jail = manager.jail
            cwd = Path(kwargs.get("cwd") or Path.cwd())
            inside = jail.prepare(cwd, Path(manager.connection_file))
            argv = [str(inside) if arg == manager.connection_file else arg for arg in cmd]
            argv = preloading(argv)
            kwargs["env"] = {"PATH": KERNEL_ENV["PATH"]}  # bwrap's own; the kernel's is set
            kwargs["cwd"] = str(cwd)
            # The kernel's own stdio is noise (outputs travel over zmq), as for fork kernels.
            kwargs["stdout"] = kwargs["stderr"] = subprocess.DEVNULL
            manager.student_path = cwd
            return await super().launch_kernel(jail.command(argv), **kwargs)

        async def cleanup(self, restart: bool = False) -> None:
            await super().cleanup(restart)
            jail: Jail | None = getattr(self.parent, "jail", None)
            if jail is not None:
                if jail.out_of_memory():
                    OOM_KILLED.add(str(getattr(self.parent, "student_path", "")))
                jail.close()

    return SandboxProvisioner


def _kernel_manager_class(limits: Limits) -> type:
    from jupyter_client.manager import AsyncKernelManager

    provisioner = _provisioner_class()

    class SandboxKernelManager(AsyncKernelManager):
        """A kernel in a jail of its own, on ipc sockets inside the jail's folder."""

        async def _async_pre_start_kernel(self, **kwargs: Any) -> Any:
            self.jail = Jail(limits)
            # A signal to bwrap would kill the sandbox, not interrupt the kernel inside it: a
            # cell that times out is interrupted by a message to the kernel instead.
            if self.kernel_spec is not None:
                self.kernel_spec.interrupt_mode = "message"
            self.transport = "ipc"
            self.ip = str(self.jail.work / "k")  # sockets k-<n>, beside the connection file
            self.kernel_id = self.kernel_id or kwargs.pop("kernel_id", str(uuid.uuid4()))
            if self.provisioner is None:
                self.provisioner = provisioner(
                    kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self
                )
            return await super()._async_pre_start_kernel(**kwargs)

    return SandboxKernelManager


def sandbox_execute_class(limits: Limits) -> type:
    """nbgrader's Execute preprocessor with jailed kernels and capped outputs."""
    from nbgrader.preprocessors import Execute

    manager = _kernel_manager_class(limits)

    class SandboxExecute(Execute):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["kernel_manager_class"] = manager
            super().__init__(*args, **kwargs)
            self._sent: dict[int, int] = {}

        def preprocess(self, nb: Any, *args: Any, **kwargs: Any) -> Any:
            self._sent = {}  # output bytes by cell, for this notebook
            return super().preprocess(nb, *args, **kwargs)

        def output(
            self, outs: list[Any], msg: dict[str, Any], display_id: Any, cell_index: int
        ) -> Any:
            return capped_output(self, super().output, outs, msg, display_id, cell_index, limits)

    return SandboxExecute
