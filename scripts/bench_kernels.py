"""CPU cost of one grading kernel: a fresh ``ipykernel_launcher`` against a fork (``forkkernel``).

    python scripts/bench_kernels.py -n 5

Starts and stops ``n`` kernels each way and runs the exercise's plot-cell import
(``import matplotlib.pyplot``) in each, printing the CPU seconds per kernel: start and stop
(the kernel's own process, plus the fork server's share), and the import measured inside the
kernel. CPU time, unlike wall time, barely depends on how busy the machine is.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
from typing import Any

IMPORT = (
    "import time as _t; _c = _t.process_time(); import matplotlib.pyplot; "
    "print(_t.process_time() - _c)"
)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def one_kernel(manager_class: type) -> float:
    km = manager_class()
    await km.start_kernel()
    client = km.client()
    client.start_channels()
    await client.wait_for_ready(timeout=120)
    reply = await client.execute_interactive(IMPORT, output_hook=_collect, timeout=120)
    assert reply["content"]["status"] == "ok", reply
    client.stop_channels()
    await km.shutdown_kernel(now=False)
    return _OUT.pop()


_OUT: list[float] = []


def _collect(msg: dict[str, Any]) -> None:
    if msg["msg_type"] == "stream":
        _OUT.append(float(msg["content"]["text"]))


def measure(kind: str, n: int) -> dict[str, float]:
    from jupyter_client.manager import AsyncKernelManager

    server_cpu = 0.0
    if kind == "fork":
        from llmmath_course.instructor.forkkernel import ForkServer, _kernel_manager_class

        manager = _kernel_manager_class()
        # The server starts once per worker: measure it alone, to leave it out of each kernel.
        start = children_cpu()
        ForkServer.instance().close()
        server_cpu = children_cpu() - start
        ForkServer._instance = None
    else:
        manager = AsyncKernelManager
    before = children_cpu()
    imports = [asyncio.run(one_kernel(manager)) for _ in range(n)]
    if kind == "fork":
        ForkServer.instance().close()  # its reaped kernels' CPU reaches us when it exits
    total = (children_cpu() - before - server_cpu) / n
    mpl = sum(imports) / n
    figures = {"kernel_cpu_s": round(total - mpl, 3), "matplotlib_import_cpu_s": round(mpl, 3)}
    if kind == "fork":
        figures["fork_server_start_cpu_s_once_per_worker"] = round(server_cpu, 3)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5)
    args = parser.parse_args()
    figures = {kind: measure(kind, args.n) for kind in ("fresh", "fork")}
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
