"""The ``llmmath`` command (book/cli.md): choose, format and explain; never a formula."""

from llmmath.cli.command import main

__all__ = ["main"]
