"""Where the hub's servers run from: ``HUB_HOME``, a copy of this interpreter and a venv of
``requirements.lock`` readable by every user, one folder per version (``make hub-env``), and the
hub's proxy from npm (``hub/node_modules``). Standard library only: ``make hub-env`` runs it with
the system Python, beside (or before) the project's .venv.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

#: The checkout (src/llmmath_course/hub/ is three levels below it).
REPO = Path(__file__).resolve().parents[3]
PROXY = REPO / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
LOCK = REPO / "requirements.lock"
# Where the servers' Python lives: one folder per version (lock and interpreter), each a copy of
# this interpreter (without its site-packages) and a venv on it, all readable by every user.
HUB_ROOT = Path(os.environ.get("LLMMATH_HUB_HOME", "/opt/llmmath-hub"))


def env_version(lock: Path = LOCK) -> str:
    """The hub environment's folder name: a digest of the pins and of this interpreter."""
    digest = hashlib.sha256(lock.read_bytes() + sys.version.encode() + sys.base_prefix.encode())
    return digest.hexdigest()[:12]


HUB_HOME = HUB_ROOT / env_version()
HUB_ENV = HUB_HOME / "venv"
HUB_LIB = HUB_HOME / "python" / "lib"  # libpython, for LD_LIBRARY_PATH


def build_env(lock: Path, uv: Path) -> None:
    """HUB_HOME: this Python copied where every user can read it, and a venv with ``lock``.

    The project's interpreter may sit in root's private home (pyenv), which a student's server,
    running as the student, cannot open; Debian's python3 is older than the pins allow. Each
    version has a folder of its own (env_version): a build never touches another's, so a hub
    running from one keeps running; prune removes the versions that nothing runs from.
    """
    HUB_ROOT.mkdir(parents=True, exist_ok=True)
    HUB_ROOT.chmod(0o755)
    with (HUB_ROOT / ".build.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # two builds at once (make -j, two checkouts) wait
        installed = HUB_ENV / ".installed"
        if installed.exists() and installed.read_text() == lock.read_text() and _same_python():
            print(f"hub environment up to date in {HUB_HOME}")
        else:
            _build(lock, uv)
        for gone in prune(HUB_ROOT, keep=HUB_HOME):
            print(f"removed an unused hub environment: {gone}")


def _build(lock: Path, uv: Path) -> None:
    base = Path(sys.base_prefix)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    python = HUB_HOME / "python"
    shutil.rmtree(HUB_HOME, ignore_errors=True)  # this version only, and it was incomplete
    (python / "lib").mkdir(parents=True)
    shutil.copytree(base / "bin", python / "bin", symlinks=True)
    for lib in (base / "lib").glob("libpython*"):
        shutil.copy2(lib, python / "lib" / lib.name, follow_symlinks=False)
    shutil.copytree(
        base / "lib" / version, python / "lib" / version, symlinks=True,
        ignore=lambda folder, names: [n for n in names if n in ("site-packages", "test")]
        if Path(folder) == base / "lib" / version else [],
    )  # fmt: skip
    (python / "lib" / version / "site-packages").mkdir()
    env = dict(os.environ, LD_LIBRARY_PATH=str(HUB_LIB))
    venv = [str(python / "bin" / version), "-m", "venv", "--without-pip", str(HUB_ENV)]
    subprocess.run(venv, env=env, check=True)
    # As make setup. Students cannot write .pyc files here, so every one is made now.
    python_env = str(HUB_ENV / "bin" / "python")
    install = [str(uv), "pip", "install", "--quiet", "--python", python_env, "--no-deps"]
    subprocess.run([*install, "-r", str(lock), "pip==25.3"], env=env, check=True)
    site_packages = HUB_ENV / "lib" / version / "site-packages"
    compileall = [python_env, "-m", "compileall", "-q", "-j0", str(site_packages)]
    subprocess.run(compileall, env=env, check=True)
    subprocess.run(["chmod", "-R", "a+rX", str(HUB_HOME)], check=True)
    (HUB_ENV / ".installed").write_text(lock.read_text())


def in_use(folder: Path) -> bool:
    """Whether a running process maps a file from ``folder`` (its interpreter, libpython, a
    module's shared library) or works in it."""
    prefix = str(folder) + "/"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with suppress(OSError):
            if os.readlink(proc / "cwd").startswith(prefix):
                return True
            if prefix in (proc / "maps").read_text():
                return True
    return False


def prune(root: Path, keep: Path) -> list[Path]:
    """Remove every other hub environment under ``root`` that no process uses (a version
    folder, or the single venv/ and python/ of the layout before versions)."""
    gone = []
    for entry in sorted(root.iterdir()):
        version = re.fullmatch(r"[0-9a-f]{12}", entry.name) is not None
        if entry == keep or not entry.is_dir() or not (version or entry.name in ("venv", "python")):
            continue
        if not in_use(entry):
            shutil.rmtree(entry)
            gone.append(entry)
    return gone


def _same_python() -> bool:
    """The hub environment's Python is this one (same version and build)."""
    probe = subprocess.run(
        [str(HUB_ENV / "bin" / "python"), "-c", "import sys; print(sys.version)"],
        env=dict(os.environ, LD_LIBRARY_PATH=str(HUB_LIB)), capture_output=True, text=True,
    )  # fmt: skip
    return probe.returncode == 0 and probe.stdout.strip() == sys.version
