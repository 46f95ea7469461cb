"""The lessons' numbers: one module per chapter, named as the chapter (``numbers.roofline``
for ``lessons/roofline.md``), that computes every value its page shows from the package.

A chapter's module has one entry point, ``numbers()``, cached, returning a frozen dataclass
with one field per section of the page (each a frozen dataclass of that section's values).
Each value a sentence shows comes with its shown string, written by the helpers of
:mod:`llmmath.display.numbers.shown` (GB, ms, TFLOP/s, %, counts). The lesson has one hidden
setup cell::

    from llmmath.display import numbers
    n = numbers.roofline.numbers()

and its prose reads ``{eval}`n.decode.h100_tflops```. The arithmetic that teaches stays on the
page as ``pages.source(...)`` cells; the rest lives here, typed and linted with the package,
and the tests read it by name (``tests/claims/<chapter>.py``). A long chapter's numbers are a
package, ``numbers/<chapter>/``, its sections in modules of their own and ``numbers()`` in its
``__init__``; it is named and read the same way.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from llmmath.core._constraints import Instance
from llmmath.core.contracts import contract
from llmmath.display.numbers import shown

__all__ = ["has_numbers", "shown"]


@contract(chapter=Instance(str))
def has_numbers(chapter: str) -> bool:
    """True where ``chapter``'s numbers live here (a module or a package named as it)."""
    if not chapter.isidentifier() or chapter == "shown":
        return False
    return importlib.util.find_spec(f"{__name__}.{chapter}") is not None


def __getattr__(name: str) -> ModuleType:
    """``numbers.<chapter>``: the chapter's module, imported when first named."""
    if name.startswith("_"):
        raise AttributeError(name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
        raise AttributeError(
            f"llmmath.display.numbers has no chapter {name!r}: a chapter's numbers live in "
            f"src/llmmath/display/numbers/<chapter>.py, named as its lesson"
        ) from None
