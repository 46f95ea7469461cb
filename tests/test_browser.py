"""The built book in headless Chromium: every page renders offline, figures are visible,
and the controls switch the figure with no kernel and no request leaving the machine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright
from site_support import (
    CHROMIUM,
    CHROMIUM_ARGS,
    HARMLESS_CONSOLE,
    HTML,
    built_pages,
    is_local,
    serve,
)

pytestmark = pytest.mark.browser

if not (HTML / "index.html").exists():
    pytest.fail("the book is not built: run `make book` (make test does it first)", pytrace=False)


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve(HTML) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: apt-get install chromium", pytrace=False)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Visit:
    """A page opened with every outside request blocked and recorded, and errors kept."""

    def __init__(self, browser: Browser, url: str) -> None:
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.page: Page = browser.new_page()
        self.page.route("**/*", self._route)
        self.page.on("pageerror", lambda error: self._keep(str(error)))
        self.page.on("console", self._console)
        self.page.goto(url, wait_until="load")

    def _route(self, route) -> None:  # type: ignore[no-untyped-def]
        if is_local(route.request.url):
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def _console(self, message) -> None:  # type: ignore[no-untyped-def]
        if message.type == "error":
            self._keep(message.text)

    def _keep(self, text: str) -> None:
        if not any(noise in text for noise in HARMLESS_CONSOLE):
            self.errors.append(text)


PAGES = [p.relative_to(HTML).as_posix() for p in built_pages()]


def test_the_book_has_its_pages() -> None:
    expected = {"book/intro.html", "lessons/roofline.html", "exercises/roofline/roofline.html"}
    assert expected <= set(PAGES), f"missing pages: {expected - set(PAGES)}"


@pytest.mark.parametrize("path", PAGES)
def test_page_renders_offline(browser: Browser, base_url: str, path: str) -> None:
    visit = Visit(browser, f"{base_url}/{path}")
    if path == "index.html":  # a meta refresh to the intro page
        visit.page.wait_for_url("**/book/intro.html", timeout=10000)
    title = visit.page.locator("article h1").first
    title.wait_for(state="visible", timeout=10000)  # raises if the page shows no title
    visit.page.wait_for_load_state("load")
    visit.page.wait_for_timeout(300)
    assert not visit.outside, f"{path} reached outside the machine: {visit.outside}"
    assert not visit.errors, f"{path} logged errors: {visit.errors}"
    raw_tex = visit.page.locator("article").inner_text()
    assert "\\frac" not in raw_tex, f"{path} shows raw TeX: MathJax did not typeset it"
    visit.page.close()


def visible_frame(page: Page) -> str:
    """The ``src`` of the one widget image currently shown."""
    images = page.locator(".widget-image:visible, .jupyter-widgets img:visible")
    assert images.count() >= 1, "no widget figure is visible"
    return images.first.get_attribute("src") or ""


def test_lesson_controls_switch_the_figure(browser: Browser, base_url: str) -> None:
    visit = Visit(browser, f"{base_url}/lessons/roofline.html")
    page = visit.page
    page.locator(".widget-slider").first.wait_for(state="visible", timeout=15000)
    static_figures = page.locator("figure img")
    assert static_figures.count() >= 2 and static_figures.first.is_visible()
    first = visible_frame(page)

    handle = page.locator(".widget-slider .noUi-handle, .widget-slider .ui-slider-handle").first
    handle.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.wait_for_timeout(300)
    after_slider = visible_frame(page)
    assert after_slider != first, "moving the batch slider did not change the figure"

    page.locator(".widget-dropdown select").first.select_option("TPU-v5e")
    page.wait_for_timeout(300)
    assert visible_frame(page) != after_slider, "choosing another chip did not change the figure"

    after_chip = visible_frame(page)
    page.locator(".widget-toggle-buttons button", has_text="int8").first.click()
    page.wait_for_timeout(300)
    assert visible_frame(page) != after_chip, "switching the weights to int8 changed nothing"
    assert not visit.outside, f"the widget reached outside the machine: {visit.outside}"
    assert not visit.errors, f"the widget logged errors: {visit.errors}"
    page.close()
