"""The built book for readers who use a screen reader, the keyboard alone, or a phone.

axe-core (Deque's rules, vendored from npm by ``scripts/vendor_js.py`` into ``tests/_vendor``,
not shipped with the book) runs in every built page once its widgets and maths have drawn:
no serious or critical violation. Each explorer works from the keyboard alone, and each lesson
at a phone's 390 x 844 viewport scrolls only down. Each page is loaded once at a desktop's
width for axe and the keyboard (the ``opened`` fixture), and once at a phone's.

``python tests/display/test_accessibility.py --report out.json`` writes axe's findings for every
page (each rule's impact and how many elements break it), the numbers the issue asks for before and
after a change."""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from playwright.sync_api import Browser, Page
from site_support import HTML, ROOT, built_pages, serve, typeset
from wait_support import in_page, ms, poll, wait_until

pytestmark = pytest.mark.browser

AXE = ROOT / "tests" / "_vendor" / "axe.min.js"
#: The impacts the book must have none of (axe's scale: minor, moderate, serious, critical).
BLOCKING = ("serious", "critical")
#: A phone (an iPhone 12-15's CSS viewport).
PHONE = {"width": 390, "height": 844}

PAGES = [p.relative_to(HTML).as_posix() for p in built_pages()] if HTML.exists() else []
LESSONS = [p for p in PAGES if p.startswith("lessons/")]
#: Checked at a phone's width: the lessons, and the API reference (long names, signatures).
PHONE_PAGES = LESSONS + [p for p in PAGES if p.startswith("book/api/")]


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    if not (HTML / "index.html").exists():
        pytest.fail("the book is not built: run `make book`", pytrace=False)
    if not AXE.exists():
        pytest.fail("axe-core is not vendored: run `make setup`", pytrace=False)
    with serve(HTML) as url:
        yield url


@pytest.fixture(scope="module")
def tab(browser: Browser) -> Iterator[Page]:
    """The one browser tab every page of this module is loaded in (``open_page``)."""
    page = new_tab(browser)
    yield page
    page.close()


@pytest.fixture(scope="module")
def opened(tab: Page, base_url: str, request: pytest.FixtureRequest) -> Page:
    """The page ``request.param`` at a desktop's width, drawn (``open_page``), loaded once for
    every test of this module that names it: pytest runs them together (axe's first, on the
    page as loaded), then loads the next page in the same tab."""
    return open_page(tab, f"{base_url}/{request.param}")


#: A built page that only redirects (the landing page, ``index.html``) and where it sends a reader.
META_REFRESH = re.compile(r'<meta http-equiv="Refresh" content="0; url=([^"]+)"')


def _redirect_target(url: str) -> str | None:
    """The absolute URL a built page that only redirects sends a reader to, or None for a page
    of its own. ``goto`` returns on the stub's load event, which can come before the page it
    lands on has run its deferred scripts (a11y.js names the sidebar's toggles): axe must judge
    that page once loaded, not whichever of the two is there."""
    built = HTML / urlsplit(url).path.lstrip("/")
    match = META_REFRESH.match(built.read_text()[:500]) if built.is_file() else None
    return urljoin(url, match.group(1)) if match else None


def new_tab(browser: Browser) -> Page:
    """A browser tab for ``open_page``, with every request off this machine refused. One tab
    for many pages, as a reader goes from page to page: a new tab for each was a new renderer
    process that compiled the book's scripts again (about 0.4 s of Chromium's CPU a page)."""
    page = browser.new_page()
    page.route("**/*", lambda route: route.abort() if "127.0.0.1" not in route.request.url
               and not route.request.url.startswith(("data:", "blob:", "about:"))
               else route.continue_())  # fmt: skip
    return page


def open_page(page: Page, url: str, viewport: dict[str, int] | None = None) -> Page:
    """``url`` in the tab ``page`` (``new_tab``) at ``viewport``'s size (a desktop's by
    default), once its widgets and maths have drawn (axe judges what a reader meets). The last
    page is left for a blank one first, so that nothing of it is still loading or drawing into
    the new one."""
    page.goto("about:blank")
    page.set_viewport_size(viewport or {"width": 1280, "height": 900})  # type: ignore[arg-type]
    page.goto(url, wait_until="load")
    redirect = _redirect_target(url)
    if redirect:  # the landing page's meta refresh: judge the page it lands on, once loaded
        page.wait_for_url(redirect, wait_until="load", timeout=ms(20))
    if page.locator(".llm-explorer").count():  # explorer.js has set each up
        page.locator(".llm-explorer[data-ready] .explorer-view > *").first.wait_for(
            state="visible", timeout=ms(20)
        )
    typeset(page)
    return page


#: axe's rules for WCAG 2.2 level AA (and the levels below it), which the book must pass
#: entirely, and its best practices, of which it must break no serious or critical one (#45).
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
#: One page of each kind the book builds from one template or one generator: axe checks every
#: element of these against every rule. The others are checked by ``STYLE_SAMPLED`` rules only
#: on a sample of their elements, and by every other rule on every element.
WHOLE_PAGES = (
    "lessons/roofline.html",  # an executed lesson: explorers, figures, maths, package code
    "exercises/roofline/roofline.html",  # an exercise notebook's student version
    "book/notation.html",  # a book page: tables, maths, admonitions
    "book/api/tools.html",  # the API reference (book/_ext/llmmath_api.py): signatures, fields
    "index.html",  # the landing page (a redirect)
    "py-modindex.html",  # Sphinx's module index
)
#: Rules whose verdict on an element follows from its computed style: a text's colour against
#: the background behind it, at its size and weight. Two elements of one page that look the
#: same get the same verdict, so on a page outside ``WHOLE_PAGES`` these run on one element of
#: each look (``MARK_ONE_OF_EACH_LOOK``): a colour, size or background that only that page has
#: (a table, a widget's label, a kind of admonition, highlighted code) is still checked there.
#: It is most of axe's time on a long page: 122 of 189 s on the API's core page (18,500
#: elements) under load, every other rule together about 65 s.
STYLE_SAMPLED = ["color-contrast"]
SAMPLE = "data-axe-sample"
#: Marks with ``SAMPLE`` each element that holds text of its own, once per look: its colour,
#: size, weight, the nearest background colour behind it and the opacity of it and its
#: ancestors. Returns how many it marked.
MARK_ONE_OF_EACH_LOOK = """(sample) => {
    const behind = new Map();  // element -> [background colour, opacity], its ancestors' too
    const backdrop = e => {
        if (!e) return ['', 1];
        if (!behind.has(e)) {
            const s = getComputedStyle(e), [colour, opacity] = backdrop(e.parentElement);
            const own = s.backgroundColor;
            const shown = own !== 'rgba(0, 0, 0, 0)' && own !== 'transparent';
            behind.set(e, [shown ? own : colour, opacity * parseFloat(s.opacity)]);
        }
        return behind.get(e);
    };
    const seen = new Set();
    for (const e of document.body.querySelectorAll('*')) {
        if (![...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
        const s = getComputedStyle(e);
        const look = [s.color, s.fontSize, s.fontWeight, ...backdrop(e)].join('|');
        if (seen.has(look)) continue;
        seen.add(look);
        e.setAttribute(sample, '');
    }
    return seen.size;
}"""


def axe_violations(page: Page, sampled: bool = False) -> list[dict[str, Any]]:
    """axe's violations on ``page``: rule, impact, whether it is a WCAG 2.2 AA rule, help and
    the elements (as CSS targets). ``sampled``: the ``STYLE_SAMPLED`` rules on one element of
    each look, every other rule on every element."""
    page.add_script_tag(path=str(AXE))
    if sampled:
        assert page.evaluate(MARK_ONE_OF_EACH_LOOK, SAMPLE), "no text to sample on the page"
    result = page.evaluate(
        """async ([wcag, sampled, styled, sample]) => {
            const report = r => r.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                wcag: v.tags.some(t => wcag.includes(t)),
                targets: v.nodes.map(n => n.target.join(' ')).slice(0, 5),
                count: v.nodes.length,
            }));
            const tags = {runOnly: {type: 'tag', values: [...wcag, 'best-practice']},
                          resultTypes: ['violations']};
            if (!sampled) return report(await axe.run(document, tags));
            const rest = await axe.run(document, {
                ...tags, rules: Object.fromEntries(styled.map(id => [id, {enabled: false}])),
            });
            const looks = await axe.run({include: [[`[${sample}]`]]}, {
                runOnly: {type: 'rule', values: styled}, resultTypes: ['violations'],
            });
            return [...report(rest), ...report(looks)];
        }""",
        [WCAG_AA, sampled, STYLE_SAMPLED, SAMPLE],
    )
    return list(result)


def _describe(violations: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"{v['id']} ({v['impact']}, {v['count']}x: {v['help']}) e.g. {v['targets'][:2]}"
        for v in violations
    )


@pytest.mark.parametrize("opened", PAGES, indirect=True)
def test_axe_finds_nothing_serious(opened: Page, request: pytest.FixtureRequest) -> None:
    """No violation of axe's WCAG 2.2 AA rules, and no serious one of its best practices: on
    ``WHOLE_PAGES`` every rule on every element; on the others ``STYLE_SAMPLED`` on one
    element of each look and every other rule (ids, names and text alternatives, landmarks,
    headings, lists, tables, ARIA, links in text, target sizes) on every element."""
    path = request.node.callspec.params["opened"]
    violations = axe_violations(opened, sampled=path not in WHOLE_PAGES)
    blocking = [v for v in violations if v["wcag"] or v["impact"] in BLOCKING]
    assert not blocking, f"{path}: axe finds {_describe(blocking)}"


def test_every_kind_of_page_is_checked_whole() -> None:
    """``WHOLE_PAGES`` are built pages, one of each kind there is."""
    assert set(WHOLE_PAGES) <= set(PAGES), set(WHOLE_PAGES) - set(PAGES)
    kinds = {"lessons/", "exercises/", "book/api/", "book/"}
    for kind in kinds:
        assert any(p.startswith(kind) for p in WHOLE_PAGES), kind


#: Pages that show a figure of the book's own (an image under ``_images/``), outside the API
#: reference: the lessons and book pages such as the validation page.
FIGURE_PAGES = [
    p for p in PAGES if not p.startswith("book/api/") and "_images/" in (HTML / p).read_text()
]


def test_the_lessons_and_the_validation_page_are_among_the_pages_with_figures() -> None:
    assert set(LESSONS) | {"book/validation.html"} <= set(FIGURE_PAGES), FIGURE_PAGES


@pytest.mark.parametrize("path", FIGURE_PAGES)
def test_every_figure_has_a_text_alternative(path: str) -> None:
    """A figure has an ``alt`` (book/_ext/figure_alt.py), never a file name nor a copy of its
    caption, which a screen reader reads next (#45); the explorers' frames get theirs in the
    browser (a11y.js: section, settings and what the frame says)."""
    import re
    from html import unescape

    page = (HTML / path).read_text()
    images = re.findall(r'<img alt="([^"]*)" src="[^"]*_images/[^"]*"', page)
    assert images, f"{path} shows no figure"
    for alt in images:
        assert alt and not alt.endswith((".png", ".svg", ".jpg")), f"{path}: figure alt {alt!r}"
    captions = re.findall(r"<p><strong>Figure\.</strong> (.*?)</p>", page, re.S)
    captions += re.findall(r"<figcaption>(.*?)</figcaption>", page, re.S)

    def letters(text: str) -> str:  # maths shows as TeX in both, delimited differently
        return re.sub(r"[^a-z]", "", unescape(re.sub(r"<[^>]+>", "", text)).lower())

    assert captions, f"{path} has no captioned figure"
    for alt in images:
        copied = [c for c in captions if letters(c)[:40] in letters(alt)]
        assert not copied, f"{path}: alt {alt[:60]!r} repeats its caption"


# ---- the keyboard alone ---------------------------------------------------------------------
#: Marks the element that has focus with what kind of control it is ("" for anything else).
FOCUSED_CONTROL = """() => {
    const e = document.activeElement;
    if (!e) return "";
    if (e.matches('.llm-explorer input[type="range"]')) return "slider";
    if (e.matches('.llm-explorer select')) return "menu";
    if (e.matches('.llm-explorer input[type="radio"]')) return "buttons";
    return "";
}"""
#: The keys that move each kind of control: a slider one stop right, a menu the next option,
#: a group of toggles (a radio group, one Tab stop) the next choice.
KEYS = {"slider": ["ArrowRight"], "menu": ["ArrowDown"], "buttons": ["ArrowRight"]}


def frames_shown(page: Page) -> list[str]:
    """What the explorers show now: each visible frame's ``src`` and each visible panel's HTML."""
    images = page.locator(".llm-explorer .explorer-view img:visible")
    panels = page.locator(".llm-explorer .explorer-panel:visible")
    return [images.nth(i).get_attribute("src") or "" for i in range(images.count())] + [
        panels.nth(i).inner_html() for i in range(panels.count())
    ]


@pytest.mark.parametrize("opened", LESSONS, indirect=True)
def test_every_explorer_works_from_the_keyboard(
    opened: Page, request: pytest.FixtureRequest
) -> None:
    """From the top of the page, Tab alone reaches every control, and the keys a reader
    would press (arrows on a slider or a menu, Space on a button) change the figure."""
    page, path = opened, request.node.callspec.params["opened"]
    counts = {
        "slider": page.locator(".llm-explorer input[type='range']").count(),
        "menu": page.locator(".llm-explorer select").count(),
        "buttons": page.locator(".llm-explorer fieldset.explorer-buttons").count(),
    }
    assert sum(counts.values()), f"{path} has no controls"
    reached = dict.fromkeys(counts, 0)
    dead: list[str] = []
    page.locator("body").focus()
    for _ in range(2000):
        page.keyboard.press("Tab")
        kind = page.evaluate(FOCUSED_CONTROL)
        if not kind:
            if page.evaluate("() => document.activeElement === document.body") and any(
                reached.values()
            ):
                break  # focus went round the page
            continue
        reached[kind] += 1
        before = frames_shown(page)
        if kind == "buttons":  # the one Tab stop of its group is its chosen button
            checked = "() => document.activeElement.checked === true"
            assert page.evaluate(checked), f"{path}: Tab stopped on an unchosen toggle"
        for key in KEYS[kind]:
            page.keyboard.press(key)
        changed = poll(lambda: frames_shown(page) != before, 10, pause=in_page(page))  # noqa: B023
        if not changed:  # waited seconds(10) for the figure to change: this control is dead
            dead.append(f"{kind} {reached[kind]}")
        if reached == counts:
            break
    assert reached == counts, f"{path}: Tab reached {reached} of the controls {counts}"
    assert not dead, f"{path}: keys did not change the figure for {dead}"


def contrast(a: list[float], b: list[float]) -> float:
    """WCAG's contrast ratio of two sRGB colours (0-255 each)."""

    def luminance(rgb: list[float]) -> float:
        c = [v / 255 for v in rgb[:3]]
        c = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


RGB = "c => c.match(/[\\d.]+/g).slice(0, 3).map(Number)"
FOCUS_RING = f"""e => {{
    const s = getComputedStyle(e), rgb = {RGB};
    return [parseFloat(s.outlineWidth), s.outlineStyle, rgb(s.outlineColor)];
}}"""


def test_an_explorer_speaks_and_shows_focus(tab: Page, base_url: str) -> None:
    """#45 item 5, on the KV-cache lesson: readouts cannot be typed into; each row of toggles
    is a radio group, named, with one Tab stop (one name, one choice checked); focus shows as
    a ring of at least 3:1 against the page; a frame's alt says what the frame shows (its
    numbers), and a change is announced by a live region."""
    page = open_page(tab, f"{base_url}/lessons/kv_cache.html")
    readouts = page.locator(".llm-explorer .explorer-readout")
    assert readouts.count()
    editable = readouts.evaluate_all("rs => rs.filter(r => r.isContentEditable).length")
    assert editable == 0 and readouts.evaluate_all("rs => rs.every(r => r.tagName === 'OUTPUT')")
    groups = page.locator(".llm-explorer fieldset.explorer-buttons[role='radiogroup']")
    assert groups.count() == page.locator(".llm-explorer .explorer-buttons").count() >= 1
    for group in groups.all():
        radios = group.locator("input[type='radio']")
        assert radios.count() >= 2 and group.locator("input:checked").count() == 1
        assert len(set(radios.evaluate_all("rs => rs.map(r => r.name)"))) == 1
        name = group.evaluate("g => document.getElementById(g.getAttribute('aria-labelledby'))")
        assert name, "a radio group without its name"
    checked = groups.first.locator("input:checked")
    for control in [checked, page.locator(".llm-explorer select").first]:
        control.focus()
        width, style, colour = control.evaluate(FOCUS_RING)
        assert width >= 2 and style != "none", (width, style)
        assert contrast(colour, [255, 255, 255]) >= 3, colour
    frame = page.locator(".llm-explorer .explorer-view img:visible").first
    alt = frame.get_attribute("alt") or ""
    assert "It shows:" in alt and any(ch.isdigit() for ch in alt.split("It shows:")[1]), alt
    region = page.locator(".frame-announcer").first
    checked.focus()
    page.keyboard.press("ArrowRight")
    said = poll(lambda: region.text_content(), 10, pause=in_page(page))
    assert said, "the live region announced nothing"
    # The visible frame switches after the announcement is written: wait for it to match.
    wait_until(
        lambda: said in (frame.get_attribute("alt") or ""),
        f"the visible frame's alt to hold what the live region said ({said!r})",
        10,
        pause=in_page(page),
    )


# ---- a phone ---------------------------------------------------------------------------------
#: Everything on the page that reaches past the viewport's right edge and is not inside a box
#: that scrolls sideways on its own (a table's wrapper, a code block): a page wider than the
#: phone, or content cut off by an ``overflow: hidden`` column. Screen-reader-only copies
#: (MathJax's assistive MathML) and hidden drawers do not count.
TOO_WIDE = """() => {
    const W = window.innerWidth, wide = [];
    const scrollsInside = e => {
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
            const o = getComputedStyle(a).overflowX;
            if (o === 'auto' || o === 'scroll') return a.getBoundingClientRect().right <= W + 1;
        }
        return false;
    };
    for (const e of document.querySelectorAll('body *')) {
        const r = e.getBoundingClientRect();
        if (r.width === 0 || r.right <= W + 1) continue;
        if (e.closest('mjx-assistive-mml, .bd-sidebar-secondary, .bd-sidebar-primary')) continue;
        if (!e.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
        if (scrollsInside(e)) continue;
        const name = (e.className.baseVal ?? e.className).toString().split(' ')[0];
        wide.push(`${e.tagName.toLowerCase()}.${name} to x=${Math.round(r.right)}: `
                  + (e.textContent || '').trim().slice(0, 40));
    }
    return {page: document.documentElement.scrollWidth, width: W, wide: wide.slice(0, 5)};
}"""


@pytest.mark.parametrize("path", PHONE_PAGES)
def test_page_fits_a_phone(tab: Page, base_url: str, path: str) -> None:
    """At 390 x 844 the page scrolls only down: nothing sticks out past the right edge unless
    it scrolls inside its own box; explorer figures fit the column and controls stack."""
    page = open_page(tab, f"{base_url}/{path}", PHONE)
    found = page.evaluate(TOO_WIDE)
    assert found["page"] <= found["width"], f"{path} scrolls sideways on a phone: {found}"
    assert not found["wide"], f"{path} reaches past a phone's width: {found['wide']}"
    for table in page.locator("article table").all():
        if not table.is_visible():
            continue
        fits = table.evaluate(
            "t => t.getBoundingClientRect().right <= window.innerWidth + 1 || "
            "['auto', 'scroll'].includes(getComputedStyle(t.parentElement).overflowX)"
        )
        assert fits, f"{path}: a table is wider than the phone and does not scroll itself"
    for image in page.locator(".llm-explorer .explorer-view img:visible").all():
        box, column = image.evaluate(
            "i => [i.getBoundingClientRect().width, i.closest('.cell_output').clientWidth]"
        )
        assert box <= column, f"{path}: an explorer figure ({box}px) is wider than the column"
    rows = page.locator(".llm-explorer .explorer-row:visible").all()
    for row in rows:
        tops = row.evaluate(
            "r => [...r.children].filter(c => c.offsetWidth).map(c => c.getBoundingClientRect())"
            ".map(b => [b.top, b.bottom])"
        )
        stacked = all(a[1] <= b[0] + 1 for a, b in itertools.pairwise(tops))
        assert stacked, f"{path}: a row of controls is not stacked on a phone: {tops}"


def screenshots(folder: Path) -> None:
    """Each lesson at a phone's size, whole, and cut into screens (to look at)."""
    from site_support import chromium

    folder.mkdir(parents=True, exist_ok=True)
    with serve(HTML) as url, chromium() as browser:
        tab = new_tab(browser)
        for path in LESSONS:
            page = open_page(tab, f"{url}/{path}", PHONE)
            name = Path(path).stem
            page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
            print(folder / f"{name}.png", flush=True)


def report(out: Path) -> None:
    """Write axe's violations for every built page to ``out`` and print a summary."""
    from site_support import chromium

    found: dict[str, list[dict[str, Any]]] = {}
    with serve(HTML) as url, chromium() as browser:
        tab = new_tab(browser)
        for path in PAGES:
            found[path] = axe_violations(open_page(tab, f"{url}/{path}"))
            rules = ", ".join(f"{v['id']}:{v['impact']}:{v['count']}" for v in found[path])
            print(f"{path}: {rules or 'none'}", flush=True)
    out.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("--report", "--shots"):
        sys.exit(
            "usage: python tests/display/test_accessibility.py --report out.json | --shots DIR"
        )
    (report if sys.argv[1] == "--report" else screenshots)(Path(sys.argv[2]))
