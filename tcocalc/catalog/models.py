"""Model architectures: parameter counts, FLOPs per token and KV-cache bytes from a config.json.

Each catalog entry in ``data/models/`` is a Hugging Face ``config.json`` plus provenance (source,
date, published parameter counts). :meth:`ModelArch.from_hf_config` reads any such config (dense
GQA such as Llama/Qwen, MoE such as Qwen3-MoE/GLM-4.5, MLA such as DeepSeek-V3, MLA with DeepSeek
Sparse Attention such as GLM-5).

Parameter counting (docs/sources.md §F.2.1; docs/rl-modeling.md §3.1):

* embedding ``V·H`` plus an untied LM head ``V·H``; RMSNorm weights ``H`` per norm;
* GQA attention ``H·H_q·d_h + 2·H·H_kv·d_h + H_q·d_h·H`` (+ q/k/v biases, + QK-norm ``2·d_h``);
* MLA attention (DeepSeek-V3 ``modeling_deepseek.py``): ``H·r_q + r_q·H_q·(d_nope+d_rope)`` (or
  ``H·H_q·(d_nope+d_rope)`` without a q-LoRA), ``H·(r_kv+d_rope) + r_kv·H_q·(d_nope+d_v) + H_q·d_v·H``
  plus the two LoRA norms; GLM-5's DSA indexer adds ``r_q·n_i·d_i + H·d_i + H·n_i + 2·d_i``;
* SwiGLU MLP ``3·H·I``; an MoE layer has ``E`` routed experts of ``3·H·I_moe``, shared experts of the
  same size and a router ``H·E``. Active parameters count ``k`` routed experts. A non-gated MLP (GPT-2/3,
  Megatron's GPT: ``fc1``, GELU, ``fc2``; ``mlp_gated = False``) has two matrices, ``2·H·I``. Biases of a
  non-gated GPT (``13·H`` per layer) are not counted: 0.01% of GPT-3-175B.
* Multi-token-prediction layers are excluded (as in the official totals).
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._data import data_dir, display_path
from .._names import close_matches, normalize
from ..errors import DataFileError, ScenarioError, UnknownEntryError
from ..units import bytes_per_element
from .provenance import check_entry

__all__ = ["ModelArch", "model", "model_names", "model_table"]

MAX_CONFIG_INT = 2**31 - 1
"""Largest count :meth:`ModelArch.from_hf_config` accepts for any config key (an int32, as config.json
readers store them); real configs stay far below (vocabularies ~10^5, context lengths ~10^7)."""


def _show(value: Any) -> str:
    """A short repr of a user value for an error message."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        return f"a {len(str(abs(value)))}-digit number" if abs(value) < 10**4000 else "a huge number"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _HFConfig:
    """Typed, checked reads from a config.json dictionary; every failure names ``model.config.<key>``."""

    def __init__(self, config: dict[str, Any]):
        self.config = config

    def fail(self, key: str, message: str) -> NoReturn:
        raise ScenarioError(f"model.config.{key}", message)

    def _lookup(self, keys: tuple[str, ...], default: Any) -> tuple[str, Any]:
        """The first of ``keys`` present and not null, with its value; else ``default`` under ``keys[0]``."""
        for k in keys:
            if self.config.get(k) is not None:
                return k, self.config[k]
        if default is ...:
            self.fail(keys[0], "missing (required in a config.json)")
        return keys[0], default

    def count(self, *keys: str, minimum: int, maximum: int = MAX_CONFIG_INT, default: Any = ...) -> int:
        """A whole number in ``minimum..maximum`` (an integral float is accepted; bools are not)."""
        key, value = self._lookup(keys, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(key, f"must be a whole number, got {_show(value)}")
        if isinstance(value, float):
            if not math.isfinite(value):
                self.fail(key, f"must be a finite whole number, got {value!r}")
            if not value.is_integer():
                self.fail(key, f"must be a whole number, got {value!r}")
            value = int(value)
        if value < minimum:
            self.fail(key, f"must be at least {minimum}, got {_show(value)}")
        if value > maximum:
            self.fail(key, f"must be at most {maximum:,}, got {_show(value)}")
        return value

    def count_list(self, key: str) -> list[int]:
        """A list of non-negative whole numbers (e.g. layer indices); absent or null is empty."""
        value = self.config.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(key, f"must be a list of layer indices, got {_show(value)}")
        for v in value:
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_CONFIG_INT:
                self.fail(key, f"must be a list of layer indices (whole numbers >= 0), got {_show(v)}")
        return value

    def flag(self, *keys: str, default: bool) -> bool:
        key, value = self._lookup(keys, default)
        if not isinstance(value, bool):
            self.fail(key, f"must be true or false, got {_show(value)}")
        return value

    def text(self, key: str, default: str) -> str:
        key, value = self._lookup((key,), default)
        if not isinstance(value, str):
            self.fail(key, f"must be a string, got {_show(value)}")
        return value


NON_GATED_MODEL_TYPES = frozenset({"gpt2", "gpt_neox", "gptj", "gpt_bigcode", "opt", "bloom", "falcon", "phi",
                                   "starcoder2"})
"""Hugging Face ``model_type`` values whose MLP is not gated (``fc1``/``c_fc``, activation, ``fc2``/``c_proj``).
:meth:`ModelArch.from_hf_config` makes the MLP gated (SwiGLU) unless the config's ``gated_linear_unit``
(Megatron-Core's ``TransformerConfig`` name) is false, or it is absent and ``model_type`` is one of these."""

#: ModelArch's derived parameter counts, cached per instance (functools.cached_property) for the layout searches.
_CACHED_COUNTS = ("attention_params_per_layer", "indexer_params_per_layer", "dense_mlp_params", "expert_params",
                  "moe_always_on_params_per_layer", "embedding_params", "lm_head_params", "routed_expert_params_total",
                  "params_total", "params_active")


class ModelArch(BaseModel):
    """A transformer's shape, validated and frozen. Build it with :meth:`from_hf_config`.

    All sizes are element counts; ``params_*`` are parameter counts; byte figures take a precision.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    def model_copy(self, *, update=None, deep: bool = False) -> ModelArch:
        """A copy (pydantic's), without the parameter counts cached on this instance: with ``update`` they would
        describe the original model."""
        copied = super().model_copy(update=update, deep=deep)
        for name in _CACHED_COUNTS:
            copied.__dict__.pop(name, None)
        return copied

    name: str = Field(min_length=1)
    hidden_size: int = Field(gt=0)
    num_layers: int = Field(gt=0)
    num_attention_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    vocab_size: int = Field(gt=0)
    intermediate_size: int = Field(ge=0, description="dense MLP (FFN) width (0 if every layer is MoE)")
    mlp_gated: bool = Field(default=True, description="gated MLP (SwiGLU: gate, up, down = 3 matrices); False: "
                                                      "fc1, activation, fc2 (GPT's GELU MLP, 2 matrices)")
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False
    attention: Literal["gqa", "mla"] = "gqa"
    # MLA (DeepSeek-style)
    q_lora_rank: int = Field(default=0, ge=0)
    kv_lora_rank: int = Field(default=0, ge=0)
    qk_nope_head_dim: int = Field(default=0, ge=0)
    qk_rope_head_dim: int = Field(default=0, ge=0)
    v_head_dim: int = Field(default=0, ge=0)
    # DeepSeek Sparse Attention indexer (GLM-5); 0 = dense attention
    index_topk: int = Field(default=0, ge=0)
    index_n_heads: int = Field(default=0, ge=0)
    index_head_dim: int = Field(default=0, ge=0)
    # MoE
    num_experts: int = Field(default=0, ge=0, description="routed experts per MoE layer (0 = dense)")
    experts_per_token: int = Field(default=0, ge=0)
    moe_intermediate_size: int = Field(default=0, ge=0)
    num_shared_experts: int = Field(default=0, ge=0)
    num_dense_layers: int = Field(default=0, ge=0, description="leading layers with a dense MLP")
    max_position_embeddings: int = Field(default=0, ge=0)
    # provenance (catalog entries)
    aliases: tuple[str, ...] = ()
    hf_repo: str = ""
    source: str = ""
    date: str = ""
    published_params_total: float | None = None
    published_params_active: float | None = None

    @model_validator(mode="after")
    def _check(self):
        if self.attention == "gqa" and self.num_attention_heads % self.num_kv_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        if self.attention == "mla" and not (self.kv_lora_rank and self.qk_rope_head_dim and self.v_head_dim):
            raise ValueError("MLA needs kv_lora_rank, qk_rope_head_dim and v_head_dim")
        if self.num_experts:
            if not (0 < self.experts_per_token <= self.num_experts):
                raise ValueError("num_experts_per_tok must be in 1..num_experts")
            if not self.moe_intermediate_size:
                raise ValueError("an MoE model needs moe_intermediate_size")
            if self.num_dense_layers > self.num_layers:
                raise ValueError("first_k_dense_replace exceeds num_hidden_layers")
        elif not self.intermediate_size:
            raise ValueError("a dense model needs intermediate_size")
        if self.num_dense_layers and not self.intermediate_size:
            raise ValueError("dense layers need intermediate_size")
        return self

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_hf_config(cls, config: dict[str, Any], *, name: str | None = None, **extra: Any) -> ModelArch:
        """Build from a Hugging Face ``config.json`` dictionary.

        Understands the keys of Llama, Qwen2/2.5, Qwen3 (dense and MoE), DeepSeek-V3/R1, GLM-4.5 and
        GLM-5 configs (MLP gating: :data:`NON_GATED_MODEL_TYPES`). Every key it reads is checked before use:
        counts are whole numbers (an integral float such as ``4096.0`` is accepted) in their range, up to
        :data:`MAX_CONFIG_INT`; flags are booleans; ``null`` counts as absent. A missing or bad key, or keys that
        do not fit together (e.g. ``num_attention_heads`` not a multiple of ``num_key_value_heads``), raises
        :class:`~tcocalc.errors.ScenarioError` whose field is ``model.config.<key>``.
        """
        from pydantic import ValidationError

        if not isinstance(config, dict):
            raise ScenarioError("model.config", "expected a table (a config.json dictionary)")
        cfg = _HFConfig(config)

        mtype = cfg.text("model_type", "")
        heads = cfg.count("num_attention_heads", minimum=1)
        hidden = cfg.count("hidden_size", minimum=1)
        mla = cfg.count("kv_lora_rank", minimum=0, default=0) > 0
        n_experts = cfg.count("num_experts", "n_routed_experts", "num_local_experts", minimum=0, default=0)
        n_layers = cfg.count("num_hidden_layers", minimum=1)
        if n_experts:
            dense_layers = cfg.count("first_k_dense_replace", minimum=0, default=0)
            if dense_layers > n_layers:
                cfg.fail("first_k_dense_replace", f"exceeds num_hidden_layers ({n_layers})")
            if mtype.startswith("qwen"):
                if cfg.count("decoder_sparse_step", minimum=1, default=1) != 1:
                    cfg.fail("decoder_sparse_step", "interleaved dense/MoE layers are not supported; use 1")
                if cfg.count_list("mlp_only_layers"):
                    cfg.fail("mlp_only_layers", "interleaved dense/MoE layers are not supported; "
                                                "use an empty list and decoder_sparse_step 1")
        else:
            dense_layers = n_layers
        kv_heads = cfg.count("num_key_value_heads", minimum=1, default=heads)
        if not mla and heads % kv_heads:
            cfg.fail("num_key_value_heads", f"num_attention_heads ({heads}) must be a multiple of "
                                            f"num_key_value_heads ({kv_heads})")
        if mla:
            nope = cfg.count("qk_nope_head_dim", minimum=0)
            rope = cfg.count("qk_rope_head_dim", minimum=1)
            head_dim = nope + rope
        elif "head_dim" in config and config["head_dim"] is not None:
            head_dim = cfg.count("head_dim", minimum=1)
        else:
            head_dim = hidden // heads
            if head_dim < 1:
                cfg.fail("num_attention_heads", f"exceeds hidden_size ({hidden}), which leaves no head "
                                                "dimension; give head_dim")
        intermediate = cfg.count("intermediate_size", minimum=0, default=0)
        if not intermediate and (not n_experts or dense_layers):
            cfg.fail("intermediate_size", "must be > 0: " + ("the first_k_dense_replace dense layers need it"
                                                             if n_experts else "a dense model needs it"))
        experts_per_token = moe_intermediate = shared = 0
        if n_experts:
            experts_per_token = cfg.count("num_experts_per_tok", "moe_topk", minimum=1, maximum=n_experts)
            moe_intermediate = cfg.count("moe_intermediate_size", minimum=1)
            shared = cfg.count("n_shared_experts", "num_shared_experts", minimum=0, default=0)
        if name is None:
            name = cfg.text("_name_or_path", "") or mtype or "custom-model"
        kwargs = dict(
            name=name,
            hidden_size=hidden,
            num_layers=n_layers,
            num_attention_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            vocab_size=cfg.count("vocab_size", minimum=1),
            intermediate_size=intermediate,
            mlp_gated=cfg.flag("gated_linear_unit", default=mtype not in NON_GATED_MODEL_TYPES),
            tie_word_embeddings=cfg.flag("tie_word_embeddings", default=False),
            qkv_bias=cfg.flag("attention_bias", "qkv_bias", default=mtype == "qwen2"),
            qk_norm=cfg.flag("use_qk_norm", default=mtype in ("qwen3", "qwen3_moe")),
            attention="mla" if mla else "gqa",
            num_experts=n_experts,
            experts_per_token=experts_per_token,
            moe_intermediate_size=moe_intermediate,
            num_shared_experts=shared,
            num_dense_layers=dense_layers,
            max_position_embeddings=cfg.count("max_position_embeddings", minimum=0, default=0),
        )
        if mla:
            kwargs.update(
                q_lora_rank=cfg.count("q_lora_rank", minimum=0, default=0),
                kv_lora_rank=cfg.count("kv_lora_rank", minimum=1),
                qk_nope_head_dim=nope,
                qk_rope_head_dim=rope,
                v_head_dim=cfg.count("v_head_dim", minimum=1),
                index_topk=cfg.count("index_topk", minimum=0, default=0),
                index_n_heads=cfg.count("index_n_heads", minimum=0, default=0),
                index_head_dim=cfg.count("index_head_dim", minimum=0, default=0),
            )
        kwargs.update(extra)
        try:
            return cls(**kwargs)
        except ValidationError as exc:  # only reachable through ``extra`` (the catalog's provenance keys)
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise ScenarioError(f"model.config.{loc}" if loc else "model.config",
                                err["msg"].removeprefix("Value error, ")) from None

    # ------------------------------------------------------------------ structure
    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def num_moe_layers(self) -> int:
        return self.num_layers - self.num_dense_layers

    @property
    def qk_head_dim(self) -> int:
        """Query/key width per head (``d_nope + d_rope`` for MLA)."""
        return self.head_dim

    @property
    def value_head_dim(self) -> int:
        return self.v_head_dim if self.attention == "mla" else self.head_dim

    @functools.cached_property
    def attention_params_per_layer(self) -> float:
        """Attention weights of one layer, including its pre-attention norm [params]."""
        h, nq = self.hidden_size, self.num_attention_heads
        if self.attention == "gqa":
            dh, nkv = self.head_dim, self.num_kv_heads
            p = h * nq * dh + 2 * h * nkv * dh + nq * dh * h
            if self.qkv_bias:
                p += nq * dh + 2 * nkv * dh
            if self.qk_norm:
                p += 2 * dh
        else:
            d_qk, r = self.qk_head_dim, self.qk_rope_head_dim
            if self.q_lora_rank:
                p = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * nq * d_qk
            else:
                p = h * nq * d_qk
            p += h * (self.kv_lora_rank + r) + self.kv_lora_rank
            p += self.kv_lora_rank * nq * (self.qk_nope_head_dim + self.v_head_dim)
            p += nq * self.v_head_dim * h
            p += self.indexer_params_per_layer
        return float(p + h)

    @functools.cached_property
    def indexer_params_per_layer(self) -> float:
        """DeepSeek Sparse Attention "lightning indexer" weights per layer (0 without DSA) [params]."""
        if not self.index_n_heads:
            return 0.0
        n, d, h = self.index_n_heads, self.index_head_dim, self.hidden_size
        q_in = self.q_lora_rank or h
        return float(q_in * n * d + h * d + h * n + 2 * d)

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP (or expert): 3 gated (gate, up, down), 2 non-gated (fc1, fc2)."""
        return 3 if self.mlp_gated else 2

    @functools.cached_property
    def dense_mlp_params(self) -> float:
        """One dense MLP plus its pre-MLP norm: ``3·H·I`` (SwiGLU) or ``2·H·I`` (non-gated) ``+ H`` [params]."""
        return float(self.mlp_matrices * self.hidden_size * self.intermediate_size + self.hidden_size)

    @functools.cached_property
    def expert_params(self) -> float:
        """One routed (or shared) expert [params]."""
        return float(self.mlp_matrices * self.hidden_size * self.moe_intermediate_size)

    @functools.cached_property
    def moe_always_on_params_per_layer(self) -> float:
        """Per MoE layer: router, shared experts and norm, touched by every token [params]."""
        return float(self.hidden_size * self.num_experts + self.num_shared_experts * self.expert_params
                     + self.hidden_size)

    @functools.cached_property
    def embedding_params(self) -> float:
        """Input embedding [params]."""
        return float(self.vocab_size * self.hidden_size)

    @functools.cached_property
    def lm_head_params(self) -> float:
        """Output projection (also paid in FLOPs when tied) [params]."""
        return float(self.vocab_size * self.hidden_size)

    @functools.cached_property
    def routed_expert_params_total(self) -> float:
        """All routed experts over all MoE layers [params]."""
        return self.num_moe_layers * self.num_experts * self.expert_params

    def _params(self, experts_counted: int) -> float:
        layers = self.num_layers * self.attention_params_per_layer
        layers += self.num_dense_layers * self.dense_mlp_params
        layers += self.num_moe_layers * (self.moe_always_on_params_per_layer + experts_counted * self.expert_params)
        head = 0.0 if self.tie_word_embeddings else self.lm_head_params
        return self.embedding_params + head + layers + self.hidden_size

    @functools.cached_property
    def params_total(self) -> float:
        """Total parameters, MTP layers excluded [params]."""
        return self._params(self.num_experts)

    @functools.cached_property
    def params_active(self) -> float:
        """Parameters a token touches (``k`` of ``E`` routed experts), embeddings included [params]."""
        return self._params(self.experts_per_token)

    @property
    def flop_params(self) -> float:
        """``N_fl``: active parameters that cost matmul FLOPs: active minus input embedding, plus the
        LM head (docs/rl-modeling.md §1; Megatron-Bridge's FLOP/token convention, validation TRN-02) [params]."""
        tied_extra = self.lm_head_params if self.tie_word_embeddings else 0.0
        return self.params_active - self.embedding_params + tied_extra

    def weight_bytes(self, precision: str = "bf16") -> float:
        """All weights at ``precision`` [B] (quantisation scales neglected)."""
        return self.params_total * bytes_per_element(precision)

    def kv_bytes_per_token(self, precision: str = "bf16") -> float:
        """KV-cache bytes one token occupies over all layers [B/token].

        GQA: ``2·L·H_kv·d_h·β``; MLA: ``L·(d_c + d_r)·β`` (latent plus rope key; the DSA indexer's keys
        are not counted). docs/rl-modeling.md §4.1; validation KV-01..KV-03.
        """
        beta = bytes_per_element(precision)
        if self.attention == "mla":
            return float(self.num_layers * (self.kv_lora_rank + self.qk_rope_head_dim) * beta)
        return float(2 * self.num_layers * self.num_kv_heads * self.head_dim * beta)

    def attended_context(self, context_tokens: float) -> float:
        """Tokens one query attends to at ``context_tokens`` of context (capped by DSA's top-k)."""
        if self.index_topk:
            return min(float(context_tokens), float(self.index_topk))
        return float(context_tokens)

    def attention_flops_per_token(self, context_tokens: float, *, absorbed: bool = False) -> float:
        """Forward attention-core FLOPs (QK^T and AV) for one token attending ``context_tokens`` [FLOP].

        ``2·L·H_q·(d_qk + d_v)·c`` (PaLM App. B counts ``2·d_h`` per head for each of the two matmuls).
        With ``absorbed=True`` (MLA decode with absorbed up-projections, DeepSeek-V3 inference)
        the per-head widths are ``d_c + d_r`` and ``d_c``. DSA caps ``c`` at ``index_topk`` and adds
        the indexer's ``2·n_i·d_i`` FLOPs per context token.
        """
        c = self.attended_context(context_tokens)
        if self.attention == "mla" and absorbed:
            width = (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
        else:
            width = self.qk_head_dim + self.value_head_dim
        flops = 2.0 * self.num_layers * self.num_attention_heads * width * c
        if self.index_n_heads:
            flops += 2.0 * self.num_layers * self.index_n_heads * self.index_head_dim * float(context_tokens)
        return flops

    def forward_flops_per_token(self, context_tokens: float = 0.0) -> float:
        """Forward FLOPs for one token at ``context_tokens`` of context: ``2·N_fl`` plus attention [FLOP]."""
        return 2.0 * self.flop_params + self.attention_flops_per_token(context_tokens)

    def training_flops_per_token(self, seq_tokens: float, *, causal: bool = True) -> float:
        """Model FLOPs per trained token (forward + backward) in a sequence of ``seq_tokens``.

        ``6·N_fl + c_attn·6·L·H_q·d_h·T`` with ``c_attn = 1`` causal (the average token attends
        ``T/2``), 2 for the non-causal PaLM/Megatron count (docs/rl-modeling.md §3.1; validation TRN-02).
        """
        ctx = seq_tokens / 2.0 if causal else float(seq_tokens)
        return 3.0 * self.forward_flops_per_token(ctx)

    def summary(self) -> dict[str, float | str]:
        """Headline figures, for tables."""
        return {
            "name": self.name,
            "attention": self.attention.upper() + (" + DSA" if self.index_topk else ""),
            "layers": self.num_layers,
            "hidden": self.hidden_size,
            "experts": f"{self.num_experts}/{self.experts_per_token}" if self.is_moe else "dense",
            "params_total [B]": self.params_total / 1e9,
            "params_active [B]": self.params_active / 1e9,
            "kv_bf16 [B/token]": self.kv_bytes_per_token("bf16"),
            "train_flops_4k [GFLOP/token]": self.training_flops_per_token(4096) / 1e9,
        }


# ---------------------------------------------------------------------- catalog
_ENTRY_KEYS = {"name", "aliases", "hf_repo", "published", "source", "date", "notes", "config"}


def _load_entry(raw: dict, path: str) -> ModelArch:
    from ..errors import ScenarioError

    entry = str(raw.get("name", "?"))
    unknown = set(raw) - _ENTRY_KEYS
    if unknown:
        raise DataFileError(path, entry, sorted(unknown)[0], f"unknown key; expected {sorted(_ENTRY_KEYS)}")
    for key in ("name", "config"):
        if key not in raw:
            raise DataFileError(path, entry, key, "missing")
    check_entry(path, entry, raw, require=("name", "source"), date_fields=("date",))
    pub = raw.get("published", {})
    check_entry(path, entry, pub, require=(), optional_values=("params_total", "params_active"),
                field_prefix="published")
    try:
        return ModelArch.from_hf_config(
            raw["config"], name=raw["name"], aliases=tuple(raw.get("aliases", ())),
            hf_repo=raw.get("hf_repo", ""), source=raw["source"], date=raw["date"],
            published_params_total=pub.get("params_total"), published_params_active=pub.get("params_active"),
        )
    except ScenarioError as exc:
        raise DataFileError(path, entry, exc.field, exc.message) from None


@functools.cache
def _catalog() -> dict[str, ModelArch]:
    out: dict[str, ModelArch] = {}
    folder = data_dir() / "models"
    for f in sorted(folder.iterdir(), key=lambda p: p.name):
        if not f.name.endswith(".json"):
            continue
        path = display_path(f)
        try:
            raw = json.loads(f.read_text())
        except json.JSONDecodeError as exc:
            raise DataFileError(path, "?", "?", f"malformed JSON: {exc}") from None
        arch = _load_entry(raw, path)
        if arch.name in out:
            raise DataFileError(path, arch.name, "name", "duplicate model name")
        out[arch.name] = arch
    return out


@functools.cache
def _index() -> dict[str, str]:
    return {normalize(a): m.name for m in _catalog().values() for a in (m.name, *m.aliases)}


def model_names() -> list[str]:
    """Canonical names of every model in the catalog."""
    return list(_catalog())


def model(name: str | ModelArch) -> ModelArch:
    """Look up a catalog model by name or alias (case-insensitive); a :class:`ModelArch` passes through.

    ``tc.model("Llama-3.3-70B")`` is the Llama-3.1-70B shape; ``tc.model("DeepSeek-R1")`` is DeepSeek-V3's.
    Unknown names raise :class:`~tcocalc.errors.UnknownEntryError` with close matches.
    """
    if isinstance(name, ModelArch):
        return name
    idx = _index()
    key = normalize(name)
    if key in idx:
        return _catalog()[idx[key]]
    names = {a: m.name for m in _catalog().values() for a in (m.name, *m.aliases)}
    matches: list[str] = []
    for m in close_matches(str(name), names):
        if names[m] not in matches:
            matches.append(names[m])
    raise UnknownEntryError("model", str(name), matches or model_names())


def model_table():
    """Every catalog model as a :class:`pandas.DataFrame` with derived and published counts and sources."""
    import pandas as pd

    rows = []
    for m in _catalog().values():
        row = m.summary()
        row["published_total [B]"] = (m.published_params_total or float("nan")) / 1e9
        row["published_active [B]"] = (m.published_params_active or float("nan")) / 1e9
        row["aliases"] = ", ".join(m.aliases)
        row["hf_repo"] = m.hf_repo
        row["source"] = m.source
        row["date"] = m.date
        rows.append(row)
    return pd.DataFrame(rows)
