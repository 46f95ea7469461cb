"""Rewrite the MyST notebook pages (lessons/*.md, book/*.md) in the form jupytext saves them.

    python scripts/normalize_pages.py           # rewrite the pages that differ
    python scripts/normalize_pages.py --check   # list them, exit 1 if any

The code is ``llmmath_course.page_layout`` (src/llmmath_course/, installed with the project).
"""

import sys

from llmmath_course.page_layout import main

if __name__ == "__main__":
    sys.exit(main())
