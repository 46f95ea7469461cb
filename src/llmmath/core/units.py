"""Unit constants used across the package: one place, so no module redefines them."""

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0
TOKENS_PER_MILLION = 1e6

__all__ = ["SECONDS_PER_DAY", "SECONDS_PER_HOUR", "TOKENS_PER_MILLION"]
