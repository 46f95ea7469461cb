"""Attacks on the class hub that go around the grading kernel (issue #48): what root writes,
what the instructor's browser renders, and what opens the release gate.

- the hub's log copy, root's write to /tmp, at a name a student planted a link at;
- ``exchange/<course>`` made by a student before the instructor's first release;
- ``make hub-backup`` over a student's unix socket and FIFO, and a folder named ``static``;
- a row added to the review ledger by anything but the review command;
- on a running hub: a submission whose output and answer carry an ``onerror`` script, opened in
  the instructor's formgrader tab (Chromium); the formgrader's per-student Generate/Release
  Feedback buttons while review is open.

Each asserts the attempt is refused, neutralized or flagged. The tests that start a hub or make
OS users need root (``flock /tmp/hub.lock``, as tests/course/test_hub.py).
"""

from __future__ import annotations

import grp
import os
import socket
import stat
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest
from wait_support import ms

from llmmath_course.hub.backup import backup
from llmmath_course.hub.running import _keep_log
from llmmath_course.instructor.flags import append_reviewed, read_ledger, reviewed_path

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create OS users")


def test_the_hub_log_copy_never_follows_a_planted_link(tmp_path: Path) -> None:
    """A student plants a link at the fixed name the hub's log copy had in /tmp, pointing at a
    file only root may write (this machine has fs.protected_symlinks=0, so root follows it).
    The copy goes to a new file (mkstemp) and the link's target is untouched."""
    prefix = f"attack{os.getpid()}"
    target = tmp_path / "root-only.conf"
    target.write_text("root's own settings\n")
    target.chmod(0o600)
    planted = Path(tempfile.gettempdir()) / f"llmmath-hub-{prefix}.log"
    planted.unlink(missing_ok=True)
    planted.symlink_to(target)
    log = tmp_path / "jupyterhub.log"
    log.write_text("the hub's log\n")
    before = set(Path(tempfile.gettempdir()).glob(f"llmmath-hub-{prefix}-*.log"))
    try:
        _keep_log(log, prefix, "stopped by a test")
        assert target.read_text() == "root's own settings\n", "root wrote through the link"
        assert planted.is_symlink(), "the planted link was replaced"
        kept = set(Path(tempfile.gettempdir()).glob(f"llmmath-hub-{prefix}-*.log")) - before
        assert len(kept) == 1, kept
        copy = kept.pop()
        assert not copy.is_symlink() and stat.S_IMODE(copy.stat().st_mode) == 0o600
        assert copy.read_text() == "the hub's log\n\n[llmmath] stopped by a test\n"
        copy.unlink()
    finally:
        planted.unlink(missing_ok=True)


def test_hub_backup_skips_sockets_and_fifos_and_only_its_own_static(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A student's unix socket (and a FIFO) in their home made the backup stop half way (a FIFO
    would hang it): both are skipped with a warning and the rest is archived; a student's own
    folder named ``static`` is kept, the hub's ``<state>/static`` left out."""
    state = tmp_path / "state"
    home = state / "home" / "student"
    (state / "hub").mkdir(parents=True)
    (state / "static" / "mathjax").mkdir(parents=True)
    (state / "static" / "mathjax" / "tex-svg.js").write_text("// the hub's copy")
    (home / "project" / "static").mkdir(parents=True)
    (home / "project" / "static" / "plot.png").write_bytes(b"\x89PNG")
    (home / "work.ipynb").write_text("{}")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(home / "server.sock"))
    os.mkfifo(home / "pipe")
    archive = tmp_path / "class.tar.gz"
    try:
        names = backup(state, archive)
    finally:
        listening.close()
    warned = capsys.readouterr().err
    assert "server.sock (a socket" in warned and "pipe (a FIFO" in warned, warned
    assert "state/home/student/work.ipynb" in names
    assert "state/home/student/project/static/plot.png" in names, "a student's static/ went"
    assert not any(n.startswith("state/static") for n in names), names
    assert not any(n.endswith(("server.sock", "/pipe")) for n in names)
    with tarfile.open(archive) as tar:
        assert tar.extractfile("state/home/student/work.ipynb").read() == b"{}"  # type: ignore[union-attr]
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600


def test_a_forged_ledger_row_counts_for_nothing(tmp_path: Path) -> None:
    """Rows the review command writes are signed with the course's key (mode 600); a row
    added any other way (by hand, or by code that reached the course root), one with a changed
    field, or one copied from another assignment's ledger counts as no review and is named."""
    root = tmp_path
    genuine = ["alice", "2026-12-01 10:00:00 UTC", "tampering suspected", "t", "prof", ""]
    append_reviewed(root, "roofline", [genuine])
    ledger = reviewed_path(root, "roofline")
    assert stat.S_IMODE(ledger.stat().st_mode) == 0o600
    assert stat.S_IMODE((root / ".review-key").stat().st_mode) == 0o600
    signed = ledger.read_text().splitlines()[1]
    forged = ["bob", "2026-12-01 11:00:00 UTC", "not graded by nbgrader", "t", "prof", ""]
    changed = signed.replace("alice", "carol")
    append_reviewed(root, "kv_cache", [forged])
    copied = reviewed_path(root, "kv_cache").read_text().splitlines()[1]
    with ledger.open("a") as fh:
        fh.write("\t".join(forged) + "\n")  # what a submission's code could append
        fh.write("\t".join([*forged, "0" * 64]) + "\n")
        fh.write(changed + "\n" + copied + "\n")
    done, refused = read_ledger(root, "roofline")
    assert done == {("alice", "2026-12-01 10:00:00 UTC", "tampering suspected")}
    assert len(refused) == 4, refused
    assert sum("bob: not graded by nbgrader" in line for line in refused) == 3
    assert any("carol" in line for line in refused)


@root_only
def test_a_student_cannot_make_the_exchanges_course_folder_first(tmp_path: Path) -> None:
    """Before the first release a student made ``exchange/llmmath`` (the exchange is the class's
    to write in), which held the instructor's release out. ``make hub`` makes that folder, the
    instructor's: a student's planted one is moved aside, and the release goes through."""
    from test_hub import PYTHON, unique

    from llmmath_course.hub.accounts import RUNUSER, add_user, remove_user
    from llmmath_course.hub.environment import HUB_LIB
    from llmmath_course.hub.running import course_exchange

    prefix = unique("llmmx")
    student, instructor, group = f"{prefix}-s01", f"{prefix}-inst", f"{prefix}-class"
    base = Path(tempfile.mkdtemp(prefix="llmmath-exchange-"))
    base.chmod(0o755)
    made: list[str] = []
    try:
        subprocess.run(["groupadd", group], check=True, capture_output=True)
        for user in (student, instructor):
            add_user(user, base / user)
            made.append(user)
            subprocess.run(["usermod", "-aG", group, user], check=True, capture_output=True)
        exchange = base / "exchange"
        exchange.mkdir()
        os.chown(exchange, 0, grp.getgrnam(group).gr_gid)
        exchange.chmod(0o1770)

        def as_user(user: str, *argv: str) -> subprocess.CompletedProcess[str]:
            env = {"HOME": str(base / user), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
                   "LD_LIBRARY_PATH": str(HUB_LIB)}  # fmt: skip
            return subprocess.run(
                [RUNUSER, "-u", user, "--", *argv],
                capture_output=True,
                text=True,
                cwd=base,
                env=env,
            )

        assert as_user(student, "mkdir", str(exchange / "llmmath")).returncode == 0
        assert as_user(student, "mkdir", str(exchange / "llmmath" / "outbound")).returncode == 0
        moved = course_exchange(exchange, instructor)
        assert moved is not None and moved.parent == exchange, "the planted folder was kept"
        assert moved.lstat().st_uid == 0 and stat.S_IMODE(moved.lstat().st_mode) == 0
        course = (exchange / "llmmath").stat()
        assert course.st_uid == int(as_user(instructor, "id", "-u").stdout)
        assert stat.S_IMODE(course.st_mode) == 0o755
        # The student can no longer write into it; the instructor's release goes through.
        refused = as_user(student, "mkdir", str(exchange / "llmmath" / "outbound"))
        assert refused.returncode != 0 and "Permission denied" in refused.stderr
        release = (  # nbgrader's release, as far as the course folder: init_dest
            "from nbgrader.coursedir import CourseDirectory; "
            "from nbgrader.exchange.default.release_assignment import "
            "ExchangeReleaseAssignment as R; "
            "c = CourseDirectory(course_id='llmmath', assignment_id='a'); "
            f"r = R(coursedir=c); r.root = {str(exchange)!r}; r.init_dest(); print('released')"
        )
        done = as_user(instructor, PYTHON, "-c", release)
        assert "released" in done.stdout, done.stdout + done.stderr
        assert course_exchange(exchange, instructor) is None, "the instructor's was moved"
    finally:
        for user in made:
            remove_user(user)
        subprocess.run(["groupdel", group], capture_output=True)
        subprocess.run(["rm", "-rf", str(base)], capture_output=True)


# ---- on a running hub: the instructor's browser and the formgrader's buttons -------------------
# What a submission's output and Markdown answer carry: an image that fails to load and, in its
# onerror, writes a file into the course root through the formgrader server's contents API
# (with the page's own XSRF cookie), as the attack in #48 did; and marks the page.
STEAL = (
    "var b=location.pathname.slice(0,location.pathname.lastIndexOf('/formgrader/'));"
    "var x=(document.cookie.match(/_xsrf=([^;]+)/)||[])[1];"
    "fetch(b+'/api/contents/pwned-{where}.txt',{{method:'PUT',headers:{{'X-XSRFToken':x,"
    "'Content-Type':'application/json'}},body:JSON.stringify({{type:'file',format:'text',"
    "content:'owned'}})}});window.__pwned='{where}'"
)


def attack_html(where: str) -> str:
    return f'<img src="/nowhere-{where}.png" onerror="{STEAL.format(where=where)}">'


@pytest.fixture(scope="module")
def attacked_class() -> Any:
    """A hub with two students: the attacker submits the roofline notebook with the payload in
    an HTML output and in their reflection, the other an honest one; the instructor grades."""
    import secrets
    from contextlib import ExitStack

    import nbformat
    from test_hub import (
        ASSIGNMENT,
        NOTEBOOK,
        PYTHON,
        SPEC,
        Api,
        answered,
        free_port_block,
        release,
        unique,
    )

    from llmmath_course.hub.running import running_hub

    if os.geteuid() != 0:
        pytest.skip("needs root to create OS users")
    token = secrets.token_hex(16)
    with ExitStack() as stack:
        hub = stack.enter_context(
            running_hub(2, free_port_block(), prefix=unique("llmma"), admin_token=token)
        )
        api = Api(hub, token)
        release(hub)
        attacker = hub.students[0]
        for user in hub.students:
            api.start_server(user)
        api.wait_ready(hub.students)
        api.wait_serving(hub.students)
        for user in hub.students:
            api.nbgrader(user, "fetch")
            nb = answered(hub, wrong=False)
            if user == attacker:
                for cell in nb.cells:
                    meta = cell.metadata.get("nbgrader", {})
                    if cell.cell_type == "code" and meta.get("solution"):
                        cell.source += (
                            "\nfrom IPython.display import HTML, display\n"
                            f"display(HTML({attack_html('output')!r}))\n"
                        )
                        break
                for cell in nb.cells:
                    if cell.metadata.get("nbgrader", {}).get("grade_id") in SPEC.manual_cells:
                        cell.source += "\n\n" + attack_html("answer")
            api.save(user, f"{ASSIGNMENT}/{NOTEBOOK}.ipynb", nb)
            api.nbgrader(user, "submit")
        log = hub.as_user(hub.instructor, PYTHON, "scripts/instructor.py", "grade", ASSIGNMENT,
                          "--jobs", "2", cwd=hub.course)  # fmt: skip
        assert "autograded 2 of 2" in log, log
        graded = nbformat.read(
            hub.course / "autograded" / attacker / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4
        )
        shown = nbformat.writes(graded)
        assert "pwned-output" in shown and "pwned-answer" in shown, "the payload was not graded"
        # The sandboxed kernels import llmmath (the setting cells) from the course copy.
        honest = hub.course / "autograded" / hub.students[1] / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
        ids = {c.metadata.get("nbgrader", {}).get("grade_id", ""): c
               for c in nbformat.read(honest, as_version=4).cells}  # fmt: skip
        settings = {i: c for i, c in ids.items() if i.startswith("setting_")}
        assert settings, "the roofline exercise prints no setting line"
        failed = {
            i: c.outputs for i, c in settings.items()
            if any(o.get("output_type") == "error" for o in c.get("outputs", []))
        }  # fmt: skip
        assert not failed, failed
        yield hub, api


def formgrader_submission(page: Any, hub: Any, student: str) -> Any:
    """Open ``student``'s roofline notebook in the formgrader, by its links, as a grader does;
    the main document's response."""
    from test_hub import ASSIGNMENT

    base = f"{hub.url}/services/formgrader/formgrader"
    page.goto(f"{base}/manage_students/{student}/{ASSIGNMENT}")
    link = page.locator("a[href*='/formgrader/submissions/']").first
    link.wait_for(timeout=ms(120))
    with page.expect_response(lambda r: "/formgrader/submissions/" in r.url and r.ok) as answer:
        link.click()
    # Loaded: every image has loaded or failed, so any onerror has had its turn. (Not
    # wait_for_function: Playwright evaluates its string with eval, which the page refuses.)
    page.wait_for_load_state("load", timeout=ms(120))
    return answer.value


@pytest.mark.slow
@pytest.mark.browser
def test_a_submissions_script_never_runs_in_the_formgrader_tab(attacked_class: Any) -> None:
    """The attacker's HTML output and Markdown answer each carry an onerror script that writes
    into the course root through the formgrader's contents API (it ran, in #48). In the
    instructor's formgrader tab (Chromium): the markup is sanitized away, the page's response
    carries a nonce-only script policy, nbgrader's own scripts still run, an inline handler put
    into the page is refused by the policy, and no file is written."""
    from site_support import chromium
    from test_hub import login

    hub, _ = attacked_class
    attacker = hub.students[0]
    with chromium() as browser:
        page = login(browser, hub, hub.instructor)
        response = formgrader_submission(page, hub, attacker)
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'nonce-" in policy and "'unsafe-inline'" not in policy, policy
        page.locator("input.score").first.wait_for(timeout=ms(120))  # the page's scripts ran
        assert page.evaluate("typeof submission_id") == "string", "nbgrader's inline script"
        # nbgrader's inline onclick (show the student's name), allowed by its hash.
        page.locator("span.glyphicon-eye-open.name-hidden").click()
        page.locator("span.glyphicon-eye-close.name-shown").wait_for(timeout=ms(60))
        assert page.evaluate("window.__pwned === undefined"), page.evaluate("window.__pwned")
        assert page.locator("[onerror]").count() == 0, "the payload's markup reached the page"
        assert "pwned-output" in page.content() or "pwned-answer" in page.content(), (
            "the payload is not shown as text: was it dropped unseen?"
        )
        # The policy alone: an inline handler placed in the page (as a payload past the
        # sanitizer would be) is refused, reported as a violation, and never runs.
        outcome = page.evaluate(
            """() => new Promise(done => {
                document.addEventListener('securitypolicyviolation', () => done('refused'));
                document.addEventListener('llmmath-ran', () => done('ran'));
                const img = document.createElement('img');
                img.setAttribute('onerror', "document.dispatchEvent(new Event('llmmath-ran'))");
                img.src = '/nowhere.png';
                document.body.append(img);
            })"""
        )
        assert outcome == "refused", outcome
        page.close()
    written = sorted(p.name for p in hub.course.glob("pwned-*"))
    assert not written, f"the submission's script wrote into the course root: {written}"


@pytest.mark.slow
@pytest.mark.browser
def test_the_formgraders_feedback_buttons_obey_the_release_gate(attacked_class: Any) -> None:
    """Review is open (the reflections wait for hand grading): the formgrader's per-student
    Generate Feedback and Release Feedback buttons, clicked by the instructor, are refused with
    the gate's message, release nothing, and are logged; so are the per-assignment ones. Once
    review is done, the per-student buttons work, logged."""
    from site_support import chromium
    from test_hub import ASSIGNMENT, COURSE, login

    hub, _ = attacked_class
    student = hub.students[1]
    base = f"{hub.url}/services/formgrader/formgrader"
    with chromium() as browser:
        page = login(browser, hub, hub.instructor)
        page.goto(f"{base}/manage_submissions/{ASSIGNMENT}")
        row = page.locator(f"tr:has(td.student-id:text-is('{student}'))")
        for button in ("generate-feedback", "release-feedback"):
            row.locator(f"td.{button} a").wait_for(timeout=ms(120))
            row.locator(f"td.{button} a").click()
            modal = page.locator("#error-modal")
            modal.wait_for(timeout=ms(120))
            text = modal.inner_text()
            assert "refused: review is not done" in text, text
            assert f"to grade by hand: {student}" in text, text
            modal.locator("button").first.click()
            modal.wait_for(state="detached", timeout=ms(60))
        # The per-assignment buttons (Manage Assignments) go through the same gate.
        for action in ("generate_feedback", "release_feedback"):
            answer = page.evaluate(
                """async url => {
                    const x = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1];
                    const r = await fetch(url, {method: 'POST', headers: {'X-XSRFToken': x}});
                    return await r.text();
                }""",
                f"{base}/api/assignment/{ASSIGNMENT}/{action}",
            )
            assert '"success": false' in answer and "review is not done" in answer, answer
        assert not list((hub.course / "feedback").glob(f"*/{ASSIGNMENT}")), "feedback generated"
        released = hub.exchange / COURSE / "feedback"
        assert not released.exists() or not any(released.iterdir()), "feedback was released"
        # Review done (each reflection scored by hand, each flag reviewed): the same buttons
        # go through, and are logged too.
        finish_review(hub)
        page.reload()
        for button, done in (("generate-feedback", "generated"), ("release-feedback", "released")):
            row.locator(f"td.{button} a").wait_for(timeout=ms(120))
            row.locator(f"td.{button} a").click()
            modal = page.locator("#success-modal")
            modal.wait_for(timeout=ms(120))
            assert f"Successfully {done} feedback" in modal.inner_text(), modal.inner_text()
            modal.locator("button").first.click()
            modal.wait_for(state="detached", timeout=ms(60))
        page.close()
    assert released.is_dir() and any(released.iterdir()), "the released feedback is missing"
    log = (hub.course / "feedback" / f".releases-{ASSIGNMENT}.log").read_text()
    for line in (
        f"REFUSED formgrader generate feedback for {student}",
        f"REFUSED formgrader release feedback for {student}",
        "REFUSED formgrader generate feedback for every student",
        "REFUSED formgrader release feedback for every student",
        f"formgrader generate feedback for {student}: review done",
        f"formgrader release feedback for {student}: review done",
    ):
        assert line in log, log


def finish_review(hub: Any) -> None:
    """As the instructor: every hand-graded cell scored (as the formgrader saves a score), then
    every open flag reviewed (instructor.py review)."""
    from test_hub import ASSIGNMENT, COURSE, NOTEBOOK, PYTHON, SPEC

    score = (
        "from nbgrader.api import Gradebook\n"
        f"with Gradebook('sqlite:///{hub.course / 'gradebook.db'}', {COURSE!r}) as gb:\n"
        f"    for student in {hub.students!r}:\n"
        f"        for cell in {list(SPEC.manual_cells)!r}:\n"
        f"            grade = gb.find_grade(cell, {NOTEBOOK!r}, {ASSIGNMENT!r}, student)\n"
        "            grade.manual_score = 0\n"
        "            grade.needs_manual_grade = False\n"
        "    gb.db.commit()\n"
    )
    hub.as_user(hub.instructor, PYTHON, "-c", score, cwd=hub.course)
    review = [PYTHON, "scripts/instructor.py", "review", ASSIGNMENT]
    listed = hub.as_user(hub.instructor, *review, cwd=hub.course)
    flagged = sorted({line.split()[1].rstrip(":") for line in listed.splitlines()
                      if line.startswith("OPEN")})  # fmt: skip
    if flagged:
        hub.as_user(hub.instructor, *review, *flagged, cwd=hub.course)


def test_the_instructors_grading_kernels_get_cgroups_of_their_own(attacked_class: Any) -> None:
    """On the hub the instructor grades as themself, not root: the hub hands them a memory
    cgroup folder of their own to grade in (LLMMATH_GRADING_CGROUP, in the formgrader's
    environment and in their terminal's), a sibling of their server's. A kernel jailed there
    by the course's sandbox gets a cgroup of its own: 1 GiB asked of a 256 MiB jail is killed
    in it and named, their server untouched, and the cgroup is gone after."""
    from test_hub import PYTHON

    from llmmath_course.hub.accounts import processes_of
    from llmmath_course.hub.running import GRADING_CGROUPS

    hub, _ = attacked_class
    if (Path("/sys/fs/cgroup") / "cgroup.controllers").exists():
        pytest.skip("cgroup v2: no delegated grading cgroup (the guide says what stands in)")
    delegated = GRADING_CGROUPS / f"grading-{hub.instructor}"
    assert delegated.stat().st_uid == hub.home(hub.instructor).stat().st_uid, "not theirs"
    environments = [
        (proc / "environ").read_bytes().split(b"\0")
        for proc in processes_of([hub.instructor])
        if b"jupyterhub-singleuser" in (proc / "cmdline").read_bytes()
    ]
    assert environments, "no formgrader or server of the instructor's is running"
    for environ in environments:
        assert f"LLMMATH_GRADING_CGROUP={delegated}".encode() in environ
    jailed = (
        "import subprocess, sys\n"
        "sys.path.insert(0, 'scripts')  # the course tooling beside instructor.py\n"
        "from llmmath_course.instructor.sandbox import Jail, Limits\n"
        "jail = Jail(Limits(memory_bytes=256 << 20))\n"
        "print('CGROUPS', *jail.cgroups)\n"
        "eat = [sys.executable, '-c', 'x = bytearray(1 << 30)']\n"
        "done = subprocess.run(jail.command(eat), capture_output=True)\n"
        "print('RC', done.returncode, 'OOM', jail.out_of_memory())\n"
        "jail.close()\n"
        "print('LEFT', *[p for p in jail.cgroups if p.exists()])\n"
    )
    said = hub.as_user(hub.instructor, PYTHON, "-c", jailed, cwd=hub.course)
    lines = {line.split()[0]: line.split()[1:] for line in said.splitlines() if line.strip()}
    assert len(lines["CGROUPS"]) == 1, said
    assert Path(lines["CGROUPS"][0]).parent == delegated, said
    assert lines["RC"] == ["137", "OOM", "True"], said
    assert lines["LEFT"] == [], said


def test_the_hubs_bounds_refuse_what_is_no_size() -> None:
    """make hub's caps fail at once, naming the setting (issue #48: writes outside a student's
    home are bounded; the caps themselves are attacked in tests/course/test_hub_bounds.py)."""
    from llmmath_course.hub.exchange import size_bytes
    from llmmath_course.hub.running import Bounds

    assert size_bytes("256M", "--tmp-size") == 256 * 2**20
    assert size_bytes("2g", "--exchange-size") == 2 * 2**30
    with pytest.raises(ValueError, match="--tmp-size must be a size"):
        Bounds(tmp_size="lots").check()
    with pytest.raises(ValueError, match=r"--exchange-reserve .* must be less than"):
        Bounds(exchange_size="1G", exchange_reserve="1G").check()
    Bounds(exchange_size="0", exchange_reserve="256M").check()  # 0: no filesystem, no reserve
