"""Set up a learner's folder and start JupyterLab on it: ``make lab``, or
``python scripts/lab.py --help``.

The code is the course tooling's package, ``llmmath_course.lab`` (src/llmmath_course/lab.py,
installed with the project; the hub copies the package onto its students' servers' path, where
the student extension's my-work route calls ``copy_exercise``).
"""

import sys

from llmmath_course.lab import main

if __name__ == "__main__":
    sys.exit(main())
