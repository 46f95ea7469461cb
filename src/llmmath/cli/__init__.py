"""The ``llmmath`` command (book/cli.md): choose, format and explain; never a formula."""

from llmmath.cli.parse_and_run import main

__all__ = ["main"]
