"""llmmath.beyond.moe_dispatch: node-limited, one-copy-per-node dispatch (DeepSeek-V3's all-to-all)
and the all-to-all over compute ratio term by term (issue 32, items 4 and 6).

Expected values are counted here by enumeration or written out from the formulas: k experts of
E, split evenly over n domains of d GPUs; one copy per expert sends ``k (n-1)/n`` copies of a
token through the NIC, one copy per node sends one per other node it reaches.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from llmmath import moe
from llmmath.beyond import moe_dispatch
from llmmath.core.hardware import get_chip

HGX, NVL72 = "HGX H100 (8 GPUs)", "GB200 NVL72 (72 GPUs)"


def _enumerated(E: int, k: int, n: int, M: int) -> float:
    """Mean number of domains hit: every choice of M domains, then every k-subset of their
    experts, equally likely."""
    per = E // n
    total, count = 0.0, 0
    for chosen in itertools.combinations(range(n), M):
        experts = [e for dom in chosen for e in range(dom * per, (dom + 1) * per)]
        for picks in itertools.combinations(experts, k):
            total += len({e // per for e in picks})
            count += 1
    return total / count


@pytest.mark.parametrize(
    ("E", "k", "n", "M"), [(8, 3, 4, 4), (8, 3, 4, 2), (12, 2, 3, 3), (12, 4, 6, 3)]
)
def test_domains_reached_matches_enumeration(E: int, k: int, n: int, M: int) -> None:
    limit = M if n > M else None
    assert moe_dispatch.domains_reached(E, k, n, limit) == pytest.approx(
        _enumerated(E, k, n, M), rel=1e-12
    )


def test_domains_reached_bounds() -> None:
    # A limit can only lower the count; one domain is always reached; never more than k or M.
    free = moe_dispatch.domains_reached(256, 8, 8)
    limited = moe_dispatch.domains_reached(256, 8, 8, max_domains=4)
    assert 1 < limited < 4 < free < 8
    assert moe_dispatch.domains_reached(256, 8, 8, max_domains=1) == 1.0
    assert moe_dispatch.domains_reached(256, 1, 8) == pytest.approx(1.0)
    assert moe_dispatch.domains_reached(256, 8, 8, max_domains=99) == free


def test_domains_reached_refuses_bad_splits() -> None:
    with pytest.raises(ValueError, match="n_domains"):
        moe_dispatch.domains_reached(256, 8, 6)
    with pytest.raises(ValueError, match="max_domains"):
        moe_dispatch.domains_reached(16, 8, 8, max_domains=2)  # 4 experts, 8 asked


@pytest.mark.parametrize(("G", "domain"), [(8, HGX), (4, HGX), (64, NVL72), (32, NVL72)])
def test_inside_one_domain_it_is_the_per_expert_all_to_all(G: int, domain: str) -> None:
    # No NIC in the path: one copy per node is one copy per expert, forwarded over NVLink.
    plain = moe.expert_parallel_step("DeepSeek-V3", 8192, G, domain)
    limited = moe_dispatch.node_limited_step("DeepSeek-V3", 8192, G, domain, max_domains=4)
    assert float(limited.all_to_all_s) == pytest.approx(float(plain.all_to_all_s), rel=1e-12)
    assert float(limited.compute_s) == float(plain.compute_s)


def test_deepseek_ep64_across_hgx_nodes_by_hand() -> None:
    # 8 nodes of 8; a token's 8 experts in at most 4 of them. Per GPU 128 tokens, 7168 wide.
    a2a = moe_dispatch.node_limited_all_to_all("DeepSeek-V3", 8192, 64, HGX, max_domains=4)
    reached = 4 * (1 - np.prod([(96 - i) / (128 - i) for i in range(8)]))
    assert a2a.domains_per_token == pytest.approx(reached, rel=1e-12)
    assert a2a.network_copies_per_token == pytest.approx(reached * 7 / 8, rel=1e-12)
    assert a2a.nvlink_copies_per_token == pytest.approx(8 * 7 / 8)
    one_way = 128 * 7168 * 2
    net = one_way * reached * 7 / 8
    assert float(a2a.network_bytes_per_gpu) == pytest.approx(2 * net, rel=1e-12)
    assert float(a2a.all_to_all_s) == pytest.approx(2 * (net / 50e9 + 2.7e-6), rel=1e-12)
    # fp8 dispatch, bf16 combine: three quarters of the bf16 bytes.
    fp8 = moe_dispatch.node_limited_all_to_all(
        "DeepSeek-V3", 8192, 64, HGX, max_domains=4, dispatch_dtype="fp8"
    )
    assert float(fp8.network_bytes_per_gpu) == pytest.approx(0.75 * 2 * net, rel=1e-12)


def test_node_limit_cuts_more_than_one_copy_per_node() -> None:
    plain = moe.expert_parallel_step("DeepSeek-V3", 8192, 64, HGX)
    per_node = moe_dispatch.node_limited_step("DeepSeek-V3", 8192, 64, HGX)
    limited = moe_dispatch.node_limited_step("DeepSeek-V3", 8192, 64, HGX, max_domains=4)
    assert plain.all_to_all_s > per_node.all_to_all_s > limited.all_to_all_s
    assert limited.all_to_all_s > limited.compute_s  # still communication-bound on HGX


def test_vectorised_over_the_batch() -> None:
    batches = np.array([512.0, 8192.0])
    both = moe_dispatch.node_limited_all_to_all("DeepSeek-V3", batches, 64, HGX, max_domains=4)
    for i, B in enumerate(batches):
        one = moe_dispatch.node_limited_all_to_all("DeepSeek-V3", B, 64, HGX, max_domains=4)
        assert np.asarray(both.all_to_all_s)[i] == pytest.approx(float(one.all_to_all_s))


@pytest.mark.parametrize(
    ("G", "domain"), [(8, HGX), (16, HGX), (64, HGX), (8, NVL72), (64, NVL72), (256, HGX)]
)
def test_ratio_terms_sum_to_the_step(G: int, domain: str) -> None:
    # Item 6: b C / (3 F_e W) x k/(k+s) x f + latency is the step's ratio, not an approximation.
    step = moe.expert_parallel_step("DeepSeek-V3", 8192, G, domain)
    terms = moe_dispatch.all_to_all_ratio("DeepSeek-V3", 8192, G, domain)
    assert terms.total == pytest.approx(float(step.all_to_all_s / step.compute_s), rel=1e-12)
    assert terms.shared_factor == pytest.approx(8 / 9)
    assert 0 < terms.latency < 0.1 * terms.total


def test_ratio_terms_by_hand() -> None:
    inside = moe_dispatch.all_to_all_ratio("DeepSeek-V3", 8192, 8, HGX)
    across = moe_dispatch.all_to_all_ratio("DeepSeek-V3", 8192, 64, HGX)
    assert inside.bandwidth == pytest.approx(2 * 9.89e14 / (3 * 2048 * 450e9), rel=1e-12)
    assert across.bandwidth == pytest.approx(2 * 9.89e14 / (3 * 2048 * 50e9), rel=1e-12)
    assert (inside.link_share, across.link_share) == (7 / 8, 56 / 64)
    compute = float(moe.expert_parallel_step("DeepSeek-V3", 8192, 64, HGX).compute_s)
    assert across.latency == pytest.approx(2 * get_chip("H100").scale_out_latency_s / compute)
