"""Transformer shapes and what follows from them: parameters, FLOPs and KV-cache bytes per token.

Symbols follow the scaling book: L layers, D d_model, F d_ff, N query heads, K KV heads,
H head dim, V vocabulary, E experts, k experts per token.

>>> from llmmath.core import models
>>> llama = models.get_model("Llama-3-70B")
>>> f"{llama.total_params:.4g}"
'7.055e+10'
>>> llama.kv_bytes_per_token("bf16")
327680.0
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike

from llmmath.core import data
from llmmath.core._checks import FloatArray, as_floats, as_output
from llmmath.core._constraints import AnyOf, Count, Instance, OneOf, Optional, PathLike, Real
from llmmath.core._model_rules import check_model_fields
from llmmath.core.contracts import AMOUNT, FLAG, NAME, checked, contract, each, refuse, vocabulary
from llmmath.core.dtypes import BYTES_PER_ELEMENT, bytes_per_element

_COUNT_FIELDS = ("n_layers", "d_model", "d_ff", "n_heads", "n_kv_heads", "head_dim", "vocab_size")
_OPTIONAL_COUNT_FIELDS = (
    "n_experts",
    "experts_per_token",
    "n_shared_experts",
    "d_ff_expert",
    "n_dense_layers",
    "expert_groups",
    "expert_groups_per_token",
    "mla_kv_lora_rank",
    "mla_q_lora_rank",
    "mla_rope_head_dim",
    "mla_v_head_dim",
    "index_topk",
    "index_n_heads",
    "index_head_dim",
    "index_key_bytes",
)


@dataclass(frozen=True)
@checked(
    inside=True,  # a model read from a table or a config.json is checked as one built outside
    name=NAME,
    **each(Count(), "n_layers d_model d_ff n_heads n_kv_heads head_dim vocab_size max_context"),
    tied_embeddings=FLAG,
    parallel_block=FLAG,
    **each(
        Count(low=0, high=1 << 16), "n_experts experts_per_token n_shared_experts n_dense_layers"
    ),
    **each(Count(low=0, high=1 << 16), "expert_groups expert_groups_per_token"),
    **each(Count(low=0), "d_ff_expert mla_kv_lora_rank mla_q_lora_rank mla_rope_head_dim"),
    mla_v_head_dim=Count(low=0),
    **each(Count(low=0), "sliding_window local_per_global global_head_dim global_kv_heads"),
    global_k_eq_v=FLAG,
    **each(Count(low=0), "n_state_layers state_layer_params state_elements_per_layer"),
    n_mlp_only_layers=Count(low=0),
    gated_mlp=FLAG,
    state_dtype=Optional(OneOf(tuple(BYTES_PER_ELEMENT), "state_dtype")),
    attention_output_gate=FLAG,
    **each(Count(low=0), "n_kv_shared_layers per_layer_input_dim per_layer_vocab_size"),
    double_wide_shared_mlp=FLAG,
    **each(Count(low=0), "index_topk index_n_heads index_head_dim index_key_bytes"),
)
class ModelConfig:
    """A decoder-only transformer with SwiGLU MLPs (or two-matrix ones, ``gated_mlp``);
    optional MoE layers, MLA attention, sparse attention and hybrid state layers."""

    name: str
    n_layers: int
    d_model: int
    d_ff: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab_size: int
    max_context: int
    tied_embeddings: bool = False
    # Mixture of experts (0 experts = dense). The first n_dense_layers use a dense MLP of d_ff.
    n_experts: int = 0
    experts_per_token: int = 0
    n_shared_experts: int = 0
    d_ff_expert: int = 0
    n_dense_layers: int = 0
    # Group-limited routing (DeepSeek's n_group / topk_group): the experts fall into
    # expert_groups groups and a token's experts come from expert_groups_per_token of them
    # (0 = no limit). With one group per node a token reaches at most that many nodes.
    expert_groups: int = 0
    expert_groups_per_token: int = 0
    # Multi-head latent attention (DeepSeek); 0 = ordinary MHA/GQA/MQA.
    mla_kv_lora_rank: int = 0
    mla_q_lora_rank: int = 0
    mla_rope_head_dim: int = 0
    # MLA's value heads where they are wider than the non-RoPE query/key heads (GLM-5: 256
    # beside 192); 0 = head_dim. The latent cached is the same: only kv_b and W_O grow.
    mla_v_head_dim: int = 0
    # PaLM's "parallel" block: attention and MLP read the same normalised input and their
    # outputs are added together, y = x + attn(x) + mlp(x).
    parallel_block: bool = False
    # Hybrid local/global attention (Gemma 2, 3, 4). With sliding_window > 0 a *local* layer
    # attends to, and caches, at most the last sliding_window tokens. The layers run
    # local_per_global local ones, then one global one, repeated: layer i (from 0) is global
    # when (i + 1) % (local_per_global + 1) == 0, as Hugging Face's layer_types lists them
    # (0 = every layer local). Global layers may have their own head dim and KV heads
    # (Gemma 4; 0 = as the local ones) and no value projection (global_k_eq_v: the values
    # come from the key projection; keys and values are both still cached).
    sliding_window: int = 0
    local_per_global: int = 0
    global_head_dim: int = 0
    global_kv_heads: int = 0
    global_k_eq_v: bool = False
    # Hybrids (Qwen3-Next's gated DeltaNet, Jamba's Mamba): n_state_layers of the layers mix
    # tokens through a recurrence instead of attention. Such a layer caches no keys and values:
    # it holds a constant state of state_elements_per_layer numbers per sequence (in
    # state_dtype; None = the KV cache's format), whatever the context, and its mixer has
    # state_layer_params weights in place of attention's. The other layers attend as above.
    n_state_layers: int = 0
    state_layer_params: int = 0
    state_elements_per_layer: int = 0
    state_dtype: str | None = None
    # Split blocks (Nemotron-H's hybrid_override_pattern): each of the n_layers is one block
    # with one norm, either a token mixer alone (attention or a state layer, no MLP) or, for
    # n_mlp_only_layers of them, a dense MLP alone (0 = every layer has both, as usual).
    n_mlp_only_layers: int = 0
    # A gated MLP has three matrices (SwiGLU: gate, up, down); an ungated one two (up, down:
    # Nemotron-H's squared ReLU).
    gated_mlp: bool = True
    # Gated attention (Qwen3-Next, Qwen3.5): W_Q also produces a sigmoid gate on the heads'
    # output, N H more columns: 3 D N H + 2 D K H weights a layer.
    attention_output_gate: bool = False
    # Gemma 4's E-models (E2B, E4B). The last n_kv_shared_layers layers reuse the keys and
    # values of the last earlier layer of their kind: no W_K or W_V, and nothing cached (they
    # still attend). With double_wide_shared_mlp their MLPs are 2 d_ff wide. Per-layer
    # embeddings: a second lookup table of per_layer_vocab_size x (L per_layer_input_dim)
    # (looked up, not multiplied), a D -> L P projection, and per layer a gate D -> P, a
    # projection P -> D and a norm.
    n_kv_shared_layers: int = 0
    per_layer_input_dim: int = 0
    per_layer_vocab_size: int = 0
    double_wide_shared_mlp: bool = False
    # Sparse attention that reads the top k tokens (DeepSeek Sparse Attention, DeepSeek-V3.2;
    # 0 = dense). In every layer a "lightning indexer" of index_n_heads heads of
    # index_head_dim scores each cached token against the new one, from a small key it keeps
    # per token (index_key_bytes a layer: DeepSeek stores it in fp8 with an fp32 scale), and
    # attention reads only the index_topk best tokens' keys and values. Every token's KV is
    # still cached: the read shrinks, the cache does not.
    index_topk: int = 0
    index_n_heads: int = 0
    index_head_dim: int = 0
    index_key_bytes: int = 0
    source: str = ""
    source_date: str = ""

    def __post_init__(self) -> None:
        # Each field was checked by @checked; the rules across fields are left.
        check_model_fields(vars(self))

    # ---- shape facts ------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def attention_kind(self) -> str:
        """ "MLA", "MHA" (K = N), "MQA" (K = 1) or "GQA" (1 < K < N)."""
        if self.mla_kv_lora_rank:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def n_attention_layers(self) -> int:
        """Layers that attend (and cache keys and values): all but the state layers and the
        MLP-only blocks."""
        return self.n_layers - self.n_state_layers - self.n_mlp_only_layers

    @property
    def n_global_layers(self) -> int:
        """Layers that attend to (and cache) the whole context: every attention layer without
        a sliding window, else ``L // (local_per_global + 1)`` (none when ``local_per_global``
        is 0)."""
        if not self.sliding_window:
            return self.n_attention_layers
        if not self.local_per_global:
            return 0
        return self.n_layers // (self.local_per_global + 1)

    @property
    def n_local_layers(self) -> int:
        """Sliding-window layers: each attends to at most ``sliding_window`` tokens (a
        hybrid's state layers are neither local nor global)."""
        return self.n_attention_layers - self.n_global_layers

    def _attention_groups(
        self, cached: bool = False
    ) -> tuple[tuple[int, int, int, bool, int], ...]:
        """(layers, KV heads, head dim, values from the keys?, window or 0) per layer kind: of
        every attention layer, or (``cached``) of those that compute and cache their keys and
        values (all but the KV-shared tail: the layer pattern counted over the first ones)."""
        layers = self.n_attention_layers - (self.n_kv_shared_layers if cached else 0)
        if not self.sliding_window:
            return ((layers, self.n_kv_heads, self.head_dim, False, 0),)
        glob = layers // (self.local_per_global + 1) if self.local_per_global else 0
        local = (layers - glob, self.n_kv_heads, self.head_dim, False, self.sliding_window)
        K = self.global_kv_heads or self.n_kv_heads
        H = self.global_head_dim or self.head_dim
        return (local, (glob, K, H, self.global_k_eq_v, 0))

    @property
    def tp_all_reduces_per_layer(self) -> int:
        """All-reduces per layer of a forward pass under 1-D tensor parallelism: 2 (after
        attention, after the MLP), or 1 for a parallel block, whose two branches' partial sums
        add locally before one all-reduce, and for split blocks (``n_mlp_only_layers``: each
        block a mixer or an MLP alone)."""
        return 1 if self.parallel_block or self.n_mlp_only_layers else 2

    @property
    def expert_d_ff(self) -> int:
        return self.d_ff_expert or self.d_ff

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    # ---- parameters -------------------------------------------------------------------
    @property
    def attention_params(self) -> int:
        """Attention weights of every layer: each layer kind at its own shape (a global layer
        of Gemma 4 has wider heads, fewer KV heads and, with ``global_k_eq_v``, no ``W_V``)."""
        if not (self.sliding_window or self.n_kv_shared_layers):
            state = self.n_state_layers * self.state_layer_params
            per_layer = self.attention_params_per_layer + self.indexer_params_per_layer
            return self.n_attention_layers * per_layer + state
        D, N = self.d_model, self.n_heads
        total = 0
        for layers, _, H, _, _ in self._attention_groups():  # W_Q and W_O in every layer
            total += layers * 2 * D * N * H
        for layers, K, H, k_eq_v, _ in self._attention_groups(cached=True):  # W_K, W_V
            total += layers * (1 if k_eq_v else 2) * D * K * H
        return total

    @property
    def attention_params_per_layer(self) -> int:
        """One ordinary (or local) layer's attention weights."""
        D, N, K, H = self.d_model, self.n_heads, self.n_kv_heads, self.head_dim
        if self.attention_kind != "MLA":
            gate = D * N * H if self.attention_output_gate else 0
            return 2 * D * N * H + 2 * D * K * H + gate  # W_Q and W_O, then W_K and W_V
        q_rank, kv_rank, rope = self.mla_q_lora_rank, self.mla_kv_lora_rank, self.mla_rope_head_dim
        # With a query latent: down-projection, its norm, up-projection to the heads; without
        # one (e.g. DeepSeek-V2-Lite) the queries come straight from D.
        latent_queries = D * q_rank + q_rank + q_rank * N * (H + rope)
        queries = latent_queries if q_rank else D * N * (H + rope)
        Hv = self.mla_value_head_dim
        keys_values = D * (kv_rank + rope) + kv_rank + kv_rank * N * (H + Hv)
        return queries + keys_values + N * Hv * D

    @property
    def mla_value_head_dim(self) -> int:
        """An MLA value head's width: ``mla_v_head_dim``, else ``head_dim``."""
        return self.mla_v_head_dim or self.head_dim

    @property
    def indexer_params_per_layer(self) -> int:
        """A sparse-attention layer's indexer (DeepSeek-V3.2's ``Indexer``): its query heads
        from the query latent (or from D without one), one key of ``index_head_dim`` from D
        with a LayerNorm (weight and bias), and a weight per head from D; 0 when dense."""
        heads, dim = self.index_n_heads, self.index_head_dim
        queries = (self.mla_q_lora_rank or self.d_model) * heads * dim
        return queries + self.d_model * dim + 2 * dim + self.d_model * heads if heads else 0

    @property
    def mlp_matrices(self) -> int:
        """3 for a gated MLP (SwiGLU: gate, up and down projections), else 2 (up, down)."""
        return 3 if self.gated_mlp else 2

    @property
    def mlp_params_per_expert(self) -> int:
        return self.mlp_matrices * self.d_model * self.expert_d_ff

    @property
    def dense_mlp_params(self) -> int:
        return self.mlp_matrices * self.d_model * self.d_ff

    @property
    def embedding_params(self) -> int:
        """Input embedding plus unembedding (one matrix when tied), and a per-layer-embedding
        table where there is one (looked up like the input embedding)."""
        per_layer = self.per_layer_vocab_size * self.n_layers * self.per_layer_input_dim
        return self.vocab_size * self.d_model * (1 if self.tied_embeddings else 2) + per_layer

    @property
    def per_layer_input_params(self) -> int:
        """The matmul weights that feed the per-layer embeddings in: the model's D -> L P
        projection (and its norm) and each layer's gate D -> P, projection P -> D and norm."""
        P, D, L = self.per_layer_input_dim, self.d_model, self.n_layers
        return D * L * P + P + L * (2 * D * P + D) if P else 0

    def _layer_params(self, experts_counted: int) -> int:
        norms = (1 if self.n_mlp_only_layers else 2) * self.d_model  # one per split block
        dense = self.n_mlp_only_layers or self.n_layers - self.n_moe_layers
        dense += self.n_kv_shared_layers if self.double_wide_shared_mlp else 0  # 2 d_ff wide
        total = self.attention_params + self.n_layers * norms + dense * self.dense_mlp_params
        total += self.per_layer_input_params
        if self.is_moe:
            router = self.d_model * self.n_experts
            experts = (experts_counted + self.n_shared_experts) * self.mlp_params_per_expert
            total += self.n_moe_layers * (experts + router)
        return total

    @property
    def total_params(self) -> int:
        """Every weight, as in the published parameter counts (final norm included)."""
        return self._layer_params(self.n_experts) + self.embedding_params + self.d_model

    @property
    def active_params(self) -> int:
        """Weights one token uses: for MoE only k routed experts (plus shared ones) per layer."""
        return self._layer_params(self.experts_per_token) + self.embedding_params + self.d_model

    @property
    def matmul_params_per_token(self) -> int:
        """Active weights that take part in a matmul: the input embedding (and a per-layer
        embedding table) is only a lookup."""
        per_layer = self.per_layer_vocab_size * self.n_layers * self.per_layer_input_dim
        lookups = self.vocab_size * self.d_model * (not self.tied_embeddings) + per_layer
        return self.active_params - lookups

    @contract()
    def weight_bytes(self, dtype: str = "bf16") -> float:
        """Bytes to hold every weight in ``dtype``."""
        return self.total_params * bytes_per_element(dtype)

    # ---- per-token costs ----------------------------------------------------------------
    @contract()
    def attention_flops_per_token(
        self, context: ArrayLike = 0, *, decode: bool = False
    ) -> float | FloatArray:
        """FLOPs of one token attending to ``context`` earlier tokens (QK^T and AV).

        Ordinary attention: ``2 L T N (H_qk + H_v)``. MLA decodes *absorbed* (DeepSeek-V2,
        arXiv 2405.04434, section 2.1.2): the key and value up-projections fold into the query
        and output ones, so each head scores the cached latent and its RoPE key and sums
        latents, ``2 L T N (r_kv + r_rope + r_kv)``: 3.4x the per-head count for DeepSeek-V3.
        Prefill (``decode=False``) expands the latent into per-head keys and values instead.
        A sliding-window layer attends to ``min(T, window)`` tokens, a global one of Gemma 4
        with its own head dim. Sparse attention attends to ``min(T, k)`` tokens and its
        indexer scores all ``T``: ``2 L T I_heads I_dim`` more.
        """
        T = as_floats(context)
        if self.sliding_window:
            flops = np.zeros_like(T)
            for layers, _, H, _, window in self._attention_groups():
                seen = np.minimum(T, window) if window else T
                flops = flops + 2.0 * layers * seen * self.n_heads * (H + H)
            return as_output(flops)
        if decode and self.attention_kind == "MLA":
            per_head = 2 * self.mla_kv_lora_rank + self.mla_rope_head_dim
        else:
            per_head = self.head_dim + self.mla_rope_head_dim + self.mla_value_head_dim
        attended = np.minimum(T, self.index_topk) if self.index_topk else T
        flops = 2.0 * self.n_attention_layers * attended * self.n_heads * per_head
        if self.index_topk:  # the indexer scores every cached token in every head
            flops = flops + 2.0 * self.n_attention_layers * T * self.indexer_elements_per_key
        return as_output(flops)

    @property
    def indexer_elements_per_key(self) -> int:
        """Multiply-adds of one indexer query against one cached index key: every head."""
        return self.index_n_heads * self.index_head_dim

    @contract()
    def forward_flops_per_token(
        self, context: ArrayLike = 0, *, decode: bool = False
    ) -> float | FloatArray:
        """Forward FLOPs for one token: ``2 * matmul params`` plus attention over ``context``
        earlier tokens (:meth:`attention_flops_per_token`; ``decode`` picks absorbed MLA)."""
        attention = self.attention_flops_per_token(context, decode=decode)
        return as_output(2.0 * self.matmul_params_per_token + np.asarray(attention))

    def training_flops_per_token(self) -> float:
        """``6 * matmul params``: forward (2) plus backward (4); attention and the input
        embedding lookup (no FLOPs) are left out."""
        return 6.0 * self.matmul_params_per_token

    def kv_elements_per_token(self) -> int:
        """Numbers cached per token across all layers: ``2 * L * K * H`` (keys and values);
        MLA caches one latent of ``kv_lora_rank + rope_head_dim`` per layer instead (a hybrid's
        state layers cache nothing). Every
        layer counted as caching every token: the full-attention count, exact without
        sliding-window layers (each layer kind at its own K and H)."""
        if self.attention_kind == "MLA":
            return self.n_attention_layers * (self.mla_kv_lora_rank + self.mla_rope_head_dim)
        groups = self._attention_groups(cached=True)  # a KV-shared layer caches nothing
        return sum(2 * layers * K * H for layers, K, H, _, _ in groups)

    @overload
    def kv_bytes_per_token(self, dtype: str = ..., context: None = None) -> float: ...
    @overload
    def kv_bytes_per_token(self, dtype: str, context: ArrayLike) -> float | FloatArray: ...
    @contract(context=Optional(AMOUNT))
    def kv_bytes_per_token(
        self, dtype: str = "bf16", context: ArrayLike | None = None
    ) -> float | FloatArray:
        """KV-cache bytes per token of context in ``dtype``.

        Without ``context``: every attention layer caches every token
        (:meth:`kv_elements_per_token`). At a ``context`` of ``T`` tokens: the sequence's
        cache over ``T``, exact for sliding-window layers, which hold ``min(T, window)`` tokens
        while global ones hold ``T``: ``(sum_global 2 K H + sum_local 2 K H min(1, window / T))
        b``. It equals the full count up to the window, and falls towards the global layers'
        share beyond it. A hybrid's state layers add their constant state spread over the
        ``T`` tokens, ``state / T`` (above the full count at short contexts, towards it at
        long ones; nothing at ``T = 0``). A sparse-attention model also keeps its indexer's
        key for every token, ``L index_key_bytes`` (fp8 whatever ``dtype``): what it holds,
        not what a step reads (:meth:`kv_bytes_read`).
        """
        b = bytes_per_element(dtype)
        index_keys = self.n_attention_layers * self.index_key_bytes  # 0 without an indexer
        if context is None:
            return self.kv_elements_per_token() * b + index_keys
        T = as_floats(context)
        if self.n_state_layers:
            state = self.state_bytes_per_sequence(dtype)
            spread = np.divide(state, T, out=np.zeros_like(T), where=T > 0)
            return as_output(self.kv_elements_per_token() * b + spread)
        if not self.sliding_window:
            return as_output(np.full_like(T, self.kv_elements_per_token() * b + index_keys))
        per_token = np.zeros_like(T)
        for layers, K, H, _, window in self._attention_groups(cached=True):
            share = np.minimum(1.0, np.divide(window, T, out=np.ones_like(T), where=T > 0))
            per_token = per_token + 2.0 * layers * K * H * (share if window else 1.0)
        return as_output(per_token * b)

    @contract(context=AMOUNT)
    def kv_bytes_read(self, dtype: str = "bf16", context: ArrayLike = 0) -> float | FloatArray:
        """Bytes one decoded token reads from its sequence's cache at ``context`` tokens: the
        bandwidth wall's count, per sequence and step (a floor: each byte read once).

        Dense attention reads everything it holds, ``T kv(T)`` (window-exact; a hybrid's
        state read once, :meth:`kv_bytes_per_token`). Sparse attention (``index_topk`` = k)
        reads the indexer's key of every token and the keys and values of the k it picks:
        ``L (min(T, k) kv_layer + T index_key_bytes)``. Past k the read grows only by the
        small index keys; the cache held still grows by all of ``kv``.
        """
        T = as_floats(context)
        if not self.index_topk:
            return as_output(T * np.asarray(self.kv_bytes_per_token(dtype, T)))
        picked = np.minimum(T, self.index_topk) * self.kv_elements_per_token()
        index_keys = T * self.n_attention_layers * self.index_key_bytes
        return as_output(picked * bytes_per_element(dtype) + index_keys)

    @contract()
    def state_bytes_per_sequence(self, dtype: str = "bf16") -> float:
        """Bytes of a hybrid's recurrent state, held per sequence whatever its length:
        ``n_state_layers * state_elements_per_layer`` numbers in ``state_dtype`` (``dtype``,
        the KV cache's format, where the model names none); 0 without state layers."""
        held = self.state_dtype or dtype
        return float(self.n_state_layers * self.state_elements_per_layer * bytes_per_element(held))


#: A model parameter: a :class:`ModelConfig` or a preset's name.
MODEL = AnyOf(
    (
        OneOf(lambda: _MODELS, "model"),
        Instance(ModelConfig, example=lambda: _MODELS["Llama-3-8B"]),
    )
)
vocabulary(model=MODEL)


@contract(model=Instance(ModelConfig), name=NAME)
def check_context(model: ModelConfig, context: ArrayLike, name: str = "context") -> FloatArray:
    """``context`` (tokens) as floats, refused above ``model.max_context``: every step, cache
    and memory count of a model asks this one check (``name``: the parameter it came as)."""
    T = as_floats(context)  # >= 0: checked by the contract of the function asking
    if np.any(model.max_context < T):
        worst = float(np.max(T))
        raise ValueError(
            f"{name} must be <= {model.name}'s max_context={model.max_context}; got {worst:g}"
        )
    return T


# ---- which experts a batch touches ---------------------------------------------------
@contract(
    batch=AMOUNT,
    # a layer's experts, at most 2^16 (ModelConfig's and with_experts' limit), as arrays
    n_experts=Real(low=1.0, low_open=False, high=1 << 16, integer=True),
    experts_per_token=Real(low=1.0, low_open=False, integer=True),
)
def expected_experts_touched(
    batch: ArrayLike, n_experts: ArrayLike, experts_per_token: ArrayLike
) -> float | FloatArray:
    """Experts of one layer that at least one of ``batch`` tokens is routed to, on average.

    Under uniform routing each token picks k of the E experts, so it misses a given expert
    with probability ``1 - k/E``; B independent tokens all miss it with ``(1 - k/E)^B``:
    ``E (1 - (1 - k/E)^B)``. It is k at B = 1 and tends to E as B grows.
    """
    B, E, k = as_floats(batch), as_floats(n_experts), as_floats(experts_per_token)
    _check_k_le_e(k, E)
    return as_output(E * (1.0 - (1.0 - k / E) ** B))


@contract()
def weight_params_read(model: str | ModelConfig, batch: ArrayLike) -> FloatArray:
    """Matmul weights read in one decode step of ``batch`` tokens.

    Dense: all of them, whatever the batch. MoE: the active weights plus, in each MoE layer,
    the routed experts beyond the k a single token uses that some token of the batch is
    routed to (:func:`expected_experts_touched`). So reads grow with the batch from the
    active to the total weights; they never fall below the active ones.
    """
    spec = get_model(model)
    B = as_floats(batch)
    active = np.full_like(B, float(spec.matmul_params_per_token))
    if not spec.is_moe:
        return active
    E, k = spec.n_experts, spec.experts_per_token
    extra = np.maximum(np.asarray(expected_experts_touched(B, E, k)) - k, 0.0)
    extra_params: FloatArray = spec.n_moe_layers * extra * spec.mlp_params_per_expert
    return active + extra_params


def _check_k_le_e(k: FloatArray, E: FloatArray) -> None:
    too_many = np.broadcast_to(k > E, np.broadcast_shapes(k.shape, E.shape))
    if np.any(too_many):
        k_bad = np.broadcast_to(k, too_many.shape)[too_many].ravel()[0]
        e_bad = np.broadcast_to(E, too_many.shape)[too_many].ravel()[0]
        raise ValueError(
            f"experts_per_token={k_bad:g} exceeds n_experts={e_bad:g}: "
            "a token cannot be routed to more experts than the layer has"
        )


@contract(name=NAME, spec=Instance(dict))
def model_from_dict(name: str, spec: dict[str, Any]) -> ModelConfig:
    """Build a :class:`ModelConfig` from one table of a models TOML file."""
    allowed = [f for f in ModelConfig.__dataclass_fields__ if f != "name"]
    unknown = sorted(set(spec) - set(allowed))
    if unknown:
        raise ValueError(f"model {name!r} has unknown fields {unknown}; allowed: {allowed}")
    missing = [f for f in (*_COUNT_FIELDS, "max_context") if f not in spec]
    if missing:
        raise ValueError(f"model {name!r} is missing {', '.join(missing)}")
    return ModelConfig(name=name, **spec)


@contract(path=PathLike())
def load_models(path: str | os.PathLike[str]) -> dict[str, ModelConfig]:
    """Read every model in a TOML file shaped like ``data/models.toml`` (one table each)."""
    with Path(path).open("rb") as handle:
        tables = tomllib.load(handle)
    not_tables = [name for name, spec in tables.items() if not isinstance(spec, dict)]
    if not_tables or not tables:
        raise ValueError(
            f"{path}: expected one [table] per model, as in data/models.toml; found "
            f"{'top-level keys ' + ', '.join(not_tables) if not_tables else 'no tables'}"
        )
    return {name: model_from_dict(name, spec) for name, spec in tables.items()}


def _preset_models() -> dict[str, ModelConfig]:
    return {name: model_from_dict(name, spec) for name, spec in data.table("models").items()}


_MODELS: dict[str, ModelConfig] = _preset_models()


@contract()
def list_models() -> list[str]:
    """Names of the model presets."""
    return list(_MODELS)


@contract(own_check=True)
def get_model(model: str | ModelConfig) -> ModelConfig:
    """Look a preset up by name, or pass a :class:`ModelConfig` straight through."""
    if isinstance(model, ModelConfig):
        return model
    if type(model) is not str or model not in _MODELS:
        refuse(get_model, "model", model)
    return _MODELS[model]
