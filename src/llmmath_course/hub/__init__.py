"""A JupyterHub class on one machine (``make hub``; ``python scripts/hub.py --help``), by job:

- ``environment``: where the servers run from (``HUB_HOME``: ``make hub-env``, ``build_env``,
  ``prune`` of versions nothing runs from), the hub's proxy, the checkout (``REPO``);
- ``accounts``: the class's OS accounts (``add_user``, ``remove_user``, ``processes_of``);
- ``configs``: each server's Jupyter settings and the instructor's course root;
- ``running``: ``running_hub``, a started hub (``Hub``), stopped on leaving;
- ``exchange``: the exchange on a filesystem of its own, of a fixed size (students' writes
  there bounded; each student's private /tmp is hub/private-tmp.sh);
- ``backup``: the whole class in one archive (``make hub-backup``);
- ``cli``: the command line ``scripts/hub.py`` runs.

Standard library only, like the rest of ``llmmath_course``: ``make hub-env`` and ``make
hub-backup`` run it with the system Python.
"""
