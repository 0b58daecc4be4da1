"""Attention for the checkpoint server: PyTorch's scaled dot-product attention over the
model's own key/value heads.

transformers' `sdpa` attention copies each key/value head once per query head it serves
(`repeat_kv`: 3 copies for SmolLM2's 9 query heads over 3 key/value heads) whenever a
mask is given, which the batched cache always gives (its rows hold padding). On a CPU
that copy of the whole cache, layer by layer, cost more than the attention itself.
PyTorch's `enable_gqa` reads the shared heads in place and gives the same numbers.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface, PreTrainedModel
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

NAME = "textenvs_sdpa_gqa"


def grouped_query_sdpa(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: object,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature: (batch, heads, query, dim) in, the
    output as (batch, query, heads, dim)."""
    q_length = query.shape[2]
    causal = getattr(module, "is_causal", True) if is_causal is None else is_causal
    # without a mask, the query's tokens are the whole sequence (a first read)
    causal = bool(causal and attention_mask is None and q_length > 1)
    if causal and key.shape[2] != q_length:
        raise ValueError("causal attention without a mask over a longer key (no cache here)")
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=causal,
        enable_gqa=key.shape[1] != query.shape[1],
    )
    return out.transpose(1, 2).contiguous(), None


def use_grouped_query_sdpa(model: PreTrainedModel) -> None:
    """Make `model` attend with `grouped_query_sdpa` (its masks built as for `sdpa`)."""
    AttentionInterface.register(NAME, grouped_query_sdpa)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    model.set_attn_implementation(NAME)
