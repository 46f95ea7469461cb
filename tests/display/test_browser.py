"""The built book in headless Chromium: every page renders offline, figures are visible,
and the controls switch the figure with no kernel and no request leaving the machine.

Each page is loaded once (the ``visit`` fixture, per module and page): the tests of a lesson
run one after the other on the same load, the first of them (``test_page_renders_offline``)
on the page as loaded, and every later one still sees every error and outside request the page
made since it loaded. Every page is loaded in one browser tab (``Tab``), as a reader goes from
page to page: a new tab for each was a new renderer process that compiled the book's scripts
again (about 0.4 s of Chromium's CPU a page)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page
from site_support import (
    HARMLESS_CONSOLE,
    HTML,
    ROOT,
    built_pages,
    is_local,
    serve,
    typeset,
)
from wait_support import in_page, ms, wait_until

pytestmark = pytest.mark.browser

if not (HTML / "index.html").exists():
    pytest.fail("the book is not built: run `make book` (make test does it first)", pytrace=False)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve(HTML) as url:
        yield url


#: A new tab's viewport (Playwright's default), given back to the tab at each visit: a test
#: that resizes its page does not resize the next one.
VIEWPORT = {"width": 1280, "height": 720}


class Visit:
    """A page opened in the module's ``Tab``: what it asked outside the machine (blocked) and
    its errors, from its navigation on."""

    def __init__(self, page: Page, url: str) -> None:
        self.path = url.split("/", 3)[3]  # the page's path in the book
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.page = page


class Tab:
    """The one browser tab the module's visits load their pages in, every outside request
    blocked and recorded, and errors kept, for the page it shows now (``visit``)."""

    def __init__(self, browser: Browser) -> None:
        self.current: Visit | None = None
        self.page: Page = browser.new_page()
        self.page.route("**/*", self._route)
        self.page.on("pageerror", lambda error: self._keep(str(error)))
        self.page.on("console", self._console)
        # A request of the page's own that fails or is answered with an error (a missing
        # frame, font or script) is an error too (#45), whatever the console says of it.
        self.page.on("requestfailed", self._failed)
        self.page.on("response", self._answered)

    def visit(self, url: str) -> Visit:
        """``url`` loaded in this tab, at a new tab's size. The last page is left for a blank
        one first, recorded by no visit: what leaving it cancels (its requests still loading)
        is not the new page's."""
        self.current = None
        self.page.goto("about:blank")
        self.page.set_viewport_size(VIEWPORT)  # type: ignore[arg-type]
        self.current = Visit(self.page, url)
        self.page.goto(url, wait_until="load")
        return self.current

    def _failed(self, request) -> None:  # type: ignore[no-untyped-def]
        if self.current is not None and is_local(request.url):
            self.current.errors.append(f"request failed: {request.url} ({request.failure})")

    def _answered(self, response) -> None:  # type: ignore[no-untyped-def]
        if self.current is not None and response.status >= 400:
            self.current.errors.append(f"HTTP {response.status}: {response.url}")

    def _route(self, route) -> None:  # type: ignore[no-untyped-def]
        if is_local(route.request.url):
            route.continue_()
        else:
            if self.current is not None:
                self.current.outside.append(route.request.url)
            route.abort()

    def _console(self, message) -> None:  # type: ignore[no-untyped-def]
        if message.type == "error":
            self._keep(message.text)

    def _keep(self, text: str) -> None:
        if self.current is not None and not any(noise in text for noise in HARMLESS_CONSOLE):
            self.current.errors.append(text)


PAGES = [p.relative_to(HTML).as_posix() for p in built_pages()]


@pytest.fixture(scope="module")
def tab(browser: Browser) -> Iterator[Tab]:
    opened = Tab(browser)
    yield opened
    opened.page.close()


@pytest.fixture(scope="module")
def visit(tab: Tab, base_url: str, request: pytest.FixtureRequest) -> Visit:
    """The page ``request.param`` (a path in the book), loaded once for every test of this
    module that names it (pytest runs them together, then loads the next in the same tab)."""
    return tab.visit(f"{base_url}/{request.param}")


def test_the_book_has_its_pages() -> None:
    expected = {"book/intro.html", "lessons/roofline.html", "exercises/roofline/roofline.html"}
    assert expected <= set(PAGES), f"missing pages: {expected - set(PAGES)}"


@pytest.mark.parametrize("visit", PAGES, indirect=True)
def test_page_renders_offline(visit: Visit) -> None:
    path = visit.path
    if path == "index.html":  # a meta refresh to the intro page
        visit.page.wait_for_url("**/book/intro.html", timeout=ms(10))
    title = visit.page.locator("article h1").first
    title.wait_for(state="visible", timeout=ms(10))  # raises if the page shows no title
    visit.page.wait_for_load_state("load")
    typeset(visit.page)
    assert not visit.outside, f"{path} reached outside the machine: {visit.outside}"
    assert not visit.errors, f"{path} logged errors: {visit.errors}"
    raw_tex = visit.page.locator("article").inner_text()
    assert "\\frac" not in raw_tex, f"{path} shows raw TeX: MathJax did not typeset it"


#: An explorer's frame (an image) and panel (a precomputed table), and each kind of control
#: (llmmath.display.widgets.common.StaticExplorer; book/static/explorer.js drives them).
FRAME = ".llm-explorer .explorer-view img"
PANEL = ".llm-explorer .explorer-panel"
SLIDER = ".llm-explorer input[type='range']"
MENU = ".llm-explorer select"
TOGGLES = ".llm-explorer fieldset.explorer-buttons"


def visible_frames(page: Page, between_frames_ok: bool = False) -> list[str]:
    """What the explorers show now: the ``src`` of every visible frame and the HTML of every
    visible panel (a precomputed table is a frame too). ``between_frames_ok``: while a
    figure switches frames no image may be visible for a moment (then: [])."""
    images = page.locator(f"{FRAME}:visible")
    if between_frames_ok and images.count() == 0:
        return []
    assert images.count() >= 1, "no explorer figure is visible"
    panels = page.locator(f"{PANEL}:visible")
    return [images.nth(i).get_attribute("src") or "" for i in range(images.count())] + [
        panels.nth(i).inner_html() for i in range(panels.count())
    ]


LESSON_PAGES = [p for p in PAGES if p.startswith("lessons/")]


def test_every_lesson_is_in_the_book() -> None:
    lessons = sorted(f"lessons/{p.stem}.html" for p in (ROOT / "lessons").glob("*.md"))
    assert lessons == sorted(LESSON_PAGES)


@pytest.mark.parametrize("visit", LESSON_PAGES, indirect=True)
def test_every_lesson_control_switches_the_figure(visit: Visit) -> None:
    """No dead control: each slider, menu and toggle on the page changes a figure."""
    path, page = visit.path, visit.page
    ready = ".llm-explorer[data-ready] .explorer-view img"  # explorer.js has set it up
    page.locator(ready).first.wait_for(state="visible", timeout=ms(20))
    captions = page.locator(".cell_output p", has_text=re.compile(r"^Figure\. \w"))
    assert captions.count() >= 1 and captions.first.is_visible(), "no captioned figure"
    assert page.locator(".cell_output img").first.is_visible(), "no figure"

    moves = []
    for i in range(page.locator(SLIDER).count()):
        moves.append((f"slider {i}", lambda i=i: _nudge_slider(page, i)))
    for i in range(page.locator(MENU).count()):
        moves.append((f"menu {i}", lambda i=i: _pick_other_option(page, i)))
    for i in range(page.locator(TOGGLES).count()):
        moves.append((f"toggle {i}", lambda i=i: _click_other_toggle(page, i)))
    assert moves, f"{path} has no controls"
    for name, move in moves:
        before = visible_frames(page)
        move()
        wait_until(
            lambda: visible_frames(page, between_frames_ok=True) not in ([], before),  # noqa: B023 (called here, in the loop)
            f"{path}: moving {name} to change a figure",
            10,
            seen=lambda: "the same frames",
            pause=in_page(page),
        )
    assert not visit.outside, f"the explorers reached outside the machine: {visit.outside}"
    assert not visit.errors, f"the explorers logged errors: {visit.errors}"


def _nudge_slider(page: Page, index: int) -> None:
    page.locator(SLIDER).nth(index).focus()
    for _ in range(2):
        page.keyboard.press("ArrowRight")


def _pick_other_option(page: Page, index: int) -> None:
    select = page.locator(MENU).nth(index)
    options = select.locator("option").all_inner_texts()
    current = select.evaluate("element => element.options[element.selectedIndex].text")
    select.select_option(label=next(o for o in reversed(options) if o != current))


def _click_other_toggle(page: Page, index: int) -> None:
    group = page.locator(TOGGLES).nth(index)
    group.locator("input[type='radio']:not(:checked)").first.click()


@pytest.mark.parametrize("visit", LESSON_PAGES, indirect=True)
def test_the_lessons_jupyterlab_note_is_hidden_in_the_book(visit: Visit) -> None:
    """#36 item 4: each lesson opens in JupyterLab with a note to run it first; the book has
    run it already, so the note is in the page but not shown (book/static/course.css)."""
    path = visit.path
    note = visit.page.locator(".lab-only")
    assert note.count() == 1, f"{path} lacks its JupyterLab note"
    assert not note.is_visible(), f"{path} shows the JupyterLab-only note"


@pytest.mark.parametrize("visit", LESSON_PAGES, indirect=True)
def test_the_package_code_a_lesson_shows_fits_its_column(visit: Visit) -> None:
    """#36 item 7: the source a lesson shows (pages.source) wraps at its column, at a desktop
    width too, instead of running past it into a sideways scroll (book/static/course.css)."""
    path = visit.path
    visit.page.set_viewport_size({"width": 1400, "height": 900})
    blocks = visit.page.locator(".cell_output .highlight pre")
    assert blocks.count() >= 1, f"{path} shows no package code"
    wider = blocks.evaluate_all(
        "pres => pres.filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent"
        ".split('\\n').reduce((a, b) => (b.length > a.length ? b : a)))"
    )
    assert not wider, f"{path}: code wider than its column, longest lines {wider}"
