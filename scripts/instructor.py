"""The instructor's grading steps: ``python scripts/instructor.py --help`` (book/instructor.md).

The code is the course tooling's package, ``llmmath_course.instructor`` (src/llmmath_course/,
installed with the project; the hub copies it beside this file in an instructor's course root).
"""

import sys

from llmmath_course.instructor.cli import main

if __name__ == "__main__":
    sys.exit(main())
