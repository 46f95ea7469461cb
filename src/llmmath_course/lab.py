"""Set up a learner's folder and start JupyterLab on it (``make lab`` runs this).

    python scripts/lab.py                     # prepare my-work/, then JupyterLab on 127.0.0.1:8888
    python scripts/lab.py --prepare-only      # only prepare my-work/ (copies, start page)
    python scripts/lab.py --port 9999 -- --ServerApp.token=secret   # extra args go to jupyter lab
    python scripts/lab.py --role instructor   # nbgrader's instructor tools, lessons writable

Preparing the learner's folder (default ``my-work/``, gitignored):

- copies each ``exercises/<assignment>/`` to ``my-work/<assignment>/`` the first time only. An
  existing copy is never touched, so a rebuild, a ``git pull`` of a new course version or a
  regenerated release leaves the learner's answers alone; when the release has changed since
  the copy was made, it says so (and still leaves the copy alone);
- writes ``my-work/START.md``, the start page: every lesson in the book's order and the
  learner's exercise copies (rewritten every time; it holds no work);
- seeds JupyterLab's layout (``my-work/.lab/workspaces/``) the first time, so the first launch opens
  the start page as a rendered page with the file browser in ``my-work/``. Later launches
  restore whatever the learner left open.

As a learner (the default), JupyterLab reads ``lab/learner/`` as well: lessons open read-only
(never autosaved, so the checkout stays clean) and nbgrader's instructor tools are hidden.
``--role instructor`` (``make lab ROLE=instructor``) leaves both out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

import yaml

#: The checkout (src/llmmath_course/ is two levels below it).
ROOT = Path(__file__).resolve().parents[2]
LEARNER_DIR = "my-work"
#: The layout JupyterLab restores at /lab lives in this file (slug of the workspace "default").
WORKSPACE_FILE = f"default-{hashlib.sha256(b'default').hexdigest()[:4]}.jupyterlab-workspace"
STATE = ".lab"  # in the learner's folder: JupyterLab's layout, and what each copy came from
ROLES = ("learner", "instructor")
LEARNER_CONFIG = ROOT / "lab" / "learner"  # read-only lessons, no instructor tools

# Hidden in the rendered page; lets a double click open the page as a notebook without
# asking for a kernel.
FRONT_MATTER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3 (ipykernel)
  language: python
  name: python3
---
"""


def book_order(root: Path) -> dict[str, int]:
    """Each file of the table of contents (``_toc.yml``, without suffix) and its rank."""
    order: list[str] = []
    toc = root / "_toc.yml"
    if toc.exists():
        text = yaml.safe_load(toc.read_text()) or {}
        stack: list[object] = [text]
        while stack:  # depth first, in document order
            node = stack.pop(0)
            if isinstance(node, dict):
                if isinstance(node.get("file"), str):
                    order.append(node["file"])
                stack[:0] = [v for k, v in node.items() if k != "file"]
            elif isinstance(node, list):
                stack[:0] = node
    return {name: i for i, name in enumerate(order)}


def assignments(root: Path) -> list[str]:
    """Every released assignment (a folder in exercises/ that holds a notebook), in the book's
    order, then any not yet in the table of contents."""
    release = root / "exercises"
    if not release.is_dir():
        return []
    found = [p for p in release.iterdir() if p.is_dir() and any(p.glob("*.ipynb"))]
    rank = book_order(root)

    def place(folder: Path) -> tuple[int, str]:
        pages = (f"exercises/{folder.name}/{nb.stem}" for nb in folder.glob("*.ipynb"))
        return (min((rank[p] for p in pages if p in rank), default=len(rank)), folder.name)

    return [p.name for p in sorted(found, key=place)]


def lessons(root: Path) -> list[Path]:
    """Every lesson, in the book's order (_toc.yml), then any not yet in the table of contents."""
    found = sorted((root / "lessons").glob("*.md"))
    rank = book_order(root)
    return sorted(found, key=lambda p: (rank.get(f"lessons/{p.stem}", len(rank)), p.stem))


def title(path: Path) -> str:
    """The first ``# `` heading of a markdown lesson, or its file name."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def digest(folder: Path) -> str:
    """A fingerprint of the notebooks in ``folder`` (to tell whether a release changed)."""
    h = hashlib.sha256()
    for nb in sorted(folder.glob("*.ipynb")):
        h.update(nb.name.encode() + b"\0" + nb.read_bytes())
    return h.hexdigest()


def copy_exercise(root: Path, learner: Path, assignment: str) -> str:
    """Copy ``exercises/<assignment>/`` into the learner's folder unless a copy exists."""
    source, target = root / "exercises" / assignment, learner / assignment
    stamp_file = learner / STATE / f"{assignment}.copied-from.json"
    shown = target.relative_to(root).as_posix()
    if not target.exists():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        stamp_file.parent.mkdir(exist_ok=True)
        stamp_file.write_text(json.dumps({"release": digest(source)}) + "\n")
        return f"copied exercises/{assignment}/ to {shown}/ (yours from now on)"
    note = f"kept your {shown}/ (never overwritten)"
    try:
        stamp = json.loads(stamp_file.read_text())["release"]
    except (OSError, ValueError, KeyError):
        return note
    if stamp != digest(source):
        note += (
            f"; exercises/{assignment}/ has changed since you copied it: "
            f"compare with it, or move your copy away and rerun to get the new one"
        )
    return note


def start_page(root: Path, learner: Path) -> str:
    """The start page's markdown: what to open, in order, and how to check an exercise."""
    up = os.path.relpath(root, learner)
    lines = [
        FRONT_MATTER,
        "# LLM Math in JupyterLab",
        "",
        "Read a lesson, move its controls (they recompute through the live Python kernel, for "
        "any value), then work its graded exercise in **your copy** below.",
        "",
        "## Lessons",
        "",
        "Open one, then **Run → Run All Cells**. The lessons are the course's own files and "
        "open read-only: to keep a version of your own, **File → Save Notebook As…** into "
        "this folder.",
        "",
    ]
    for i, lesson in enumerate(lessons(root), 1):
        lines.append(f"{i}. [{title(lesson)}]({up}/lessons/{lesson.name})")
    lines += [
        "",
        f"## Your exercises (in `{learner.name}/`, never overwritten)",
        "",
    ]
    mine = [a for a in assignments(root) if (learner / a).is_dir()]
    for assignment in mine:
        for nb in sorted((learner / assignment).glob("*.ipynb")):
            lines.append(f"- [{assignment}]({assignment}/{nb.name})")
    if not mine:
        lines.append("- none yet: run `make lab` again once exercises are released")
    lines += [
        "",
        "## Checking your work",
        "",
        "- Run an answer, then the test cell under it (Shift-Enter): it prints one line for "
        "its part - failed, naming the kind of slip the visible checks found; visible checks "
        "pass (none of the slips they look for); or not answered yet. **Run → Run All Cells** "
        "reaches every part. After a kernel restart, run the first code cell (the numbers) "
        "first.",
        "- **Validate** in the notebook toolbar runs the whole notebook and lists failing tests.",
        "- In a terminal, `make check ASSIGNMENT=<name>` prints the same line, part by part.",
        "",
        "These are the visible checks only: a wrong answer that slips past them reads the same "
        "as a right one. An instructor's hidden tests check the values when your notebook is "
        "graded.",
        "",
        "*This page is rewritten by `make lab`; keep notes in your own files. To reopen it, "
        "right-click `START.md` → Open With → Markdown Preview.*",
        "",
    ]
    return "\n".join(lines)


def workspace(learner_rel: str) -> dict[str, object]:
    """JupyterLab's first layout: the start page rendered, the file browser in ``my-work/``."""
    start = f"{learner_rel}/START.md"
    widget = f"markdownviewer-widget:{start}"
    return {
        "data": {
            "layout-restorer:data": {
                "main": {
                    "dock": {"type": "tab-area", "currentIndex": 0, "widgets": [widget]},
                    "current": widget,
                },
                "left": {
                    "collapsed": False,
                    "visible": True,
                    "current": "filebrowser",
                    "widgets": ["filebrowser"],
                },
            },
            widget: {"data": {"path": start, "factory": "Markdown Preview"}},
            "file-browser-filebrowser:cwd": {"path": learner_rel},
        },
        "metadata": {"id": "default"},
    }


def prepare(root: Path, learner: Path) -> list[str]:
    """Copy the exercises, write the start page, seed the layout; return what was done."""
    learner.mkdir(parents=True, exist_ok=True)
    done = [copy_exercise(root, learner, a) for a in assignments(root)]
    (learner / "START.md").write_text(start_page(root, learner), encoding="utf-8")
    seed = learner / STATE / "workspaces" / WORKSPACE_FILE
    if not seed.exists():
        seed.parent.mkdir(parents=True, exist_ok=True)
        rel = learner.resolve().relative_to(root.resolve()).as_posix()
        seed.write_text(json.dumps(workspace(rel), indent=1) + "\n")
    return done


def lab_command(root: Path, learner: Path, port: int, extra: list[str]) -> list[str]:
    """The ``jupyter lab`` command line ``make lab`` runs (the browser tests run it too)."""
    command = [
        str(Path(sys.executable).parent / "jupyter-lab"),
        "--ip=127.0.0.1",
        f"--port={port}",
        "--no-browser",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.workspaces_dir={learner / STATE / 'workspaces'}",
        # The course's vendored MathJax at <server>/static/mathjax/: feedback pages and the
        # formgrader load it from there (grading/nbconvert/feedback/mathjax.html.j2).
        f"--ServerApp.extra_static_paths={ROOT / 'book' / '_vendor'}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        command.append("--allow-root")  # jupyter refuses to run as root without it
    return command + extra


def running_server(root: Path) -> str | None:
    """The URL (with its token) of a Jupyter server already serving ``root``, from the runtime
    files every server writes (``jpserver-<pid>.json``) whose process still runs; else None."""
    from jupyter_core.paths import jupyter_runtime_dir

    for info_file in sorted(Path(jupyter_runtime_dir()).glob("jpserver-*.json")):
        try:
            info = json.loads(info_file.read_text())
            serves = Path(info["root_dir"]).resolve() == root.resolve()
            os.kill(int(info["pid"]), 0)  # raises if no such process
        except (OSError, ValueError, KeyError):
            continue  # a stale file of a server that ended, or not a server's
        if serves:
            token = info.get("token", "")
            return f"{info['url'].rstrip('/')}/lab" + (f"?token={token}" if token else "")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the course folder")
    parser.add_argument("--learner-dir", default=LEARNER_DIR, help="relative to --root")
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--prepare-only", action="store_true")
    parser.add_argument("--role", choices=ROLES, default="learner")
    parser.add_argument("extra", nargs="*", help="more jupyter lab arguments (after --)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    learner = (root / args.learner_dir).resolve()
    if not learner.is_relative_to(root):
        sys.exit(f"the learner folder must be inside the course folder {root}")
    if re.search(r"(^|/)\.", learner.relative_to(root).as_posix()):
        sys.exit("the learner folder must not be hidden: JupyterLab cannot open hidden folders")
    for line in prepare(root, learner):
        print(line)
    print(f"start page: {(learner / 'START.md').relative_to(root)}")
    if args.prepare_only:
        return 0
    running = running_server(root)
    if running:  # a second make lab would start another server on the next port
        print(f"JupyterLab is already running on this course: open {running}")
        return 0
    command = lab_command(root, learner, args.port, args.extra)
    # Kernels inherit it: a lesson's exercise link opens the learner's copy (llmmath.display.pages).
    os.environ["LLMMATH_LEARNER_DIR"] = learner.relative_to(root).as_posix()
    if args.role == "learner":
        os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            p for p in (str(LEARNER_CONFIG), os.environ.get("JUPYTER_CONFIG_PATH")) if p
        )
        print("lessons open read-only; instructor tools: make lab ROLE=instructor")
    sys.stdout.flush()
    os.execv(command[0], command)


if __name__ == "__main__":
    sys.exit(main())
