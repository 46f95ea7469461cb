"""llmmath: the tested model behind every number in the LLM Math course.

Its layers, each importing only from those below it (pyproject.toml's import-linter contracts;
CONTRIBUTING.md draws them):

- ``llmmath.display`` (pages, tables, ``plots`` with matplotlib, ``widgets`` with ipywidgets)
  and ``llmmath.cli`` (the ``llmmath`` command);
- ``llmmath.validation``: the floors beside published measurements;
- ``llmmath.beyond``: the sections that go past the floor;
- the chapters' modules, here at the top (``llmmath.batching``, ``llmmath.kv_cache``, ...);
- ``llmmath.core``: numpy only - chips, models, the roofline, a deployment and its steps.

The chip and model presets are at hand here: ``llmmath.get_chip("H100")``.
"""

from llmmath.core.hardware import Chip, get_chip, list_chips
from llmmath.core.models import ModelConfig, get_model, list_models

__version__ = "0.1.0"
__all__ = ["Chip", "ModelConfig", "get_chip", "get_model", "list_chips", "list_models"]
