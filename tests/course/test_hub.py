"""The class on a real JupyterHub: one OS user per student, the formgrader as a hub service.

Runs as root (as CI does): scripts/hub.py creates throwaway users, starts JupyterHub 6 with its
npm proxy, PAM logins and the local-process spawner (each student's server runs as that student,
in a memory cgroup of its own), and on teardown stops the hub and every server and removes the
users, whatever happened.

- The class: in chromium, students log in and see nbgrader's Assignments tab and no grader
  tool; the instructor releases; each student clicks Fetch, opens the notebook from the tab,
  types the answers, saves and clicks Submit; the instructor collects and autogrades
  (scripts/instructor.py grade, as the instructor's OS user), opens the submission in the
  formgrader service by clicks and types a reflection's score, and releases feedback; each
  student clicks Fetch Feedback, and no student can read another's work or the sources.
- A restart: a class kept in a state folder is stopped and started again, and its gradebook,
  accounts and logins are as they were; its backup holds the same gradebook.
- Load: thirty students' servers started and thirty submissions made at once, through the
  endpoints the tab's buttons call; nothing lost, every submission graded once, and the time
  it took is printed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import csv
import grp
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import nbformat
import pytest
from grading_support import ROOT, generate_assignment, load_specs, submission_from_release
from port_support import free_port_block
from wait_support import in_page, ms, seconds, wait_until

from llmmath_course.hub.accounts import RUNUSER, add_user, processes_of, remove_user
from llmmath_course.hub.backup import backup
from llmmath_course.hub.configs import FORMGRADER_URL
from llmmath_course.hub.environment import HUB_ENV, HUB_LIB, env_version, in_use, prune
from llmmath_course.hub.running import Hub, running_hub

SPEC = {spec.assignment: spec for spec in load_specs()}["roofline"]
ASSIGNMENT, NOTEBOOK, COURSE = SPEC.assignment, SPEC.notebook_id, "llmmath"
PYTHON = str(HUB_ENV / "bin" / "python")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0, reason="needs root to create OS users (CI runs make test as root)"
    ),
]


def unique(prefix: str) -> str:
    """OS user names of this run only: two test runs on one machine must not share users."""
    return f"{prefix}{secrets.token_hex(2)}"


class Api:
    """The hub's REST API and the students' servers, with the test's service token."""

    def __init__(self, hub: Hub, token: str) -> None:
        self.hub, self.token = hub, token

    def call(self, method: str, path: str, body: Any = None, timeout: float = 300) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.hub.url}{path}", data=data, method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=seconds(timeout)) as response:
            text = response.read().decode()
        return json.loads(text) if text.strip() else None

    def start_server(self, user: str) -> None:
        try:
            self.call("POST", f"/hub/api/users/{user}/server")
        except urllib.error.HTTPError as error:
            if error.code != 400:  # 400: already running
                raise

    def wait_ready(self, users: list[str], timeout: float = 300) -> None:
        timeout = seconds(timeout)
        deadline = time.monotonic() + timeout
        waiting = set(users)
        while waiting and time.monotonic() < deadline:
            # One request a second for the class, not one per student: the hub is busy spawning.
            for model in self.call("GET", "/hub/api/users"):
                if (model.get("servers", {}).get("", {}) or {}).get("ready"):
                    waiting.discard(model["name"])
            time.sleep(1)
        assert not waiting, f"servers not ready after {timeout} s: {sorted(waiting)}"

    def wait_serving(self, users: list[str], timeout: float = 120) -> None:
        """Each student's own server answers its Assignments list (nbgrader's handler, under
        /user/<name>/). The hub's "ready" means only that something answered at the server's
        URL: the wrong server (a port handed out twice) or none would fail here, named."""
        timeout = seconds(timeout)
        deadline = time.monotonic() + timeout
        for user in users:
            while True:
                try:
                    self.call("GET", f"/user/{user}/assignments?course_id={COURSE}", timeout=30)
                    break
                except urllib.error.HTTPError as error:
                    answer = f"HTTP {error.code}"
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"{user}'s server is ready per the hub, but /user/{user}/assignments "
                        f"answered {answer} for {timeout} s. The hub's log on {user}:\n"
                        + "\n".join(self.log_about(user)[-20:])
                    )
                time.sleep(1)

    def log_about(self, user: str) -> list[str]:
        """The hub's lines on a user's server (not this test's polling) and on ports in use."""
        return [
            line
            for line in self.hub.log.read_text().splitlines()
            if (user in line and "/assignments" not in line and "on behalf of" not in line)
            or "already in use" in line
        ]

    def nbgrader(self, user: str, action: str) -> Any:
        """What the Assignments tab's buttons do: fetch, submit, fetch_feedback."""
        body = {"course_id": COURSE, "assignment_id": ASSIGNMENT}
        return self.call("POST", f"/user/{user}/assignments/{action}", body)

    def save(self, user: str, path: str, nb: Any) -> None:
        """Save a notebook into the student's home through their own server."""
        model = {"type": "notebook", "format": "json", "content": json.loads(nbformat.writes(nb))}
        self.call("PUT", f"/user/{user}/api/contents/{path}", model)

    def read(self, user: str, path: str) -> Any:
        return self.call("GET", f"/user/{user}/api/contents/{path}")


@pytest.fixture(scope="module")
def class_hub() -> Iterator[tuple[Hub, Api]]:
    token = secrets.token_hex(16)
    with ExitStack() as stack:
        # Started as a script's background job starts it: with SIGINT ignored, which every
        # process inherits unless the hub resets it (see test_a_class_on_the_hub).
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            # The students' Labs expose window.jupyterapp (hub/jupyterhub_config.py), for the
            # launch test's read of the notebook's unsaved-changes flag.
            with pytest.MonkeyPatch.context() as started_with:
                started_with.setenv("LLMMATH_HUB_EXPOSE_APP", "1")
                hub = stack.enter_context(
                    running_hub(
                        3,
                        free_port_block(),
                        prefix=unique("llmmt"),
                        admin_token=token,
                        start_timeout_s=seconds(60),
                    )
                )
        finally:
            signal.signal(signal.SIGINT, previous)
        yield hub, Api(hub, token)


def servers_ignoring_sigint(hub: Hub) -> tuple[int, list[str]]:
    """How many servers the hub runs for its users (the formgrader service too), and those
    that ignore SIGINT, which JupyterHub sends first to stop one (then waits 30 s)."""
    servers, ignoring = 0, []
    for proc in processes_of(hub.users):
        try:
            if b"jupyterhub-singleuser" not in (proc / "cmdline").read_bytes():
                continue
            status = (proc / "status").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        servers += 1
        found = re.search(r"^SigIgn:\s*([0-9a-f]+)$", status, re.M)
        if found and int(found.group(1), 16) & (1 << (signal.SIGINT - 1)):
            ignoring.append(proc.name)
    return servers, ignoring


def release(hub: Hub) -> None:
    hub.as_user(hub.instructor, PYTHON, "-m", "nbgrader", "generate_assignment", ASSIGNMENT,
                "--force", cwd=hub.course)  # fmt: skip
    hub.as_user(hub.instructor, PYTHON, "-m", "nbgrader", "release_assignment", ASSIGNMENT,
                cwd=hub.course)  # fmt: skip


def answered(hub: Hub, wrong: bool) -> Any:
    release_nb = hub.course / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    nb = submission_from_release(release_nb, SPEC.source_nb, SPEC.wrong_answers if wrong else {})
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") in SPEC.manual_cells:
            cell.source = "Each step reads every weight once; more FLOP/s does not help."
    return nb


BUILD_CHECKS: list[str] = []  # requests for JupyterLab's build status, from any page of `login`


def login(browser: Any, hub: Hub, user: str, ready: str = ".jp-LauncherCard") -> Any:
    """Log ``user`` in through the hub's form; their JupyterLab, once ``ready`` shows (a
    student's second visit restores their layout, which may hold no Launcher)."""
    page = browser.new_page()
    # A course server offers no JupyterLab build (src/llmmath_course/hub/configs.py NO_BUILD):
    # each status check ran `node yarn.js config` and reread every extension on the server.
    page.on("request", lambda r: BUILD_CHECKS.append(r.url) if "/lab/api/build" in r.url else None)
    page.goto(f"{hub.url}/hub/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", hub.passwords[user])
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url(f"**/user/{user}/lab**", timeout=ms(180))
    page.wait_for_selector(ready, timeout=ms(180))
    return page


def menu_items(page: Any, menu: str) -> list[str]:
    page.click(f".lm-MenuBar-itemLabel:text-is('{menu}')")
    page.wait_for_selector(".lm-Menu-itemLabel", timeout=ms(30))
    labels = [t.strip() for t in page.locator(".lm-Menu .lm-Menu-itemLabel").all_inner_texts()]
    page.keyboard.press("Escape")
    return labels


@pytest.mark.browser
def test_a_class_on_the_hub(class_hub: tuple[Hub, Api], tmp_path: Path) -> None:
    from site_support import chromium

    hub, api = class_hub
    release(hub)
    students = hub.students
    with chromium() as browser:
        # Each student logs in; the hub starts their server as their own OS user.
        pages = {user: login(browser, hub, user) for user in students}
        for page in pages.values():
            labels = menu_items(page, "Nbgrader")
            assert "Assignment List" in labels, labels
            assert not {"Formgrader", "Course List"} & set(labels), labels
        # Nor do their servers load them, or jupyter_lsp (scripts/hub.py: STUDENT_SERVER).
        for path in ("formgrader", "lsp/status"):
            with pytest.raises(urllib.error.HTTPError, match="404"):
                api.call("GET", f"/user/{students[0]}/{path}")
        # Every server stops when the hub asks (hub/jupyterhub_config.py resets SIGINT).
        servers, ignoring = servers_ignoring_sigint(hub)
        assert servers == len(students) + 1, f"{servers} servers for 3 students and the formgrader"
        assert not ignoring, f"servers that ignore SIGINT (pids): {ignoring}"
        # Fetch, answer and submit, all by clicking and typing in JupyterLab.
        for i, (user, page) in enumerate(pages.items()):
            open_assignments(page)
            click_in_list(page, "released", "Fetch")
            page.wait_for_selector(f"{row('fetched')} button:text-is('Submit')", timeout=ms(120))
            answer_in_lab(page, answered(hub, wrong=i == 1), tmp_path / f"{user}-answered.png")
            if i == 0:
                validate_without_success(page, tmp_path / "student-validate.png")
            page.click(".lm-TabBar-tab:has-text('Assignments')")
            click_in_list(page, "fetched", "Submit")
            page.wait_for_selector(
                f"{row('submitted')} button:text-is('Fetch Feedback')", timeout=ms(120)
            )
        pages[students[0]].screenshot(path=str(tmp_path / "student-submitted.png"))
        owner = {p.name: p.stat().st_uid for p in (hub.exchange / COURSE / "inbound").iterdir()}
        assert len(owner) == len(students), "one submission each"
        copies = sorted(hub.exchange.rglob(".ipynb_checkpoints"))
        assert not copies, f"submissions carry checkpoint copies: {copies}"
        # Fetch Feedback before any is released says so (it did nothing visible).
        early = pages[students[0]]
        click_in_list(early, "submitted", "Fetch Feedback")
        early.wait_for_selector(f"text=No feedback for {ASSIGNMENT} yet", timeout=ms(120))
        early.screenshot(path=str(tmp_path / "student-no-feedback-yet.png"))
        early.click("#refresh_assignments_list")
        early.wait_for_selector(f"{row('submitted')} button:text-is('Fetch Feedback')")
        # The instructor collects and grades, as the instructor's OS user, in the course root.
        log = hub.as_user(hub.instructor, PYTHON, "scripts/instructor.py", "grade", ASSIGNMENT,
                          "--jobs", "2", cwd=hub.course)  # fmt: skip
        assert f"autograded {len(students)} of {len(students)}" in log, log
        copies = sorted((hub.course / "submitted").rglob(".ipynb_checkpoints"))
        assert not copies, f"collected submissions carry checkpoint copies: {copies}"
        # A reflection scored through the formgrader service, in the instructor's browser.
        grader = login(browser, hub, hub.instructor)
        formgrader_from_the_menu(grader, hub, tmp_path)
        score_reflection_in_formgrader(grader, hub, students[0], 2.0)
        grader.screenshot(path=str(tmp_path / "formgrader.png"))
        # One reflection of three is scored: released with --force (the others count 0).
        hub.as_user(hub.instructor, PYTHON, "scripts/instructor.py", "release-feedback",
                    ASSIGNMENT, "--force", cwd=hub.course)  # fmt: skip
        # Each student fetches their feedback from the same tab.
        for page in pages.values():
            page.click("#refresh_assignments_list")
            page.wait_for_selector(
                f"{row('submitted')}:has-text('feedback available to fetch')", timeout=ms(120)
            )
            click_in_list(page, "submitted", "Fetch Feedback")
            page.wait_for_selector(f"{row('submitted')}:has-text('view feedback')", timeout=ms(120))
        pages[students[0]].screenshot(path=str(tmp_path / "student-feedback.png"))
        assert not BUILD_CHECKS, f"a Lab on the hub asked for its build status: {BUILD_CHECKS}"
        # A student opens their feedback from their server: its maths is typeset by the hub's
        # MathJax (it was raw TeX: the script sat in the instructor's private home).
        user, page = students[1], pages[students[1]]
        fetched = next((hub.home(user) / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html"))
        where = urllib.parse.quote(fetched.relative_to(hub.home(user)).as_posix())
        page.goto(f"{hub.url}/user/{user}/files/{where}")
        page.wait_for_selector("mjx-container svg", timeout=ms(60))
        assert page.locator("mjx-container").count() > 10, "the feedback's maths is not typeset"
        page.screenshot(path=str(tmp_path / "student-feedback-maths.png"))
        print(f"\nafter the exercise: {memory_per_student(hub)}")
        for page in pages.values():
            page.close()
        grader.close()
    scores = {}
    for user in students:
        feedback = list((hub.home(user) / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html"))
        assert len(feedback) == 1, (user, feedback)
        scores[user] = feedback[0].read_text(encoding="utf-8")
    # What each typed is what was graded: the right answers, the wrong ones, hand points.
    full, total = SPEC.autograded_points, SPEC.autograded_points + SPEC.manual_points
    assert f"Score: {full + 2.0} / {total}" in scores[students[0]]
    assert f"Score: {SPEC.wrong_score} / {total}" in scores[students[1]]
    assert f"Score: {full} / {total}" in scores[students[2]]
    assert_isolated(hub, api)
    shutil.copy(hub.log, tmp_path / "hub.log")  # kept by pytest, for a look
    lines = hub.log.read_text(errors="replace").splitlines()
    warnings = [line for line in lines if re.match(r"\[W |\[WARNING|WARNING", line)]
    print(f"hub log: {len(lines)} lines, {len(warnings)} warnings")
    for kind, count in Counter(re.sub(r"^\[W [^]]*\] ", "", w)[:70] for w in warnings).items():
        print(f"  {count} x {kind}")


def memory_per_student(hub: Hub) -> str:
    """Each student's processes (server, kernels, terminals): their proportional set size (PSS:
    shared pages split between the processes that share them), summed per student."""
    shown = []
    for user in hub.students:
        pss = rss = count = 0
        for proc in processes_of([user]):
            try:
                rollup = (proc / "smaps_rollup").read_text()
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
            count += 1
            for name, found in re.findall(r"^(Pss|Rss):\s+(\d+) kB", rollup, re.M):
                pss, rss = (pss + int(found), rss) if name == "Pss" else (pss, rss + int(found))
        shown.append(f"{user}: {pss / 1024:.0f} MB PSS ({rss / 1024:.0f} MB RSS) in {count}")
    return "; ".join(shown) + " processes each (server and kernels)"


def formgrader_from_the_menu(page: Any, hub: Hub, tmp_path: Path) -> None:
    """In the formgrader service's Lab: nbgrader's own Formgrader item (an iframe, which the
    hub's servers refuse to be framed in: "refused to connect") is gone, and the Formgrader menu
    opens the formgrader in a browser tab of its own. No Jupyter news prompt either."""
    page.goto(f"{hub.url}/services/formgrader/lab")
    page.wait_for_selector(".jp-LauncherCard", timeout=ms(180))
    config = json.loads(page.locator("#jupyter-config-data").text_content() or "{}")
    assert config["news"]["disabled"], "JupyterLab would fetch Jupyter news"
    assert "Formgrader" not in menu_items(page, "Nbgrader")
    with page.expect_popup() as opened:
        page.click(".lm-MenuBar-itemLabel:text-is('Formgrader')")
        page.click(".lm-Menu-itemLabel:text-is('Open the Formgrader (new browser tab)')")
    tab = opened.value
    tab.wait_for_selector("text=Manage Assignments", timeout=ms(120))
    assert tab.url.startswith(f"{hub.url}{FORMGRADER_URL}"), tab.url
    tab.screenshot(path=str(tmp_path / "formgrader-tab.png"))
    tab.close()
    assert page.locator(".jp-Notification-Toast:has-text('news')").count() == 0


def row(section: str) -> str:
    """The assignment's row in one list of the Assignments tab (released, fetched, submitted)."""
    return f"#{section}_assignments_list .list_item:has-text('{ASSIGNMENT}')"


def open_assignments(page: Any) -> None:
    page.click(".lm-MenuBar-itemLabel:text-is('Nbgrader')")
    page.click(".lm-Menu-itemLabel:text-is('Assignment List')")
    page.wait_for_selector(f"{row('released')}, {row('fetched')}", timeout=ms(120))


def click_in_list(page: Any, section: str, button: str) -> None:
    page.locator(f"{row(section)} button:text-is('{button}')").first.click()


def answer_in_lab(page: Any, answers: Any, screenshot: Path) -> None:
    """Open the fetched notebook from the Assignments tab, type each answer into its cell as a
    student would, and save with Ctrl+S."""
    fetched = "#fetched_assignments_list"
    page.click(f"{fetched} .assignment-notebooks-link")
    page.click(f"{fetched} .assignment-notebooks a:text-is('{NOTEBOOK}')")
    cells = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell")
    wait_until(  # Lab renders a notebook's cells a few at a time
        lambda: cells.count() >= len(answers.cells),
        f"the opened notebook's {len(answers.cells)} cells",
        120,
        seen=lambda: f"{cells.count()} cells",
        every=0.5,
        pause=in_page(page),
    )
    assert cells.count() == len(answers.cells), "the notebook the student opened"
    for index, cell in enumerate(answers.cells):
        if not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        target = cells.nth(index)
        target.scroll_into_view_if_needed()
        if cell.cell_type == "markdown":
            target.dblclick()  # a rendered answer cell opens its editor on a double click
        editor = target.locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(cell.source)
    page.keyboard.press("Escape")
    page.keyboard.press("Control+S")
    page.wait_for_selector(".lm-TabBar-tab.jp-mod-dirty", state="detached", timeout=ms(60))
    page.screenshot(path=str(screenshot))


def validate_without_success(page: Any, screenshot: Path) -> None:
    """#36: every answer right, Validate says no visible check fails and that the hidden tests
    grade the values - the learner's Lab extension, loaded on the hub as by `make lab` - never
    nbgrader's "Success! Your notebook passes all the tests."."""
    panel = page.locator(".jp-NotebookPanel:visible")
    panel.locator(".jp-Toolbar").get_by_text("Validate", exact=True).click()
    message = page.locator(".jp-Dialog #validation-message")
    message.wait_for(timeout=ms(180))
    page.screenshot(path=str(screenshot))
    text = page.locator(".jp-Dialog").inner_text()
    assert "Success" not in text and "passes all the tests" not in text, f"Validate: {text}"
    assert "No visible check fails." in text, f"Validate: {text}"
    page.locator(".jp-Dialog button").last.click()
    page.locator(".jp-Dialog").wait_for(state="detached")


def score_reflection_in_formgrader(page: Any, hub: Hub, student: str, score: float) -> None:
    """As a grader does: Manage Students, the student, the assignment, the notebook; type the
    score into the reflection's field. The formgrader's API only confirms it was saved."""
    base = f"{hub.url}/services/formgrader"
    page.goto(f"{base}/formgrader/manage_students")
    page.click(f"a[href$='/formgrader/manage_students/{student}']", timeout=ms(120))
    page.click(f"a[href$='/manage_students/{student}/{ASSIGNMENT}']", timeout=ms(120))
    page.click("a[href*='/formgrader/submissions/']", timeout=ms(120))
    page.wait_for_url("**/formgrader/submissions/**", timeout=ms(120))
    reflection = SPEC.manual_cells[0]
    field = page.locator(f"input.score#{reflection}")
    field.wait_for(timeout=ms(120))
    submission = urllib.parse.urlparse(page.url).path.rstrip("/").rsplit("/", 1)[-1]
    grades = page.request.get(f"{base}/formgrader/api/grades?submission_id={submission}").json()
    grade = next(g for g in grades if g["name"] == reflection)
    # The field saves on its change event once the page's formgrader.js has fetched the grades
    # and bound a GradeUI to each cell (at window load, then an AJAX fetch; grades.loaded is set
    # right after): binding writes the stored score into the field, so a score typed before it
    # is overwritten and never saved. (formgrader.loaded is never set here: init stops at its
    # MathJax 2 hook, MathJax.Hub, which the course's vendored MathJax 3 does not have.)
    page.wait_for_function("() => window.formgrader?.grades?.loaded === true", timeout=ms(120))
    grade_url = f"{base}/formgrader/api/grade/{grade['id']}"
    grade_path = urllib.parse.urlparse(grade_url).path
    with page.expect_response(
        lambda r: r.request.method == "PUT" and urllib.parse.urlparse(r.url).path == grade_path,
        timeout=ms(60),
    ) as saving:
        field.fill(f"{score:g}")
        field.press("Tab")  # the formgrader saves a score when its field loses focus
    assert saving.value.ok, f"the formgrader's save answered {saving.value.status}"
    saved = page.request.get(grade_url).json()
    assert saved["manual_score"] == score, f"the formgrader did not save the score: {saved}"


def assert_isolated(hub: Hub, api: Api) -> None:
    """No student reads another's home, another's submission, or the instructor's sources."""
    first, second = hub.students[:2]
    cannot = [
        hub.home(second) / ASSIGNMENT / f"{NOTEBOOK}.ipynb",
        hub.course / "solutions" / ASSIGNMENT / f"{NOTEBOOK}.ipynb",
        hub.course / "gradebook.db",
        hub.state / "hub" / "jupyterhub.log",  # the hub's log and database: root's alone
        hub.state / "hub" / "jupyterhub.sqlite",
    ]
    for path in cannot:
        with pytest.raises(RuntimeError, match="Permission denied"):
            hub.as_user(first, "cat", str(path))
    with pytest.raises(RuntimeError, match="Permission denied"):
        hub.as_user(first, "ls", str(hub.exchange / COURSE / "inbound"))
    # Through the student's own server: its files are the student's home, nothing else.
    with pytest.raises(urllib.error.HTTPError):
        api.read(first, "../" + second)
    # The formgrader service refuses a student.
    request = urllib.request.Request(f"{hub.url}/services/formgrader/formgrader")
    opener = urllib.request.build_opener(urllib.request.HTTPRedirectHandler())
    response = opener.open(request, timeout=seconds(60))
    assert "/hub/login" in response.url, "the formgrader answered without a login"


def in_terminal(api: Api, user: str, command: str, until: str, timeout: float = 180) -> str:
    """Type ``command`` into a new JupyterLab terminal on ``user``'s server, as a person at the
    keyboard would; return what the terminal showed, up to the text ``until``."""
    import asyncio
    import concurrent.futures

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    name = api.call("POST", f"/user/{user}/api/terminals")["name"]
    url = api.hub.url.replace("http", "ws", 1) + f"/user/{user}/terminals/websocket/{name}"

    async def session() -> str:
        headers = {"Authorization": f"token {api.token}"}
        socket = await websocket_connect(HTTPRequest(url, headers=headers))
        await socket.write_message(json.dumps(["stdin", command + "\r"]))
        budget = seconds(timeout)
        shown, deadline = "", time.monotonic() + budget
        while until not in shown:
            left = deadline - time.monotonic()
            assert left > 0, f"no {until!r} in {budget:.0f} s; the terminal showed:\n{shown}"
            message = await asyncio.wait_for(socket.read_message(), left)
            assert message is not None, f"the terminal closed; it showed:\n{shown}"
            kind, *content = json.loads(message)
            if kind == "stdout":
                shown += content[0]
        socket.close()
        return shown

    try:
        # A thread of its own: a browser test on the same worker (Playwright's sync API) leaves
        # an event loop running in this one, and asyncio.run() refuses to start inside it.
        with concurrent.futures.ThreadPoolExecutor(1) as thread:
            return thread.submit(asyncio.run, session()).result()
    finally:
        api.call("DELETE", f"/user/{user}/api/terminals/{name}")


def course_repository(site: Path) -> str:
    """The course as a git server serves it: a bare repository of the batching lesson and its
    exercise (and the course's .gitignore) in ``site/course/llmmath``, served over git's smart
    HTTP by git-http-backend (see git_server). Its path below the site's URL."""
    work = site / "work"
    (work / "lessons").mkdir(parents=True)
    shutil.copy2(ROOT / "lessons" / "batching.md", work / "lessons" / "batching.md")
    shutil.copytree(ROOT / "exercises" / "batching", work / "exercises" / "batching")
    shutil.copy2(ROOT / ".gitignore", work / ".gitignore")
    # What marks a folder of the home as the course (read_only_lessons.course_page) and what
    # the lesson's citations read (myst_links), as in the course's repository.
    shutil.copy2(ROOT / "_toc.yml", work / "_toc.yml")
    (work / "book").mkdir()
    shutil.copy2(ROOT / "book" / "references.bib", work / "book" / "references.bib")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "the course")
    git(site, "clone", "-q", "--bare", str(work), str(site / "course" / "llmmath"))
    return "cgi-bin/git/course/llmmath"


@contextlib.contextmanager
def git_server(site: Path) -> Iterator[str]:
    """Serve ``site`` on loopback, its git repositories through git-http-backend (CGI), as a
    course's git server would. Not file://: git refuses to clone a repository another OS user
    owns ("dubious ownership"), and nbgitpuller clones as the student; not git's static "dumb"
    HTTP either: nbgitpuller's clone is shallow (--depth 1), which needs the smart protocol.
    The CGI runs as nobody (http.server's rule for root), trusting the repositories here."""
    import http.server

    from llmmath_course.browser import serve

    (site / "cgi-home").mkdir()
    (site / "cgi-home" / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")
    (site / "cgi-bin").mkdir()
    backend = site / "cgi-bin" / "git"
    backend.write_text(
        "#!/bin/sh\n"
        f"export GIT_PROJECT_ROOT={site} GIT_HTTP_EXPORT_ALL=1 HOME={site / 'cgi-home'}\n"
        "exec /usr/lib/git-core/git-http-backend\n"
    )
    subprocess.run(["chmod", "-R", "a+rX", str(site)], check=True)
    backend.chmod(0o755)

    class Quiet(http.server.CGIHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serve(site, Quiet) as url:
        yield url


def save(page: Any, name: str) -> None:
    """Ctrl+S, until the tab of the file ``name`` is no longer marked modified."""
    page.keyboard.press("Control+S")
    dirty = f".lm-TabBar-tab.jp-mod-dirty:has-text('{name}')"
    page.wait_for_selector(dirty, state="detached", timeout=ms(60))


def first_solution_cell(notebook: Path) -> int:
    """The index of the first code cell a student answers in (nbgrader's locked cells are
    read-only in JupyterLab)."""
    cells = nbformat.read(notebook, as_version=4).cells
    return next(
        i for i, cell in enumerate(cells)
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")
    )  # fmt: skip


def git(where: Path, *argv: str) -> str:
    identity = ("-c", "user.name=Instructor", "-c", "user.email=instructor@example.edu")
    done = subprocess.run(["git", *identity, *argv], cwd=where, capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(argv)}: {done.stdout}{done.stderr}"
    return done.stdout


def panel(tab: Any) -> Any:
    """The document in JupyterLab's current main-area tab (a restored layout keeps other
    notebooks open behind it, whose cells a plain selector would find first)."""
    current = tab.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")
    current.wait_for(timeout=ms(180))
    return tab.locator(f"[id='{current.get_attribute('data-id')}']")


def shown_in_panel(
    tab: Any, selector: str, text: str, timeout_s: float = 120, state: str = "visible"
) -> Any:
    """The first ``selector`` element showing ``text`` in the current tab's document, looked up
    afresh every few seconds: under load JupyterLab may still be restoring its layout when a
    launch returns, and a document found by the tab's id before then can go stale."""
    timeout_s = seconds(timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        found = panel(tab).locator(selector, has_text=text).first
        try:
            found.wait_for(timeout=ms(5), state=state)
            return found
        except Exception as error:  # Playwright's TimeoutError, or a tab that went stale
            if time.monotonic() < deadline:
                continue
            tab.screenshot(path=str(Path(tempfile.gettempdir()) / "llmmath-panel-failed.png"))
            tabs = tab.locator("#jp-main-dock-panel .lm-TabBar-tab").all_inner_texts()
            shown = panel(tab).inner_text()[:2000]
            raise AssertionError(
                f"{text!r} not in {selector} after {timeout_s:.0f} s; tabs {tabs}, the current "
                f"one showing:\n{shown}"
            ) from error


def prompt_of(cell: Any) -> str:
    """A code cell's prompt as JupyterLab shows it: "[ ]:" not run, "[*]:" running, "[3]:"."""
    return str(cell.locator(".jp-InputPrompt").first.inner_text()).strip()


def run_cell(tab: Any, cell: Any) -> None:
    """Run one cell as a student does: select it by its prompt (the prose may hold links), then
    Shift+Enter. A Markdown cell run so is rendered again, its {eval}s asked of the kernel."""
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").first.click()
    wait_until(
        lambda: "jp-mod-selected" in (cell.get_attribute("class") or ""),
        "the cell selected after a click on its prompt",
        60,
        seen=lambda: cell.get_attribute("class"),
        pause=in_page(tab),
    )
    tab.keyboard.press("Shift+Enter")


def launch(page: Any, book: str, text: str, name: str) -> Any:
    """On the built book's ``book`` page, open the launch menu and click the ``text`` button,
    as a student does; the tab it opens (the link has target=_blank), once JupyterLab shows the
    file ``name`` in its current tab."""
    page.goto(book)
    page.click(".dropdown-launch-buttons button")
    with page.expect_popup() as opened:
        page.locator(".dropdown-launch-buttons a", has_text=text).click()
    tab = opened.value
    try:
        tab.wait_for_url("**/lab/tree/**", timeout=ms(180))  # after nbgitpuller's sync page
        current = "#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current"
        tab.locator(current, has_text=name).wait_for(timeout=ms(180))
        panel(tab).locator(".jp-Cell").first.wait_for(timeout=ms(180))
    except Exception as error:
        tab.screenshot(path=str(Path(tempfile.gettempdir()) / "llmmath-launch-failed.png"))
        shown = tab.locator("body").inner_text()[-3000:]
        raise AssertionError(f"{text}: the tab is at {tab.url}, showing:\n{shown}") from error
    return tab


@pytest.mark.browser
def test_the_books_hub_button_opens_the_lesson_and_keeps_the_students_edits(
    class_hub: tuple[Hub, Api], tmp_path: Path
) -> None:
    """#35: the book built with the class hub's and the course repository's addresses; on the
    batching page a student clicks JupyterHub: nbgitpuller clones the course into their home
    and JupyterLab opens the lesson as a notebook, its MyST rendered, read-only and unmodified
    as in `make lab` (no unsaved dot once the kernel is idle; Ctrl+S is refused and the file
    stays as pulled); its note says so and sends work to my-work/, and its exercise link opens
    the student's own copy, ~/llmmath/my-work/batching/, made on first use. On the exercise page
    the button opens that copy; they type into it and save; the instructor changes the lesson
    and pushes a new file; both buttons again: both are pulled and the student's edit is kept."""
    from launch_support import build_launch_pages, launch_links
    from site_support import KERNEL_KNOWN, chromium

    from llmmath.display import numbers

    hub, _ = class_hub
    student = hub.students[1]
    site = Path(tempfile.mkdtemp(prefix="llmmath-launch-"))
    site.chmod(0o755)
    try:
        repository = course_repository(site)
        with git_server(site) as base, chromium() as browser:
            html = build_launch_pages(site / "build", hub.url, f"{base}/{repository}")
            pages = f"{base}/{html.relative_to(site).as_posix()}"
            lesson_link = launch_links(html / "lessons" / "batching.html")["JupyterHub"]
            print(f"\nthe batching page's button: {lesson_link}")
            assert lesson_link.startswith(f"{hub.url}/hub/user-redirect/git-pull?"), lesson_link
            page = login(browser, hub, student, ready="#jp-main-dock-panel .lm-TabBar-tab")
            lab = launch(page, f"{pages}/lessons/batching.html", "JupyterHub", "batching.md")
            assert lab.url.endswith("/lab/tree/llmmath/lessons/batching.md"), lab.url
            clone = hub.home(student) / "llmmath"
            assert clone.stat().st_uid == pwd.getpwnam(student).pw_uid, "cloned as the student"
            pulled = (clone / "lessons" / "batching.md").read_bytes()
            shown_in_panel(lab, ".jp-MarkdownCell .myst h1", "Batching: the cost hyperbola")
            prose = panel(lab).locator(".jp-MarkdownCell .myst")
            text = " ".join(prose.all_inner_texts())
            raw = [s for s in (":::{", "```{", "{ref}`", "(batching)=") if s in text]
            assert not raw, f"the lesson's MyST shows as text: {raw}"
            # Opened unmodified (read_only_lessons: the kernel's language info already there).
            idle = lab.locator("#jp-main-statusbar", has_text=re.compile(r"\| Idle"))
            idle.wait_for(timeout=ms(180))
            # The kernel's info and spec (its language) reach the notebook just after "Idle":
            # once they have, the notebook is unmodified (the tab's dot is its model's flag).
            lab.wait_for_function(KERNEL_KNOWN, timeout=ms(60))
            dirty = lab.evaluate("() => jupyterapp.shell.currentWidget.context.model.dirty")
            assert dirty is False, "opening the lesson marks it modified"
            dot = "#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current.jp-mod-dirty"
            assert lab.locator(dot).count() == 0, "the lesson's tab shows the unsaved dot"
            # The lab-only note says what is true here: read-only, work in my-work/.
            note = prose.filter(has_text="In JupyterLab: run the lesson first").first
            told = note.inner_text()
            assert "read-only" in told and "my-work/" in told, told
            lab.screenshot(path=str(tmp_path / "launch-lesson.png"))
            # It runs on the hub: the student's kernel, with the hub's Python, runs the whole
            # lesson without an error (headless: the browser's share of a loaded machine went to
            # rendering every explorer, 500 s of a suite's run, for what the kernel alone shows).
            ran = hub.home(student) / "batching-ran.ipynb"  # beside the clone, not in it
            hub.as_user(student, PYTHON, "-m", "jupytext", "--to", "ipynb", "--execute",
                        "--output", str(ran), "lessons/batching.md", cwd=clone)  # fmt: skip
            errors = [o for c in nbformat.read(ran, as_version=4).cells
                      for o in c.get("outputs", []) if o.get("output_type") == "error"]  # fmt: skip
            ran.unlink()
            assert not errors, f"the lesson failed on the hub: {errors[0]['ename']}"
            # In the browser, the kernel computes the book's numbers for the prose: the first
            # cell run, "{eval}`n.worked.one_ms` ms in all" shows the number the lesson computes.
            run_cell(lab, panel(lab).locator(".jp-CodeCell").first)
            wait_until(
                lambda: prompt_of(panel(lab).locator(".jp-CodeCell").first) == "[1]:",
                "the lesson's first cell run ([1]: in its prompt)",
                180,
                seen=lambda: prompt_of(panel(lab).locator(".jp-CodeCell").first),
                pause=in_page(lab),
            )
            in_all = f"{numbers.batching.numbers().worked.one_ms} ms in all"
            run_cell(lab, panel(lab).locator(".jp-MarkdownCell", has_text="ms of matmul").first)
            prose.filter(has_text=in_all).wait_for(timeout=ms(120))
            stderr = panel(lab).locator("[data-mime-type='application/vnd.jupyter.stderr']")
            failed = [s for s in stderr.all_inner_texts() if "Error" in s or "Traceback" in s]
            assert not failed, f"the lesson failed on the hub: {failed}"
            panel(lab).locator(".jp-MarkdownCell", has_text=in_all).scroll_into_view_if_needed()
            lab.screenshot(path=str(tmp_path / "launch-lesson-ran.png"))
            # Ctrl+S is refused: the lesson stays as pulled, so the next pull can update it.
            lab.keyboard.press("Control+s")
            lab.get_by_text("lessons/batching.md is read-only").wait_for(timeout=ms(60))
            lab.screenshot(path=str(tmp_path / "launch-lesson-readonly.png"))
            lab.keyboard.press("Escape")
            assert (clone / "lessons" / "batching.md").read_bytes() == pulled, "a save wrote it"
            # The exercise link, the lesson's last {eval}: the student's own copy, through
            # llmmath/my-work (not `make lab`).
            run_cell(lab, panel(lab).locator(".jp-MarkdownCell", has_text="autograded parts").last)
            link = panel(lab).locator(".jp-MarkdownCell a", has_text="the batching exercise")
            link.first.wait_for(timeout=ms(120))
            href = link.first.get_attribute("href") or ""
            assert href.endswith(f"/user/{student}/llmmath/my-work/llmmath/batching"), href
            assert "make lab" not in link.first.locator("xpath=..").inner_text()
            link.first.click()  # jupyterlab-myst's link: this tab, or a new one
            copy = "llmmath/my-work/batching/batching.ipynb"
            opened = wait_until(
                lambda: [p for p in lab.context.pages if f"/lab/tree/{copy}" in p.url],
                f"a tab at /lab/tree/{copy} (the link's my-work copy)",
                180,
                seen=lambda: [p.url for p in lab.context.pages],
                every=0.5,
                pause=in_page(lab),
            )
            exercise = opened[0]
            current = "#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current"
            exercise.locator(current, has_text="batching.ipynb").wait_for(timeout=ms(180))
            exercise.screenshot(path=str(tmp_path / "launch-lesson-exercise-link.png"))
            assert (hub.home(student) / copy).is_file(), "the link made no my-work copy"
            exercise.close()
            if not lab.is_closed():
                lab.close()

            typed = "# my own note, kept across pulls"
            mine = launch(
                page, f"{pages}/exercises/batching/batching.html", "your copy", "batching.ipynb"
            )
            assert mine.url.endswith(f"/lab/tree/{copy}"), mine.url
            cells = panel(mine).locator(".jp-Notebook .jp-Cell")
            answer = cells.nth(
                first_solution_cell(ROOT / "exercises" / "batching" / "batching.ipynb")
            )
            answer.scroll_into_view_if_needed()
            answer.locator(".cm-content").click()
            mine.keyboard.press("Control+Home")
            mine.keyboard.insert_text(typed + "\n")
            save(mine, "batching.ipynb")
            mine.close()
            assert typed in (hub.home(student) / copy).read_text(), "the edit was not saved"
            # The instructor adds a file to the course.
            (site / "work" / "NEWS.md").write_text("A new section is out.\n")
            # (no apostrophe: MyST's typographer curls it, and the text would not match)
            upstream = "A correction from the instructor, pulled into the lesson."
            lesson_md = site / "work" / "lessons" / "batching.md"
            title = "# Batching: the cost hyperbola and the latency floor\n"  # its first cell
            lesson_md.write_text(lesson_md.read_text().replace(title, f"{title}\n{upstream}\n", 1))
            git(site / "work", "add", "NEWS.md", "lessons/batching.md")
            git(site / "work", "commit", "-q", "-m", "news")
            git(site / "work", "push", "-q", str(site / "course" / "llmmath"), "main")

            again = launch(
                page, f"{pages}/exercises/batching/batching.html", "your copy", "batching.ipynb"
            )
            kept = shown_in_panel(
                again, ".jp-CodeCell", typed, state="attached"
            )  # may be off screen
            kept.scroll_into_view_if_needed()
            again.screenshot(path=str(tmp_path / "launch-exercise-kept.png"))
            again.close()
            lab = launch(page, f"{pages}/lessons/batching.html", "JupyterHub", "batching.md")
            lesson_now = (clone / "lessons" / "batching.md").read_text()
            assert upstream in lesson_now, "the second click did not pull the lesson's change"
            shown_in_panel(lab, ".jp-MarkdownCell .myst", upstream)
            lab.screenshot(path=str(tmp_path / "launch-lesson-again.png"))
            lab.close()
            page.close()
        assert (clone / "NEWS.md").exists(), "the second click did not pull the new file"
        assert upstream in (clone / "lessons" / "batching.md").read_text(), "not pulled"
        assert typed in (hub.home(student) / copy).read_text(), "the my-work copy was replaced"
        print(f"screenshots: {sorted(str(p) for p in tmp_path.glob('launch-*.png'))}")
    finally:
        shutil.rmtree(site, ignore_errors=True)


def test_the_instructors_terminal_runs_the_guides_commands(class_hub: tuple[Hub, Api]) -> None:
    """In a terminal of the instructor's own server: the hub's Python and nbgrader on PATH, and
    the guide's commands run in ~/course (issue #37: a login shell had reset PATH)."""
    hub, api = class_hub
    api.start_server(hub.instructor)
    api.wait_ready([hub.instructor])
    command = (
        "cd ~/course && command -v python python3 nbgrader && "
        'python3 -c \'import nbformat, nbgrader; print("imports", "ok")\' && '
        f"nbgrader generate_assignment {ASSIGNMENT} --force > /dev/null 2>&1 && "
        f"python scripts/instructor.py review {ASSIGNMENT}; echo END-OF-$((40 + 2))"
    )
    shown = in_terminal(api, hub.instructor, command, until="END-OF-42")
    for program in ("python", "python3", "nbgrader"):
        assert f"{HUB_ENV / 'bin' / program}\r\n" in shown, (program, shown)
    assert "imports ok" in shown, shown
    assert re.search(r"\d+ open of \d+ flags", shown), shown


def test_a_students_terminal_runs_make_check(class_hub: tuple[Hub, Api]) -> None:
    """The notebook tells students to run `make check ASSIGNMENT=...` in a terminal: on the hub
    it runs scripts/check.py on their own copy, from whatever folder the terminal is in."""
    hub, api = class_hub
    student = hub.students[2]  # answered every part right in test_a_class_on_the_hub
    api.start_server(student)
    api.wait_ready([student])
    if not (hub.home(student) / ASSIGNMENT).exists():  # run alone: release, fetch, answer
        if not (hub.exchange / COURSE / "outbound" / ASSIGNMENT).exists():
            release(hub)
        api.nbgrader(student, "fetch")
        api.save(student, f"{ASSIGNMENT}/{NOTEBOOK}.ipynb", answered(hub, wrong=False))
    shown = in_terminal(
        api,
        student,
        f"cd /tmp && make check ASSIGNMENT={ASSIGNMENT}; echo END-OF-$((40 + 2))",
        until="END-OF-42",
    )
    passing = re.search(r"(\d+) of (\d+) autograded parts pass", shown)
    assert passing, shown
    assert passing.group(1) == passing.group(2) != "0", shown
    assert "No rule to make target" not in shown, shown


def memory_cgroups_writable() -> bool:
    v2, v1 = Path("/sys/fs/cgroup/cgroup.controllers"), Path("/sys/fs/cgroup/memory")
    return (v2.exists() or v1.is_dir()) and os.access(v2.parent if v2.exists() else v1, os.W_OK)


@pytest.mark.skipif(not memory_cgroups_writable(), reason="no writable memory cgroup here")
def test_a_student_cannot_take_more_than_the_memory_limit(class_hub: tuple[Hub, Api]) -> None:
    """A student's terminal (a child of their server, as their kernels are) allocating more than
    the class's per-student limit (scripts/hub.py MEM_LIMIT, 1 GiB) is killed; a modest
    allocation is not."""
    hub, api = class_hub
    student = hub.students[0]
    api.start_server(student)
    api.wait_ready([student])
    grab = "python -c 'b = bytearray({mb} * 2**20); b[::4096] = b\"x\" * len(b[::4096])'"
    command = (
        f"grep -c llmmath-hub/{student} /proc/self/cgroup; "
        f"{grab.format(mb=200)}; echo small=$?; {grab.format(mb=1500)}; echo large=$?; "
        "echo END-OF-$((40 + 2))"
    )
    shown = in_terminal(api, student, command, until="END-OF-42")
    assert "small=0" in shown, shown
    assert "large=137" in shown, f"1.5 GiB was not refused (137: killed):\n{shown}"


def log_in(url: str, user: str, password: str) -> bool:
    """The hub's login form, as a browser posts it: True when the hub lets ``user`` in."""
    import http.cookiejar

    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None  # a login answers with a redirect; do not start the server

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), Stay())
    form = opener.open(f"{url}/hub/login", timeout=seconds(60)).read().decode()
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form)
    fields = {"username": user, "password": password, **({"_xsrf": xsrf.group(1)} if xsrf else {})}
    try:
        opener.open(
            f"{url}/hub/login", urllib.parse.urlencode(fields).encode(), timeout=seconds(60)
        )
    except urllib.error.HTTPError as answer:
        if answer.code in (301, 302, 303):
            return "/hub/login" not in (answer.headers.get("Location") or "")
        if answer.code == 403:
            return False
        raise
    return False


def test_the_class_survives_a_restart() -> None:
    """A class kept in a state folder: the student logs in with the machine's password (PAM),
    submits, the instructor grades; the hub stops and starts again on the same folder, and the
    accounts, the logins and the gradebook are as they were; the hub's log and database are
    root's alone, the exchange the class's; a backup holds the same gradebook."""
    prefix = unique("llmmr")
    state = Path(tempfile.mkdtemp(prefix="llmmath-state-"))
    instructor, student = f"{prefix}-inst", f"{prefix}-s01"
    try:
        with running_hub(
            1, free_port_block(), prefix=prefix, state=state, start_timeout_s=seconds(60)
        ) as hub:
            assert set(hub.passwords) == {instructor, student}
            password = hub.passwords[student]
            assert log_in(hub.url, student, password)
            assert not log_in(hub.url, student, password + "x")
            release(hub)
            hub.as_user(student, PYTHON, "-m", "nbgrader", "fetch_assignment", ASSIGNMENT)
            path = hub.home(student) / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
            nbformat.write(answered(hub, wrong=True), path)
            shutil.chown(path, student, student)
            hub.as_user(student, PYTHON, "-m", "nbgrader", "submit", ASSIGNMENT)
            hub.as_user(hub.instructor, PYTHON, "scripts/instructor.py", "grade", ASSIGNMENT,
                        "--jobs", "1", cwd=hub.course)  # fmt: skip
            graded = _gradebook_scores(hub.course)
            assert graded == {student: (SPEC.wrong_score, SPEC.autograded_points
                                        + SPEC.manual_points)}, graded  # fmt: skip
            assert (state / "hub").stat().st_mode & 0o777 == 0o700
            for name in ("jupyterhub.log", "jupyterhub.sqlite", "jupyterhub_cookie_secret"):
                info = (state / "hub" / name).stat()
                assert (info.st_uid, info.st_mode & 0o777) == (0, 0o600), name
            exchange = hub.exchange.stat()
            assert exchange.st_mode & 0o7777 == 0o1770, oct(exchange.st_mode)
            assert grp.getgrgid(exchange.st_gid).gr_name == f"{prefix}-class"
            with pytest.raises(RuntimeError, match="Permission denied"):
                hub.as_user(student, "cat", str(state / "hub" / "jupyterhub.log"))
        assert (state / "hub" / "jupyterhub.sqlite").exists(), "the hub's database went"
        with running_hub(
            1, free_port_block(), prefix=prefix, state=state, start_timeout_s=seconds(60)
        ) as hub:
            assert hub.passwords == {}, "an account was made again"
            assert _gradebook_scores(hub.course) == graded
            assert log_in(hub.url, student, password)
            archive = state.parent / f"{state.name}.tar.gz"
            names = backup(state, archive)
        assert archive.stat().st_mode & 0o777 == 0o600
        member = next(n for n in names if n.endswith("/course/gradebook.db"))
        restored = Path(tempfile.mkdtemp(prefix="llmmath-restore-"))
        with tarfile.open(archive) as tar:
            tar.extract(member, restored, filter="data")
        assert _gradebook_scores((restored / member).parent) == graded
        assert any(n.endswith(f"/home/{student}/{ASSIGNMENT}/{NOTEBOOK}.ipynb") for n in names)
    finally:
        for user in (instructor, student):
            remove_user(user)
        subprocess.run(["groupdel", f"{prefix}-class"], capture_output=True)
        shutil.rmtree(state, ignore_errors=True)
        with contextlib.suppress(NameError):
            archive.unlink(missing_ok=True)
            shutil.rmtree(restored, ignore_errors=True)


def test_a_hub_environment_in_use_is_never_removed(tmp_path: Path) -> None:
    """Each version of the hub environment (pins and interpreter) has a folder of its own; a
    build prunes the others, except one a running process maps (a hub still running from it:
    rebuilding /opt/llmmath-hub used to pull it from under a running class)."""
    lock = tmp_path / "requirements.lock"
    lock.write_text("jupyterhub==6.1.1\n")
    first = env_version(lock)
    lock.write_text("jupyterhub==6.1.2\n")
    assert re.fullmatch(r"[0-9a-f]{12}", first) and env_version(lock) != first
    root = tmp_path / "hub-home"
    used, unused, keep = (root / (c * 12) for c in "abc")
    for folder in (used, unused, keep):
        (folder / "python" / "bin").mkdir(parents=True)
    (root / "notes").mkdir()  # not an environment: left alone
    shutil.copy2("/bin/sleep", used / "python" / "bin" / "sleep")
    running = subprocess.Popen([str(used / "python" / "bin" / "sleep"), "60"])
    try:
        wait_until(lambda: in_use(used), f"a process running from {used}", 10, every=0.1)
        assert prune(root, keep=keep) == [unused]
        assert used.exists() and keep.exists() and (root / "notes").exists()
    finally:
        running.kill()
        running.wait()
    assert prune(root, keep=keep) == [used], "once nothing runs from it, it goes"


def test_thirty_students_submit_at_once() -> None:
    token = secrets.token_hex(16)
    started = time.perf_counter()
    with running_hub(
        30,
        free_port_block(),
        prefix=unique("llmml"),
        admin_token=token,
        start_timeout_s=seconds(60),
    ) as hub:
        api = Api(hub, token)
        release(hub)
        up = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(30) as pool:
            list(pool.map(api.start_server, hub.students))
        api.wait_ready(hub.students)
        api.wait_serving(hub.students)
        servers_s = time.perf_counter() - up
        with concurrent.futures.ThreadPoolExecutor(30) as pool:
            list(pool.map(lambda user: api.nbgrader(user, "fetch"), hub.students))
        nb = answered(hub, wrong=False)
        for user in hub.students:
            api.save(user, f"{ASSIGNMENT}/{NOTEBOOK}.ipynb", nb)
        submit = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(30) as pool:
            list(pool.map(lambda user: api.nbgrader(user, "submit"), hub.students))
        submit_s = time.perf_counter() - submit
        grade = time.perf_counter()
        log = hub.as_user(hub.instructor, PYTHON, "scripts/instructor.py", "grade", ASSIGNMENT,
                          "--jobs", "4", cwd=hub.course)  # fmt: skip
        grade_s = time.perf_counter() - grade
        assert "autograded 30 of 30" in log, log
        journal = (hub.course / "autograded" / f".journal-{ASSIGNMENT}.tsv").read_text()
        graded = [line.split("\t")[0] for line in journal.splitlines()]
        assert sorted(graded) == sorted(hub.students), "every submission graded exactly once"
        with (hub.course / "grades.csv").open() as fh:
            scores = {row["student_id"]: float(row["raw_score"]) for row in csv.DictReader(fh)}
        assert scores == dict.fromkeys(hub.students, SPEC.autograded_points), "each graded right"
    total_s = time.perf_counter() - started
    print(
        f"\n30 students: servers ready in {servers_s:.0f} s, 30 submissions in {submit_s:.1f} s, "
        f"collected and graded in {grade_s:.0f} s; {total_s:.0f} s with setup and teardown"
    )


def test_a_forged_submission_is_refused_and_reported() -> None:
    """A student hands in work under another student's name, and under their own name with a
    link to the instructor's solutions: collect refuses both and the report names them; the
    named student's own submission is graded; the forger fetches no one's feedback but their own.

    The students are real OS users running nbgrader from the hub's environment, but no hub is
    started: the forger uses the command line (the Assignments tab's Submit button runs the same
    ``nbgrader submit`` code, with no --student), and a browser would add minutes, not checks.
    """
    from test_instructor import Course

    prefix = unique("llmmf")
    victim, forger = f"{prefix}-s03", f"{prefix}-s02"
    base = Path(tempfile.mkdtemp(prefix="llmmath-forge-"))
    base.chmod(0o755)  # students reach the exchange and their homes through it
    users: list[str] = []
    try:
        course = Course(base, students_are_os_users=True)
        (base / "home").mkdir()
        (base / "home").chmod(0o755)
        for user in (victim, forger):
            add_user(user, base / "home" / user)
            users.append(user)
        config = base / "config"
        config.mkdir()
        (config / "nbgrader_config.py").write_text(
            f'c = get_config()  # noqa\nc.Exchange.root = "{course.exchange}"\n'
            f'c.CourseDirectory.course_id = "{COURSE}"\n'
        )
        config.chmod(0o755)

        def as_student(user: str, *argv: str) -> str:
            home = base / "home" / user
            env = {
                "HOME": str(home), "PATH": f"{HUB_ENV / 'bin'}:/usr/bin:/bin",
                "JUPYTER_CONFIG_PATH": str(config), "LD_LIBRARY_PATH": str(HUB_LIB),
                "LANG": "C.UTF-8",
            }  # fmt: skip
            result = subprocess.run(
                [RUNUSER, "-u", user, "--", *argv], cwd=home, env=env,
                capture_output=True, text=True, timeout=seconds(300),
            )  # fmt: skip
            assert result.returncode == 0, f"{argv} as {user}: {result.stdout}{result.stderr}"
            return result.stdout + result.stderr

        def nbgrader(user: str, *args: str) -> str:
            return as_student(user, PYTHON, "-m", "nbgrader", *args, f"--course={COURSE}")

        generate_assignment(course.root, ASSIGNMENT)
        course.instructor(f"nbgrader release_assignment {ASSIGNMENT}")
        for user, wrong in ((victim, {}), (forger, SPEC.wrong_answers)):
            nbgrader(user, "fetch_assignment", ASSIGNMENT)
            path = base / "home" / user / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
            nbformat.write(submission_from_release(path, SPEC.source_nb, wrong), path)
            shutil.chown(path, user, user)
            nbgrader(user, "submit", ASSIGNMENT)
        # The forger hands in their own (wrong) work again, in the victim's name: the newest.
        nbgrader(forger, "submit", ASSIGNMENT, f"--student={victim}")
        # And a submission under their own name that links to the instructor's solution:
        # collect, run as the instructor, would copy the solution into it.
        inbound = course.exchange / COURSE / "inbound"
        planted = inbound / f"{forger}+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+link"
        as_student(forger, "mkdir", str(planted))
        as_student(forger, "ln", "-s", str(SPEC.source_nb), str(planted / f"{NOTEBOOK}.ipynb"))
        owners = {p.name.split("+")[0]: p.stat().st_uid for p in inbound.iterdir()}
        assert len(list(inbound.iterdir())) == 4 and set(owners) == {victim, forger}

        log = course.instructor(f"python scripts/instructor.py grade {ASSIGNMENT} --jobs 1")
        refused = [line for line in log.splitlines() if line.startswith("REFUSED")]
        assert len(refused) == 3, log  # each one as collect meets it, then the summary
        assert any(f"names {victim}" in line and f"owned by {forger}" in line for line in refused)
        assert any("is a symbolic link" in line for line in refused), refused
        assert "REFUSED at collect: 2 submissions" in log
        scores = {s: v for s, (v, _) in _gradebook_scores(course.root).items()}
        assert scores == {victim: SPEC.autograded_points, forger: SPEC.wrong_score}, scores
        report = (course.root / "reports" / ASSIGNMENT / "report.md").read_text("utf-8")
        section = report[report.index("## Refused at collect: 2 submissions") :]
        assert f"**{victim}**" in section and f"owned by {forger}, not by {victim}" in section
        with (course.root / "reports" / ASSIGNMENT / "flags.csv").open() as fh:
            kinds = [row["kind"] for row in csv.DictReader(fh)]
        assert kinds.count("refused") == 2

        # Feedback waits until the refused submissions are reviewed; then it goes out.
        release = f"python scripts/instructor.py release-feedback {ASSIGNMENT}"
        refusal = course.instructor(release, ok=False)
        assert f"flag not reviewed: {victim}: refused at collect" in refusal, refusal
        course.instructor(f"python scripts/instructor.py review {ASSIGNMENT}", extra=victim)
        assert f"flag not reviewed: {forger}" in course.instructor(release, ok=False)
        course.instructor(f"python scripts/instructor.py review {ASSIGNMENT}", extra=forger)
        assert "feedback released to the exchange for 2" in course.instructor(release)
        nbgrader(forger, "fetch_feedback", ASSIGNMENT, f"--student={victim}")
        nbgrader(victim, "fetch_feedback", ASSIGNMENT)
        total = SPEC.autograded_points + SPEC.manual_points
        for user, score in ((forger, SPEC.wrong_score), (victim, SPEC.autograded_points)):
            fetched = list((base / "home" / user / ASSIGNMENT / "feedback").glob("*/*.html"))
            assert len(fetched) == 1, (user, fetched)  # their own submission's, nothing else
            assert f"Score: {score} / {total}" in fetched[0].read_text(encoding="utf-8"), user
    finally:
        for user in users:
            remove_user(user)
        shutil.rmtree(base, ignore_errors=True)


def _gradebook_scores(root: Path) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE) as gb:
        return {s.student.id: (s.score, s.max_score) for s in gb.assignment_submissions(ASSIGNMENT)}
