"""The address released exercises import: :mod:`llmmath.core.deployment`."""

from llmmath.core.deployment import *  # noqa: F403
