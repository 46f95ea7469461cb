"""Fixtures shared by the test modules: one headless Chromium per test process.

``make test`` runs the suite on both cores (pytest-xdist, ``--dist loadfile``): each worker
process starts this browser once, on the first test that asks for it, and closes it at the end.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser
from site_support import chromium


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched
