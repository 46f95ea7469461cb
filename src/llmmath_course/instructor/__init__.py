"""The instructor's grading steps, wrapping nbgrader (which does all the grading itself).

One module per job: ``course`` (nbgrader's API, the journal, the gradebook's plumbing),
``autograde`` (worker processes, with kernels from ``forkkernel``), ``regrade`` (hand grades
kept), ``tamper`` (the review heuristic), ``rows``, ``flags``, ``report`` and ``rubric`` (what
a person reviews), ``review`` and ``feedback`` (release gated on review), ``cli`` (the command
line, ``python scripts/instructor.py``).
"""
