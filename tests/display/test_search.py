"""The book's search (#45, "Finding things"): searching a concept a lesson (or a reference
page) teaches lists that page first, as a reader sees it on search.html (Sphinx's own
searchtools.js, its scoring and order, in Chromium), not an API module that mentions the words.

Each page names the concepts it teaches in ``{index}`` entries marked main (``!``) at its top
(they are also the book's index, genindex.html); Sphinx's search scores an index entry that
matches the query above any page that merely contains its words.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote_plus, urlparse

import pytest
from playwright.sync_api import Browser, Page
from site_support import HTML, serve
from wait_support import ms

pytestmark = pytest.mark.browser

if not (HTML / "search.html").exists():
    pytest.fail("the book is not built: run `make book` (make test does it first)", pytrace=False)

# A reader's query -> the page that teaches it.
CONCEPTS = {
    "KV cache": "lessons/kv_cache",
    "roofline": "lessons/roofline",
    "arithmetic intensity": "lessons/roofline",
    "critical batch": "lessons/roofline",
    "MoE": "lessons/moe",
    "mixture of experts": "lessons/moe",
    "expert parallelism": "lessons/moe",
    "pipeline parallelism": "lessons/parallelism",
    "tensor parallelism": "lessons/parallelism",
    "overtraining": "lessons/overtraining_pricing",
    "batching": "lessons/batching",
    "batch size": "lessons/batching",
    "B*(T)": "lessons/batching",  # #45: 311th of 411
    "implied efficiency": "book/validation",
}


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve(HTML) as url:
        yield url


@pytest.fixture(scope="module")
def tab(browser: Browser) -> Iterator[Page]:
    """One tab (of the worker's browser) that every search of this module loads search.html in."""
    page = browser.new_page()
    yield page
    page.close()


# searchtools.js titles the page "Search Results" once the list is whole (or empty); its
# Search is a script-level const, not a property of window. It lists the results one by one,
# best first, so the first one listed is the first one for good.
FINISHED = "typeof Search !== 'undefined' && Search.title?.innerText === 'Search Results'"
FIRST_LISTED = "document.querySelector('#search-results ul.search li > a') !== null"


def ranked_pages(tab: Page, base_url: str, query: str, whole: bool = True) -> list[str]:
    """The pages search.html lists for ``query``, in the order it shows them (a page once,
    at its first result), once it says the search finished; ``whole=False``: as soon as it
    lists one (a long list takes seconds to show whole)."""
    tab.goto(f"{base_url}/search.html?q={quote_plus(query)}")
    done = FINISHED if whole else f"{FINISHED} || {FIRST_LISTED}"
    tab.wait_for_function(f"() => {done}", timeout=ms(60))
    links = tab.eval_on_selector_all(
        "#search-results ul.search li > a", "links => links.map(a => a.href)"
    )
    ranked: list[str] = []
    for link in links:
        path = urlparse(link).path.lstrip("/").removesuffix(".html")
        if path not in ranked:
            ranked.append(path)
    return ranked


def test_search_finds_what_it_is_asked(tab: Page, base_url: str) -> None:
    """The reading itself: a query for a word of one page only lists that page, so an empty
    list below means no result, not a search that never ran."""
    assert ranked_pages(tab, base_url, "nbgitpuller")[:1] == ["book/instructor"]


@pytest.mark.parametrize("query", CONCEPTS)
def test_the_page_that_teaches_a_concept_ranks_first(tab: Page, base_url: str, query: str) -> None:
    teacher = CONCEPTS[query]
    if ranked_pages(tab, base_url, query, whole=False)[:1] == [teacher]:
        return
    ranked = ranked_pages(tab, base_url, query)  # the whole list, to say where the page is
    assert ranked[:1] == [teacher], (
        f"searching {query!r} lists {ranked[:5]} first; {teacher} is "
        f"{'number ' + str(ranked.index(teacher) + 1) if teacher in ranked else 'not listed'}"
    )
