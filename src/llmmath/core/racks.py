"""Racks: scale-up domains, the chips joined by fast links (NVLink, ICI), as data.

A scale-up domain is a preset chip of ``data/hardware.toml`` whose ``scale_up_domain_size``
and link bandwidths describe it: an HGX node of 8 GPUs, a GB200 NVL72 rack, a TPU pod. The MoE
chapter asks what fits inside one (:mod:`llmmath.moe`); past its edge every byte crosses the
slower scale-out network.

>>> from llmmath.core import racks
>>> racks.get_domain("GB200 NVL72 (72 GPUs)").n_chips
72
"""

from __future__ import annotations

from dataclasses import dataclass

from llmmath.core._constraints import AnyOf, Instance, OneOf
from llmmath.core.contracts import NAME, checked, contract
from llmmath.core.hardware import CHIP, Chip, get_chip, list_chips

#: The scale-up domains of the course, each the preset chip of ``data/hardware.toml`` whose
#: ``scale_up_domain_size`` and link bandwidths describe it.
DOMAIN_PRESETS: dict[str, str] = {
    "HGX A100 (8 GPUs)": "A100",
    "HGX H100 (8 GPUs)": "H100",
    "HGX B200 (8 GPUs)": "B200",
    "GB200 NVL72 (72 GPUs)": "GB200-NVL72",
    "TPU v5e pod (256 chips)": "TPU-v5e",
    "TPU v5p pod (8,960 chips)": "TPU-v5p",
}


@dataclass(frozen=True)
@checked(name=NAME, chip=Instance(Chip))
class ScaleUpDomain:
    """One scale-up domain: ``n_chips`` chips joined by fast links, and the slower
    scale-out network every chip has to the world outside it."""

    name: str
    chip: Chip

    @property
    def n_chips(self) -> int:
        return self.chip.scale_up_domain_size

    @property
    def hbm_bytes(self) -> float:
        """HBM of the whole domain."""
        return self.n_chips * self.chip.hbm_bytes

    @property
    def scale_up_bandwidth_bytes_per_s(self) -> float:
        """Per chip, one direction (NVLink, ICI)."""
        return self.chip.scale_up_bandwidth_bytes_per_s

    @property
    def scale_out_bandwidth_bytes_per_s(self) -> float:
        """Per chip, one direction (InfiniBand/Ethernet NICs, TPU DCN)."""
        return self.chip.scale_out_bandwidth_bytes_per_s

    @property
    def bandwidth_ratio(self) -> float:
        """How many times faster a chip talks inside the domain than out of it."""
        return self.chip.scale_up_to_scale_out_ratio

    @contract()
    def peak_flop_per_s(self, dtype: str = "bf16") -> float:
        """Dense peak of the whole domain."""
        return self.n_chips * self.chip.peak(dtype)


@contract()
def list_domains() -> list[str]:
    """Names of the scale-up domain presets."""
    return list(DOMAIN_PRESETS)


#: A domain parameter: a :class:`ScaleUpDomain`, a chip, or a domain or chip name.
DOMAIN = AnyOf(
    (OneOf(lambda: [*DOMAIN_PRESETS, *list_chips()], "domain"), Instance(ScaleUpDomain), CHIP)
)


@contract(domain=DOMAIN)
def get_domain(domain: str | Chip | ScaleUpDomain) -> ScaleUpDomain:
    """A domain by preset name (``"GB200 NVL72 (72 GPUs)"``), by chip name (``"H100"``), from
    a :class:`~llmmath.core.hardware.Chip`, or passed straight through."""
    if isinstance(domain, ScaleUpDomain):
        return domain
    if isinstance(domain, Chip):
        return ScaleUpDomain(f"{domain.name} ({domain.scale_up_domain_size:,} per domain)", domain)
    if domain in DOMAIN_PRESETS:
        return ScaleUpDomain(domain, get_chip(DOMAIN_PRESETS[domain]))
    return get_domain(get_chip(domain))


__all__ = ["DOMAIN_PRESETS", "ScaleUpDomain", "get_domain", "list_domains"]
