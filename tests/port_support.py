"""Ports for the servers the tests start (hubs, Lab, formgrader).

A port the OS hands out for ``bind(("127.0.0.1", 0))`` comes from the ephemeral range, the same
range every outgoing connection's local port comes from. Between the probe and the server's own
bind (seconds later, on a loaded machine) any client in the suite, a browser, a kernel or another
hub, can be given that port: the server then fails to start ("port 57490 is already in use", a CI
run's formgrader). So these ports are drawn below the ephemeral range, where the OS never assigns
one by itself, and each is checked free before it is handed out.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 10_000  # clear of the well-known and registered ports services here listen on


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (32768 on Linux by default)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block(size: int = 4) -> int:
    """The first of ``size`` consecutive free loopback ports, all below the ephemeral range."""
    top = ephemeral_start() - size
    if top <= LOWEST:
        raise RuntimeError(f"no room below the ephemeral range (it starts at {top + size})")
    draw = random.Random()  # its own generator: a test's seed must not make workers collide
    for _ in range(200):
        base = draw.randrange(LOWEST, top)
        if all(_free(base + offset) for offset in range(size)):
            return base
    raise RuntimeError(f"no block of {size} free ports in {LOWEST}..{top + size}")


def free_port() -> int:
    """One free loopback port below the ephemeral range."""
    return free_port_block(1)
