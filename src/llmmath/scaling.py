"""Training compute, the Chinchilla fit, and the training-plus-inference optimum.

Symbols (``book/notation.md``): P parameters (dense, or active for an MoE), D_train training
tokens, C_train training compute in FLOPs, D_inf lifetime inference tokens. Three results:

* **Training compute** ``C_train = 6 P D_train`` (2 forward + 4 backward FLOPs per parameter
  per token; attention left out). Its time on a cluster, ``C_train / (n * peak * MFU)``, is a
  floor at the MFU you assume (Llama 3 405B reached 38-43% of H100 peak, arXiv 2407.21783).
* **Chinchilla** (Hoffmann et al. 2022, arXiv 2203.15556): the rule of thumb "about 20 tokens
  per parameter" is read off the paper's Table 3. The paper's parametric fit
  ``L(P, D_train) = E + A / P^alpha + B / D_train^beta`` (its letters are the fields of
  :class:`ChinchillaFit`) with its *rounded* published coefficients (:data:`HOFFMANN_FIT`,
  kept as the historical fit) does NOT reproduce 20: its compute-optimal point lies at about
  50-150 tokens per parameter over 1e21-1e26 FLOPs (~90 at Chinchilla's 5.8e23). Besiroglu et
  al.'s refit of the same data (arXiv 2404.10102, :data:`BESIROGLU_FIT`) does: ~18 at 5.8e23,
  falling slowly with compute (beta > alpha). The refit is the default, :data:`CHINCHILLA_FIT`.
  The table and the fit are named apart: :data:`TABLE3` / :func:`rule_of_thumb_tokens` and
  :data:`CHINCHILLA_FIT` / :func:`compute_optimal`.
* **The inference-aware optimum** (Sardana et al. 2023, arXiv 2401.00448): at a fixed target
  loss, choose P (and so D_train) to minimise ``6 P D_train + 2 P D_inf`` FLOPs, training plus
  a lifetime of inference. RL rollouts are inference (forward passes): they add to ``D_inf``.
  The more lifetime tokens, the smaller the best model and the longer it is trained.

>>> from llmmath import scaling
>>> f"{scaling.training_flops(70e9, 15e12):.2g}"
'6.3e+24'
>>> chinchilla = (70e9, 1.4e12)  # its 70B run on 1.4T tokens, under the refit and Hoffmann's
>>> [round(float(scaling.loss(*chinchilla, fit)), 3) for fit in (scaling.CHINCHILLA_FIT,
...                                                               scaling.HOFFMANN_FIT)]
[1.974, 1.937]
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import Instance
from llmmath.core.contracts import (
    AMOUNT,
    CHIP_COUNT,
    POSITIVE,
    RESULT,
    SCALAR,
    SCALAR_POSITIVE,
    checked,
    contract,
    each,
)
from llmmath.core.hardware import Chip, get_chip
from llmmath.core.training import TRAINING_FLOPS_PER_PARAM_TOKEN, training_flops
from llmmath.core.units import SECONDS_PER_HOUR

#: FLOPs per parameter per inference token (one forward pass).
INFERENCE_FLOPS_PER_PARAM_TOKEN = 2.0


# ---- training compute, time and cost ------------------------------------------------------
@contract(flops=POSITIVE, n_chips=CHIP_COUNT)
def training_time_s(
    flops: ArrayLike,
    n_chips: ArrayLike,
    chip: str | Chip,
    mfu: ArrayLike,
    dtype: str = "bf16",
) -> float | FloatArray:
    """Wall-clock seconds: ``C_train / (n * C * MFU)``, ``C`` the chip's peak: a floor at that
    MFU (no failures, restarts or evaluation pauses); ``mfu`` is in (0, 1]."""
    C_train = as_floats(flops)
    n = as_floats(n_chips)
    u = as_floats(mfu)
    return as_output(C_train / (n * get_chip(chip).peak(dtype) * u))


@contract(flops=POSITIVE)
def training_chip_hours(
    flops: ArrayLike, chip: str | Chip, mfu: ArrayLike, dtype: str = "bf16"
) -> float | FloatArray:
    """Chip-hours ``C_train / (peak * MFU * 3600)``; the same on 1 chip or 10,000."""
    return as_output(np.asarray(training_time_s(flops, 1.0, chip, mfu, dtype)) / SECONDS_PER_HOUR)


@contract(flops=POSITIVE)
def training_cost_usd(
    flops: ArrayLike,
    chip: str | Chip,
    mfu: ArrayLike,
    usd_per_chip_hour: ArrayLike,
    dtype: str = "bf16",
) -> float | FloatArray:
    """Rent of the chip-hours: ``C_train / (peak * MFU * 3600) * price``."""
    price = as_floats(usd_per_chip_hour)
    return as_output(np.asarray(training_chip_hours(flops, chip, mfu, dtype)) * price)


# ---- Chinchilla: the table and the fit ----------------------------------------------------
@dataclass(frozen=True)
@checked(**each(SCALAR_POSITIVE, "params flops tokens"))
class Table3Row:
    """One row of Chinchilla's Table 3: a model size, its estimated compute-optimal FLOPs and
    tokens (Hoffmann et al. 2022, arXiv 2203.15556, Table 3, approach 1)."""

    params: float
    flops: float
    tokens: float

    @property
    def tokens_per_param(self) -> float:
        return self.tokens / self.params


#: Hoffmann et al. 2022, Table 3 (optimal FLOPs and tokens by size), as the reference sheet quotes.
TABLE3: tuple[Table3Row, ...] = (
    Table3Row(400e6, 1.92e19, 8.0e9),
    Table3Row(1e9, 1.21e20, 20.2e9),
    Table3Row(10e9, 1.23e22, 205.1e9),
    Table3Row(67e9, 5.76e23, 1.5e12),
    Table3Row(175e9, 3.85e24, 3.7e12),
    Table3Row(280e9, 9.90e24, 5.9e12),
    Table3Row(1e12, 1.27e26, 21.2e12),
)

#: The rule of thumb the table supports: about 20 tokens per parameter.
RULE_OF_THUMB_TOKENS_PER_PARAM = 20.0


@contract(tokens_per_param=POSITIVE)  # params: a model's parameters (contracts.PARAMS)
def rule_of_thumb_tokens(
    params: ArrayLike, tokens_per_param: ArrayLike = 20.0
) -> float | FloatArray:
    """``D_train = 20 P``: Chinchilla's rule of thumb from Table 3 (not from the fit)."""
    return as_output(as_floats(params) * as_floats(tokens_per_param))


@dataclass(frozen=True)
@checked(**each(SCALAR_POSITIVE, "E A B alpha beta"))
class ChinchillaFit:
    """``L = E + A / P^alpha + B / D_train^beta`` in nats per token (the lesson's L_inf, A_P,
    A_D, gamma_P, gamma_D)."""

    E: float
    A: float
    B: float
    alpha: float
    beta: float
    source: str = ""


#: Hoffmann et al. 2022, equation (10), approach 3, as rounded in the paper: the historical
#: fit, whose compute-optimal ratio (~90 tokens per parameter) contradicts its own Table 3.
HOFFMANN_FIT = ChinchillaFit(
    E=1.69,
    A=406.4,
    B=410.7,
    alpha=0.34,
    beta=0.28,
    source="Hoffmann et al. 2022, arXiv 2203.15556, eq. (10) (rounded published coefficients)",
)
#: Besiroglu, Erdil, Barnett and You 2024, "Chinchilla Scaling: A replication attempt" (arXiv
#: 2404.10102): approach 3 refitted to Hoffmann's data, read off the paper's Figure 4 (Huber
#: loss summed, not averaged). Standard errors: E 0.03, A 124.58, B 1293.23, alpha and beta
#: 0.02. Its compute-optimal ratio agrees with Table 3 (~20 tokens per parameter).
BESIROGLU_FIT = ChinchillaFit(
    E=1.8172,
    A=482.01,
    B=2085.43,
    alpha=0.3478,
    beta=0.3658,
    source="Besiroglu et al. 2024, arXiv 2404.10102, the refitted approach-3 coefficients",
)
#: The default fit: the refit (the published rounded values bias the optimum).
CHINCHILLA_FIT = BESIROGLU_FIT
#: What a ``fit`` parameter accepts (the common test's example: the default fit).
FIT = Instance(ChinchillaFit, example=lambda: CHINCHILLA_FIT)


@contract(tokens=POSITIVE, fit=FIT)
def loss(
    params: ArrayLike, tokens: ArrayLike, fit: ChinchillaFit = CHINCHILLA_FIT
) -> float | FloatArray:
    """The fit's loss ``E + A / P^alpha + B / D_train^beta``, ``params`` on ``tokens``."""
    P = as_floats(params)
    D_train = as_floats(tokens)
    return as_output(fit.E + fit.A / P**fit.alpha + fit.B / D_train**fit.beta)


#: Chinchilla's own run, 70B parameters on 1.4T tokens, under the default fit (to 3 decimals):
#: the over-training chapter's target loss, its figures' and its explorer's default (1.937
#: under :data:`HOFFMANN_FIT`).
CHINCHILLA_TARGET_LOSS = round(float(loss(70e9, 1.4e12)), 3)


@dataclass(frozen=True)
@checked(**each(RESULT, "params tokens loss"))
class Allocation:
    """A model size and its training tokens, with the compute and loss they imply."""

    params: FloatArray
    tokens: FloatArray
    loss: FloatArray

    @property
    def training_flops(self) -> FloatArray:
        return TRAINING_FLOPS_PER_PARAM_TOKEN * self.params * self.tokens

    @property
    def tokens_per_param(self) -> FloatArray:
        return self.tokens / self.params


@contract(flops=POSITIVE, fit=FIT)
def compute_optimal(flops: ArrayLike, fit: ChinchillaFit = CHINCHILLA_FIT) -> Allocation:
    """The fit's loss-minimising P and D_train for a budget ``C_train = 6 P D_train``.

    Closed form (Hoffmann et al. 2022, eq. 4), ``G = (alpha A / (beta B))^(1/(alpha+beta))``:
    ``P = G (C_train/6)^(beta/(alpha+beta))``, ``D_train = (C_train/6)^(alpha/(alpha+beta)) / G``.
    With the rounded published coefficients (:data:`HOFFMANN_FIT`) ``D_train / P`` comes out
    near 50-150, not 20: that fit and the paper's Table 3 disagree. The refit (the default)
    gives ~16-22 over 1e21-1e26 FLOPs. This function reports the fit it is given.
    """
    C_train = as_floats(flops)
    a, b = fit.alpha, fit.beta
    G = (a * fit.A / (b * fit.B)) ** (1.0 / (a + b))
    P = G * (C_train / TRAINING_FLOPS_PER_PARAM_TOKEN) ** (b / (a + b))
    D_train = (C_train / TRAINING_FLOPS_PER_PARAM_TOKEN) ** (a / (a + b)) / G
    return Allocation(P, D_train, np.asarray(loss(P, D_train, fit)))


def _above_floor(target_loss: ArrayLike, fit: ChinchillaFit = CHINCHILLA_FIT) -> str | None:
    """The rule of every function of a target loss (its ``where=``): no model reaches a loss
    at or below the fit's irreducible loss."""
    L = as_floats(target_loss)
    if np.all(L > fit.E):
        return None
    return (
        f"target_loss must be above the fit's irreducible loss E={fit.E}; got {float(np.min(L))!r}"
    )


@contract(target_loss=POSITIVE, fit=FIT, where=_above_floor)
def min_params_for_loss(
    target_loss: ArrayLike, fit: ChinchillaFit = CHINCHILLA_FIT
) -> float | FloatArray:
    """The smallest model that reaches ``target_loss`` even on infinite data:
    ``P_min = (A / (L - E))^(1/alpha)``."""
    L = as_floats(target_loss)
    return as_output((fit.A / (L - fit.E)) ** (1.0 / fit.alpha))


@contract(infinite_ok=True, target_loss=POSITIVE, fit=FIT, where=_above_floor)
def tokens_for_loss(
    params: ArrayLike, target_loss: ArrayLike, fit: ChinchillaFit = CHINCHILLA_FIT
) -> float | FloatArray:
    """Training tokens that bring ``params`` to ``target_loss``:
    ``D_train = (B / (L - E - A / P^alpha))^(1/beta)``; ``inf`` where ``params <= P_min`` (no
    amount of data is enough)."""
    P = as_floats(params)
    L = as_floats(target_loss)
    room = L - fit.E - fit.A / P**fit.alpha
    with np.errstate(divide="ignore", invalid="ignore"):
        D_train = (fit.B / np.where(room > 0, room, 1.0)) ** (1.0 / fit.beta)
    return as_output(np.asarray(np.where(room > 0, D_train, np.inf), dtype=np.float64))


# ---- training plus inference -------------------------------------------------------------
@dataclass(frozen=True)
@checked(**each(RESULT, "params tokens training_flops inference_flops"))
class LifetimeCompute:
    """Training and lifetime-inference FLOPs of models that all reach one target loss."""

    params: FloatArray
    tokens: FloatArray
    #: ``6 P D_train``.
    training_flops: FloatArray
    #: ``2 P D_inf``: serving plus RL rollouts, each token one forward pass.
    inference_flops: FloatArray

    @property
    def total_flops(self) -> FloatArray:
        return self.training_flops + self.inference_flops

    @property
    def tokens_per_param(self) -> FloatArray:
        return self.tokens / self.params


def _inference_tokens(
    inference_tokens: ArrayLike, rl_rollout_tokens: ArrayLike, inference_flop_weight: ArrayLike
) -> FloatArray:
    T, R = as_floats(inference_tokens), as_floats(rl_rollout_tokens)  # checked by contracts
    return np.asarray((T + R) * as_floats(inference_flop_weight), dtype=np.float64)


#: The parameters of the three functions of a lifetime (training plus inference).
_LIFETIME = dict(
    target_loss=POSITIVE,
    **each(AMOUNT, "inference_tokens rl_rollout_tokens"),
    inference_flop_weight=POSITIVE,
    fit=FIT,
)


@contract(infinite_ok=True, where=_above_floor, **_LIFETIME)
def lifetime_compute(
    params: ArrayLike,
    target_loss: ArrayLike,
    inference_tokens: ArrayLike,
    rl_rollout_tokens: ArrayLike = 0.0,
    *,
    inference_flop_weight: ArrayLike = 1.0,
    fit: ChinchillaFit = CHINCHILLA_FIT,
) -> LifetimeCompute:
    """Training ``6 P D_train(P, L)`` plus inference ``2 P (D_serve + D_RL) w`` FLOPs for a model of
    ``params`` trained to ``target_loss``; everything broadcasts.

    ``inference_flop_weight`` ``w`` counts what an inference FLOP costs in training FLOPs:
    decode runs at a lower utilisation than training, so ``w > 1`` is realistic (1 = plain
    FLOPs, as in Sardana et al.). Models too small to reach the loss get ``inf``.
    """
    N = as_floats(params)
    D = np.asarray(tokens_for_loss(N, target_loss, fit))
    T = _inference_tokens(inference_tokens, rl_rollout_tokens, inference_flop_weight)
    N, D, T = np.broadcast_arrays(N, D, T)
    return LifetimeCompute(
        params=np.array(N),
        tokens=np.array(D),
        training_flops=TRAINING_FLOPS_PER_PARAM_TOKEN * N * D,
        inference_flops=INFERENCE_FLOPS_PER_PARAM_TOKEN * N * T,
    )


_GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0


@contract(infinite_ok=True, where=_above_floor, **_LIFETIME)
def inference_aware_optimum(
    target_loss: ArrayLike,
    inference_tokens: ArrayLike,
    rl_rollout_tokens: ArrayLike = 0.0,
    *,
    inference_flop_weight: ArrayLike = 1.0,
    fit: ChinchillaFit = CHINCHILLA_FIT,
) -> LifetimeCompute:
    """The model size that reaches ``target_loss`` for the least training plus lifetime
    inference compute, ``min_P 6 P D_train(P) + 2 P D_inf`` (Sardana et al. 2023).

    ``D_inf = 0`` gives the fit's compute-optimal model at that loss. Solved per element by golden
    section on ``log P`` over ``(P_min, 1e6 P_min)`` (``6 P D_train(P)`` falls then rises, and
    ``2 P D_inf`` only rises, so the sum has one minimum there); vectorized over the loss and the
    token counts. The minimum is flat, so P is found to about 1e-7 (the square root of
    float precision); the total FLOPs to far better.
    """
    L = as_floats(target_loss)
    T = _inference_tokens(inference_tokens, rl_rollout_tokens, inference_flop_weight)
    L, T = (np.array(a, dtype=np.float64) for a in np.broadcast_arrays(L, T))
    log_min = np.log(np.asarray(min_params_for_loss(L, fit)))
    lo, hi = log_min + 1e-9, log_min + np.log(1e6)

    def total(log_n: FloatArray) -> FloatArray:
        return lifetime_compute(np.exp(log_n), L, T, fit=fit).total_flops

    x1, x2 = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
    f1, f2 = total(x1), total(x2)
    for _ in range(200):
        left = f1 < f2  # then the minimum lies in [lo, x2], else in [x1, hi]
        lo, hi = np.where(left, lo, x1), np.where(left, x2, hi)
        if np.all(hi - lo < 1e-10):
            break
        # One new point per step: the kept inner point is already one of the next pair
        # (golden ratio), so its total is reused rather than recomputed.
        x_new = np.where(left, hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo))
        f_new = total(x_new)
        x1, x2 = np.where(left, x_new, x2), np.where(left, x1, x_new)
        f1, f2 = np.where(left, f_new, f2), np.where(left, f1, f_new)
    best = lifetime_compute(np.exp(0.5 * (lo + hi)), L, T, fit=fit)
    if not np.all(np.isfinite(best.total_flops)):  # D(N) overflows at every size
        allowed = "a fit that reaches target_loss on finitely many tokens (as CHINCHILLA_FIT)"
        raise ValueError(f"scaling.inference_aware_optimum(): fit must be {allowed}; got {fit}")
    return best


@contract(infinite_ok=True, where=_above_floor, **_LIFETIME)
def overtraining_factor(
    target_loss: ArrayLike,
    inference_tokens: ArrayLike,
    rl_rollout_tokens: ArrayLike = 0.0,
    *,
    inference_flop_weight: ArrayLike = 1.0,
    fit: ChinchillaFit = CHINCHILLA_FIT,
) -> float | FloatArray:
    """Tokens per parameter of the inference-aware optimum over those of the compute-optimal
    model at the same loss: how far past "Chinchilla" (this fit's, not the rule's) it goes."""
    aware = inference_aware_optimum(
        target_loss,
        inference_tokens,
        rl_rollout_tokens,
        inference_flop_weight=inference_flop_weight,
        fit=fit,
    )
    plain = inference_aware_optimum(target_loss, 0.0, fit=fit)
    return as_output(aware.tokens_per_param / plain.tokens_per_param)


# ---- curves the figures draw ----------------------------------------------------------------
#: Lifetime inference tokens (serving + RL rollouts) of the tokens-per-parameter curve.
CURVE_DEMANDS = np.logspace(10, 16, 60)


@contract(target_loss=SCALAR_POSITIVE, where=_above_floor)
def size_sweep(target_loss: float) -> FloatArray:
    """Model sizes that can reach ``target_loss``: 1.15x to 300x the smallest that can."""
    n_min = float(min_params_for_loss(target_loss))
    return n_min * np.logspace(np.log10(1.15), np.log10(300.0), 160)


@dataclass(frozen=True)
@checked(**each(SCALAR, "target_loss inference_tokens"), **each(RESULT, "params total_flops"))
class LifetimeCurve:
    """Training + lifetime inference FLOPs of every size in :func:`size_sweep` that reaches
    one target loss, at one lifetime demand; the cheapest size is found only when asked."""

    target_loss: float
    inference_tokens: float
    params: FloatArray
    total_flops: FloatArray

    @cached_property
    def optimum(self) -> LifetimeCompute:
        """:func:`inference_aware_optimum` at this loss and demand."""
        return inference_aware_optimum(self.target_loss, self.inference_tokens)

    @property
    def best_params(self) -> float:
        return float(self.optimum.params)

    @property
    def best_tokens(self) -> float:
        return float(self.optimum.tokens)

    @property
    def best_total_flops(self) -> float:
        return float(self.optimum.total_flops)

    @property
    def best_training_flops(self) -> float:
        return float(self.optimum.training_flops)

    @property
    def best_tokens_per_param(self) -> float:
        return float(self.optimum.tokens_per_param)


@contract(target_loss=SCALAR_POSITIVE, inference_tokens=SCALAR, where=_above_floor)
def lifetime_curve(target_loss: float, inference_tokens: float) -> LifetimeCurve:
    """:func:`lifetime_compute` over :func:`size_sweep`."""
    sizes = size_sweep(target_loss)
    total = lifetime_compute(sizes, target_loss, inference_tokens).total_flops
    return LifetimeCurve(float(target_loss), float(inference_tokens), sizes, np.asarray(total))


@dataclass(frozen=True)
@checked(**each(RESULT, "demand tokens_per_param without_inference"))
class TokensPerParamCurve:
    """Tokens per parameter of the cheapest model reaching one loss, against lifetime demand,
    and the fit's ratio with no inference at all."""

    demand: FloatArray
    tokens_per_param: FloatArray
    without_inference: float


@contract(target_loss=SCALAR_POSITIVE, demand=AMOUNT, where=_above_floor)
def tokens_per_param_curve(
    target_loss: float, demand: FloatArray = CURVE_DEMANDS
) -> TokensPerParamCurve:
    """:func:`inference_aware_optimum`'s tokens per parameter over ``demand``."""
    return TokensPerParamCurve(
        demand=demand,
        tokens_per_param=np.asarray(inference_aware_optimum(target_loss, demand).tokens_per_param),
        without_inference=float(inference_aware_optimum(target_loss, 0.0).tokens_per_param),
    )


__all__ = [
    "BESIROGLU_FIT",
    "CHINCHILLA_FIT",
    "CHINCHILLA_TARGET_LOSS",
    "HOFFMANN_FIT",
    "RULE_OF_THUMB_TOKENS_PER_PARAM",
    "TABLE3",
    "Allocation",
    "ChinchillaFit",
    "LifetimeCompute",
    "LifetimeCurve",
    "Table3Row",
    "TokensPerParamCurve",
    "compute_optimal",
    "inference_aware_optimum",
    "lifetime_compute",
    "lifetime_curve",
    "loss",
    "min_params_for_loss",
    "overtraining_factor",
    "rule_of_thumb_tokens",
    "size_sweep",
    "tokens_for_loss",
    "tokens_per_param_curve",
    "training_chip_hours",
    "training_cost_usd",
    "training_flops",
    "training_time_s",
]
