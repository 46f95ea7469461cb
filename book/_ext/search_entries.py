"""Sphinx extension: the search index keeps every page's ``{index}`` entries across builds (#45).

The lessons name the concepts they teach in ``{index}`` entries, which Sphinx's search ranks
above any page that merely mentions the words (tests/display/test_search.py). Sphinx 7.4 records
a page's entries for the search index while it *writes* the page, after the environment was
saved, so a later build that rewrites only some pages dumps a search index without the others'
entries: "KV cache" fell back behind the API reference after a one-page rebuild. The entries
are also kept, since the page was read, by the ``index`` domain (saved with the environment);
this fills in, from there, every page the indexer did not see in this build, exactly as
``IndexBuilder.feed`` would have, before the search index is dumped.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.util.index_entries import split_index_msg


def entries_of(domain_entries: list[tuple[str, str, str, str, str | None]]) -> list[Any]:
    """``IndexBuilder.feed``'s explicit entries of a page, from the domain's record of them."""
    found: set[tuple[str, str, str]] = set()
    for entry_type, value, target_id, main, _category_key in domain_entries:
        try:
            parts = split_index_msg(entry_type, value)
        except ValueError:
            continue
        if entry_type in {"see", "seealso"}:
            found.add((parts[0], target_id or "", main))
        found |= {(part, target_id or "", main) for part in parts}
    return sorted(found)


def keep_entries(app: Sphinx) -> list[Any]:
    """On ``html-collect-pages``: run by the main process after every page is written and
    before ``dump_search_index``; it adds no page."""
    indexer = getattr(app.builder, "indexer", None)
    if indexer is None:
        return []
    recorded = indexer._index_entries  # IndexBuilder's {docname: entries}, dumped as indexentries
    domain = app.env.get_domain("index")
    for docname, domain_entries in domain.entries.items():  # type: ignore[attr-defined]
        if docname not in recorded and docname in app.env.all_docs:
            recorded[docname] = entries_of(domain_entries)
    return []


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-collect-pages", keep_entries)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
