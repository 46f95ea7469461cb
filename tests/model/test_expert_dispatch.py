"""Group-limited routing (DeepSeek's n_group/topk_group) and the EP dispatch a deployment
counts (#42): the model records the routing, the deployment names its dispatch."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from llmmath.core import serving
from llmmath.core.deployment import Deployment, dispatch_words, routed_domain_limit
from llmmath.core.hf_config import read_checkpoint
from llmmath.core.models import get_model
from llmmath.core.placement import Layout

CONFIGS = Path(__file__).parents[1] / "data" / "hf_configs"


def test_deepseek_v3_routes_from_4_of_8_groups_as_its_config_says() -> None:
    preset = get_model("DeepSeek-V3")
    read, _, _ = read_checkpoint(CONFIGS / "DeepSeek-V3" / "config.json")
    config = json.loads((CONFIGS / "DeepSeek-V3" / "config.json").read_text())
    for spec in (preset, read):
        assert (
            (spec.expert_groups, spec.expert_groups_per_token)
            == (
                config["n_group"],
                config["topk_group"],
            )
            == (8, 4)
        )
    assert get_model("Mixtral-8x7B").expert_groups == 0


def test_greedy_routing_ignores_its_groups(tmp_path: Path) -> None:
    config = json.loads((CONFIGS / "DeepSeek-V3" / "config.json").read_text())
    config["topk_method"] = "greedy"  # DeepSeek-V2-Lite's: n_group is not used
    (tmp_path / "config.json").write_text(json.dumps(config))
    spec, _, _ = read_checkpoint(tmp_path / "config.json")
    assert spec.expert_groups == spec.expert_groups_per_token == 0


def test_bad_groups_are_refused_naming_the_field() -> None:
    deepseek = get_model("DeepSeek-V3")
    with pytest.raises(ValueError, match="go together"):
        dataclasses.replace(deepseek, expert_groups_per_token=0)
    assert dataclasses.replace(deepseek, n_experts=259).expert_groups == 8  # EP7's copies
    with pytest.raises(ValueError, match="exceeds expert_groups"):
        dataclasses.replace(deepseek, expert_groups_per_token=9)
    with pytest.raises(ValueError, match="n_experts is 0"):
        dataclasses.replace(get_model("Llama-3-8B"), expert_groups=2, expert_groups_per_token=1)


def test_a_token_reaches_at_most_the_domains_of_its_groups() -> None:
    deepseek = get_model("DeepSeek-V3")
    # one group a node (V3's training layout): 4 nodes; two nodes: no limit; 16: 4 groups
    # spanning two nodes each
    assert [routed_domain_limit(deepseek, n) for n in (1, 2, 4, 8, 16, 18)] == [1, 2, 4, 4, 8, 9]
    assert routed_domain_limit(get_model("Mixtral-8x7B"), 8) is None


def test_the_dispatch_is_part_of_the_deployment_and_its_words() -> None:
    ep64 = Deployment("DeepSeek-V3", "H100", 64, layout=Layout(ep=64), weight_dtype="fp8")
    limited = dataclasses.replace(ep64, expert_dispatch="node_limited", dispatch_dtype="fp8")
    assert float(serving.decode_step(limited, 4096, 4096).ep_s) < float(
        serving.decode_step(ep64, 4096, 4096).ep_s
    )
    assert ep64.dispatch_words == "one copy per routed expert in bf16"
    assert limited.dispatch_words == (
        "one copy per node reached (experts from 4 of 8 groups) with fp8 dispatch and bf16 combine"
    )
    assert dispatch_words("Mixtral-8x7B", "node_limited", None, "bf16") == (
        "one copy per node reached in bf16"
    )
    with pytest.raises(ValueError, match="expert_dispatch"):
        dataclasses.replace(ep64, expert_dispatch="per_node")
