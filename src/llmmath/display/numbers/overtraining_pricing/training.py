"""The over-training and pricing chapter's numbers, first part (``numbers.overtraining_pricing``
gathers them): what a training run costs, Chinchilla's fit against its refit, and training plus
serving (the lifetime optimum, the RL factor)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmmath import batching, scaling
from llmmath.core import serving
from llmmath.core.deployment import Deployment
from llmmath.core.hardware import get_chip
from llmmath.core.models import get_model
from llmmath.core.training import training_flops
from llmmath.core.units import scientific
from llmmath.display.numbers import shown

USD_PER_CHIP_HOUR = 2.0  # the chapter's example rent


LLAMA_PARAMS, LLAMA_TOKENS = 70e9, 15e12  # Llama-3-70B's training run


@dataclass(frozen=True)
class TrainingRun:
    """What a training run costs: Llama-3-70B on 15T tokens, 16,384 H100 at 40% MFU."""

    llama_flops: str
    llama_days: str
    llama_rent_musd: str  # at USD 2 per H100-hour
    llama_tpp: str  # tokens per parameter
    llama_tpp_x: str  # over the rule of thumb's 20


@dataclass(frozen=True)
class Chinchilla:
    """A table and a fit that disagree: Hoffmann's rounded fit against Besiroglu's refit."""

    loss_70b: str  # Chinchilla (70B on 1.4T) under the rounded fit
    fit_n_chinchilla_b: str
    fit_tpp_chinchilla: str
    fit_tpp_1e21: str
    fit_tpp_1e26: str
    refit_e: str
    refit_a: str
    refit_b: str
    refit_alpha: str
    refit_beta: str
    refit_n_b: str
    refit_tpp: str
    refit_tpp_1e21: str
    refit_tpp_1e26: str


@dataclass(frozen=True)
class Lifetime:
    """Training plus serving: the cheapest model for Chinchilla's loss under the refit."""

    target: float  # Chinchilla 70B on 1.4T tokens, under the refit
    total_demands: tuple[float, ...]  # lifetime tokens, one curve each in the figure
    figure_caption: str
    plain: scaling.LifetimeCompute  # no inference
    served: scaling.LifetimeCompute  # 1e13 lifetime tokens
    heavy: scaling.LifetimeCompute  # 1e14 lifetime tokens
    new: tuple[scaling.LifetimeCompute, ...]  # the three optima under the refit
    old: tuple[scaling.LifetimeCompute, ...]  # the same under Hoffmann's fit
    moved: tuple[float, ...]  # refit's optimum size over Hoffmann's, each demand
    llama_demand_value: float  # lifetime tokens that make 70B cheapest for Llama-3's loss
    old_llama_demand_value: float  # the same under Hoffmann's fit
    target_text: str
    plain_n_b: str
    plain_tpp: str
    served_n_b: str
    served_tpp: str
    heavy_n_b: str
    heavy_tpp_0f: str
    heavy_tpp: str
    heavy_tpp_x: str  # over the rule of thumb's 20
    heavy_factor: str  # over the fit's own compute-optimal ratio at the same loss
    saving_heavy: str
    heavy_train_extra: str
    llama_loss: str
    llama_demand: str
    old_plain_b: str
    old_served_b: str
    old_heavy_b: str
    old_plain_tpp: str
    old_served_tpp: str
    old_heavy_tpp: str
    moved_lo: str
    moved_hi: str
    old_llama_demand: str
    demand_moved: str


@dataclass(frozen=True)
class Reinforcement:
    """The RL factor: 1e13 serving and 1e13 rollout tokens, inference FLOPs weighted 3."""

    params_b: str
    tokens_per_param: str
    factor: str
    batch: str  # the decode batch whose MFU is a third of training's 40%
    decode_mfu_pct: str
    batch1_mfu_pct: str
    batch1_weight: str


def build_training_run() -> TrainingRun:
    flop = training_flops(LLAMA_PARAMS, LLAMA_TOKENS)
    seconds = scaling.training_time_s(flop, 16384, "H100", 0.40)
    rent = scaling.training_cost_usd(flop, "H100", 0.40, USD_PER_CHIP_HOUR)
    return TrainingRun(
        llama_flops=scientific(float(flop), 3),
        llama_days=shown.fixed(seconds / 86400, 1),
        llama_rent_musd=shown.fixed(rent / 1e6, 1),
        llama_tpp=shown.fixed(LLAMA_TOKENS / LLAMA_PARAMS),
        llama_tpp_x=shown.fixed(
            LLAMA_TOKENS / LLAMA_PARAMS / scaling.RULE_OF_THUMB_TOKENS_PER_PARAM
        ),
    )


def build_chinchilla() -> Chinchilla:
    hoffmann = scaling.HOFFMANN_FIT  # the paper's rounded coefficients, the section's subject
    at_chinchilla = scaling.compute_optimal(5.76e23, hoffmann)
    # Besiroglu et al.'s refit of the same data: the package's default from here on.
    refit = scaling.CHINCHILLA_FIT
    refit_at_chinchilla = scaling.compute_optimal(5.76e23)
    return Chinchilla(
        loss_70b=shown.fixed(scaling.loss(70e9, 1.4e12, hoffmann), 3),
        fit_n_chinchilla_b=shown.fixed(at_chinchilla.params / 1e9),
        fit_tpp_chinchilla=shown.fixed(at_chinchilla.tokens_per_param),
        fit_tpp_1e21=shown.fixed(scaling.compute_optimal(1e21, hoffmann).tokens_per_param),
        fit_tpp_1e26=shown.fixed(scaling.compute_optimal(1e26, hoffmann).tokens_per_param),
        refit_e=shown.fixed(refit.E, 3),
        refit_a=shown.fixed(refit.A),
        refit_b=shown.fixed(refit.B),
        refit_alpha=shown.fixed(refit.alpha, 3),
        refit_beta=shown.fixed(refit.beta, 3),
        refit_n_b=shown.fixed(refit_at_chinchilla.params / 1e9),
        refit_tpp=shown.fixed(refit_at_chinchilla.tokens_per_param),
        refit_tpp_1e21=shown.fixed(scaling.compute_optimal(1e21).tokens_per_param),
        refit_tpp_1e26=shown.fixed(scaling.compute_optimal(1e26).tokens_per_param),
    )


DEMANDS = np.logspace(11, 17, 480)  # lifetime tokens searched for the one that makes 70B best


def _demand_for_70b(loss: float, fit: scaling.ChinchillaFit) -> float:
    """The lifetime demand at which 70B is the cheapest way to ``loss`` (on DEMANDS' grid)."""
    sizes = scaling.inference_aware_optimum(loss, DEMANDS, fit=fit).params
    return float(DEMANDS[np.argmin(np.abs(np.log(sizes / 70e9)))])


def build_lifetime() -> Lifetime:
    target = scaling.CHINCHILLA_TARGET_LOSS  # Chinchilla 70B on 1.4T tokens, under the refit
    plain = scaling.inference_aware_optimum(target, 0.0)
    served = scaling.inference_aware_optimum(target, 1e13)
    heavy = scaling.inference_aware_optimum(target, 1e14)
    heavy_tpp = float(heavy.tokens_per_param)
    as_served = scaling.lifetime_compute(plain.params, target, 1e14)
    llama_fit_loss = float(scaling.loss(70e9, 15e12))
    llama_demand = _demand_for_70b(llama_fit_loss, scaling.CHINCHILLA_FIT)
    # The same numbers under Hoffmann's rounded fit (at its own Chinchilla loss, 1.937): how
    # much the refit moves them.
    hoffmann = scaling.HOFFMANN_FIT
    old_target = round(float(scaling.loss(70e9, 1.4e12, hoffmann)), 3)
    old = tuple(
        scaling.inference_aware_optimum(old_target, d, fit=hoffmann) for d in (0.0, 1e13, 1e14)
    )
    new = (plain, served, heavy)
    moved = tuple(float(n.params / o.params) for n, o in zip(new, old, strict=True))
    old_llama_demand = _demand_for_70b(float(scaling.loss(70e9, 15e12, hoffmann)), hoffmann)
    total_demands = (0.0, 1e12, 1e13, 1e14)
    return Lifetime(
        target=target,
        total_demands=total_demands,
        figure_caption=(
            "Training plus lifetime inference FLOPs of every model that reaches loss "
            f"{target} under the Chinchilla fit, one curve per lifetime demand; dots mark each "
            "curve's minimum and its tokens per parameter. Left of the minimum a model is too "
            "small (it needs absurd amounts of data); right of it, too big to serve. More "
            "demand moves the minimum left."
        ),
        plain=plain,
        served=served,
        heavy=heavy,
        new=new,
        old=old,
        moved=moved,
        llama_demand_value=llama_demand,
        old_llama_demand_value=old_llama_demand,
        target_text=shown.fixed(target, 3),
        plain_n_b=shown.fixed(plain.params / 1e9),
        plain_tpp=shown.fixed(plain.tokens_per_param),
        served_n_b=shown.fixed(served.params / 1e9),
        served_tpp=shown.fixed(served.tokens_per_param),
        heavy_n_b=shown.fixed(heavy.params / 1e9, 1),
        heavy_tpp_0f=shown.fixed(heavy_tpp),
        heavy_tpp=shown.grouped(heavy_tpp),
        heavy_tpp_x=shown.fixed(heavy_tpp / scaling.RULE_OF_THUMB_TOKENS_PER_PARAM),
        # Against the fit's own compute-optimal ratio at the same loss (the RL section's
        # yardstick), not the rule of thumb's 20, which this fit does not give.
        heavy_factor=shown.fixed(scaling.overtraining_factor(target, 1e14)),
        saving_heavy=shown.percent(1 - heavy.total_flops / as_served.total_flops),
        heavy_train_extra=shown.fixed(heavy.training_flops / plain.training_flops, 1),
        llama_loss=shown.fixed(llama_fit_loss, 3),
        llama_demand=scientific(llama_demand),
        old_plain_b=shown.fixed(old[0].params / 1e9),
        old_served_b=shown.fixed(old[1].params / 1e9),
        old_heavy_b=shown.fixed(old[2].params / 1e9),
        old_plain_tpp=shown.grouped(old[0].tokens_per_param),
        old_served_tpp=shown.grouped(old[1].tokens_per_param),
        old_heavy_tpp=shown.grouped(old[2].tokens_per_param),
        moved_lo=shown.fixed(min(moved), 1),
        moved_hi=shown.fixed(max(moved), 1),
        old_llama_demand=scientific(old_llama_demand),
        demand_moved=shown.fixed(llama_demand / old_llama_demand),
    )


TRAINING_MFU = 0.40


def build_reinforcement(lifetime: Lifetime) -> Reinforcement:
    target = lifetime.target
    rl = scaling.inference_aware_optimum(target, 1e13, 1e13, inference_flop_weight=3.0)
    factor = scaling.overtraining_factor(target, 1e13, 1e13, inference_flop_weight=3.0)
    # The weight 3 read as an MFU: decode at a third of training's 40%, and the floor's batch
    # there.
    node = Deployment(get_model("Llama-3-70B"), get_chip("H100"), 8)
    batches = np.arange(1.0, 301.0)
    steps = serving.decode_step(node, batches, 2048)
    mfus = np.asarray(batching.mfu(steps.flops, steps.stage_s, node))
    decode_mfu = TRAINING_MFU / 3.0
    return Reinforcement(
        params_b=shown.fixed(rl.params / 1e9, 1),
        tokens_per_param=shown.fixed(rl.tokens_per_param),
        factor=shown.fixed(factor),
        batch=shown.fixed(batches[np.argmin(np.abs(mfus - decode_mfu))]),
        decode_mfu_pct=shown.fixed(100 * decode_mfu),
        batch1_mfu_pct=shown.fixed(100 * float(mfus[0]), 2),
        batch1_weight=shown.grouped(TRAINING_MFU / float(mfus[0])),
    )
