"""A Content-Security-Policy source for an inline script (nbgrader_config.py makes it the
``csp_sha256`` filter of nbconvert's HTML templates).

A feedback page (grading/nbconvert/feedback/mathjax.html.j2) names the hashes of its own two
inline scripts in a ``<meta http-equiv="Content-Security-Policy">``: the browser runs those and
what they load ('strict-dynamic': MathJax), and nothing else, so an ``onerror`` attribute or a
``<script>`` in a student's output or answer stays inert, wherever the page is opened (a file,
a student's server, the formgrader's).
"""

from __future__ import annotations

import base64
import hashlib


def csp_sha256(script: str) -> str:
    """``'sha256-<base64>'`` of ``script``, exactly as it stands between its tags."""
    digest = hashlib.sha256(str(script).encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"
