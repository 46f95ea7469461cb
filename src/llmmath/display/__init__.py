"""What the reader sees: page helpers for the lessons (``pages``), tables, figures
(``plots``, matplotlib) and explorers (``widgets``, ipywidgets). Never model arithmetic."""
