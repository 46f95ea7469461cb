"""llmmath: the tested model behind every number in the LLM Math course.

The core modules (``dtypes``, ``hardware``, ``models``, ``roofline``, ``measure``) need only
numpy; ``plots`` and ``widgets`` are leaf modules that add matplotlib and ipywidgets.
"""

from . import dtypes, hardware, models, roofline
from .hardware import Chip, get_chip, list_chips
from .models import ModelConfig, get_model, list_models

__version__ = "0.1.0"
__all__ = [
    "Chip",
    "ModelConfig",
    "dtypes",
    "get_chip",
    "get_model",
    "hardware",
    "list_chips",
    "list_models",
    "models",
    "roofline",
]
