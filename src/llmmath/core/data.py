"""The package's data tables (``llmmath/data/*.toml``): one loader, read once, on first use.

Every hardware, model, price and measurement number the course shows lives in one of these
files beside its source and date; modules ask for a table by name instead of reading TOML.

>>> from llmmath.core import data
>>> sorted(data.TABLES)[:3]
['api_prices', 'chip_prices', 'hardware']
>>> data.table("hardware")["H100"]["scale_up_domain_size"]
8
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any

from llmmath.core._constraints import OneOf
from llmmath.core.contracts import contract

#: Each table and what it holds.
TABLES = {
    "api_prices": "API list prices per million tokens, and measured fleet days",
    "chip_prices": "example rental prices of one chip for one hour",
    "hardware": "accelerator presets: peaks, HBM, links and their latencies",
    "measurements": "published measurements the course's floors are checked against",
    "memory_tiers": "memory tiers for a KV cache, and prompt-cache prices",
    "models": "transformer shapes from the models' published configs",
    "systems": "rack power, cooling and reach; scale-up domains; published serving deployments",
    "serving_modes": "focus machines, fast and batch modes, MTP, request lengths, NVFP4",
}


@cache
def _read(name: str) -> dict[str, Any]:
    text = resources.files("llmmath").joinpath(f"data/{name}.toml").read_text()
    return tomllib.loads(text)


@contract(name=OneOf(tuple(TABLES)))
def table(name: str) -> dict[str, Any]:
    """The parsed TOML table ``name`` (one of :data:`TABLES`); read once, then cached.

    The result is shared: callers build their own records from it and never mutate it.
    """
    return _read(name)


__all__ = ["TABLES", "table"]
