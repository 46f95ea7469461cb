"""A JupyterHub class on one machine (``make hub``): ``sudo python scripts/hub.py --help``.

The code is the course tooling's package, ``llmmath_course.hub`` (src/llmmath_course/hub/).
``make hub-env`` and ``make hub-backup`` run this with the system Python, where the project is
not installed: src/ is put first on the path so the checkout's own package is the one imported.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from llmmath_course.hub.cli import main

if __name__ == "__main__":
    sys.exit(main())
