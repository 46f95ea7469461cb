"""What the ``llmmath`` command's tests share: running it, a private chip registry, and a
made-up chip's file."""

from __future__ import annotations

import pytest

from llmmath.cli import parse_and_run as cli
from llmmath.core import hardware

#: A chip that is not a preset, in data/hardware.toml's shape (``--chip-file``).
HALF_CHIP_TOML = (
    '[Half]\nfull_name = "a made-up chip with 40 GB"\n'
    "peak_flop_per_s = { bf16 = 5e14 }\nhbm_bytes = 40e9\n"
    "hbm_bandwidth_bytes_per_s = 2e12\nscale_up_bandwidth_bytes_per_s = 2e11\n"
    "scale_up_domain_size = 4\nscale_out_bandwidth_bytes_per_s = 2.5e10\n"
    "scale_up_latency_s = 1e-6\nscale_out_latency_s = 3e-6\n"
    'latency_source = "test"\nsource = "test"\nsource_date = "2026-12"\n'
)


@pytest.fixture(autouse=True)
def private_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of the chip registry, so a --chip-file in one test cannot leak into another
    (autouse in every module that imports it)."""
    monkeypatch.setattr(hardware, "_CHIPS", dict(hardware._CHIPS))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``llmmath ARGV``: its exit status, stdout and stderr."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
