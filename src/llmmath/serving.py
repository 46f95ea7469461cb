"""The address released exercises import: :mod:`llmmath.core.serving`."""

from llmmath.core.serving import *  # noqa: F403
