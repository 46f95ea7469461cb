"""The address released exercises import: :mod:`llmmath.core.setting`."""

from llmmath.core.setting import *  # noqa: F403
