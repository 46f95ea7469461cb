"""Start a course's Jupyter server without running ``node yarn.js config --json``.

``import jupyterlab.labapp``, which every server that serves JupyterLab does when it loads it,
computes ``get_app_version(AppOptions())`` at import, and ``AppOptions``'s default ``registry``
runs ``node yarn.js config --json`` (``jupyterlab.commands._yarn_config``) to read the npm
registry a build or an extension install would use: about 0.5 s of CPU and 0.3 s of wall time at
every server start, 15 s of CPU for a class of thirty starting at once. No course server builds
JupyterLab or installs an extension (``buildAvailable`` is false in their page configs, and they
are offline), so the registry is JupyterLab's default one, unread.

A server's config files run before it imports JupyterLab's extension: ``make lab``'s
(``lab/learner/jupyter_server_config.py``) and the hub's servers' (written by
``llmmath_course.hub.configs.write_configs``, with this file on their PYTHONPATH) call
``skip_yarn_config()``.
"""

from __future__ import annotations

import logging
from typing import Any


def _no_yarn_config(logger: logging.Logger | None = None) -> dict[str, dict[str, Any]]:
    """What ``_yarn_config`` returns when it cannot read yarn's configuration: no settings, so
    the registry is JupyterLab's default."""
    return {"yarn config": {}, "npm config": {}}


def skip_yarn_config() -> None:
    """Make JupyterLab read no yarn configuration in this process (see the module's doc)."""
    import jupyterlab.commands

    if not callable(getattr(jupyterlab.commands, "_yarn_config", None)):
        # JupyterLab (pinned in requirements.lock) moved it: say so rather than do nothing.
        raise RuntimeError("jupyterlab.commands._yarn_config is gone: see no_yarn_config.py")
    jupyterlab.commands._yarn_config = _no_yarn_config
