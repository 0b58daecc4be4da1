"""The sampling policy beside a `--reward-weighted` run, sharing the trained model's
frozen bottom.

With `--train-layers N` the bottom layers of the trained model never change, so they are
the starting model's own, and the hidden states entering the first trained layer are
the same in both. `ReferenceTop` keeps only the starting model's layers above that
point (and its norm and output head) and feeds them the hidden states the trained
model's forward pass has already computed: the same log-probabilities (checked, within
float rounding, when it is built) for the reference's share of a step, 12 layers of 30
in the EM Anomaly recipe where it ran all 30 before, and its bottom layers' memory.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import PreTrainedModel

from textenvs.training.settings import TrainingError
from textenvs.training.trainers import decoder_layers

#: how far the kept top's logits may differ from the whole model's before it is refused
TOLERANCE = 1e-4


def frozen_bottom(model: PreTrainedModel) -> int:
    """How many decoder layers, from the bottom, `model` trains nothing in (0 while its
    input embeddings train: then no hidden state is shared)."""
    if any(parameter.requires_grad for parameter in model.get_input_embeddings().parameters()):
        return 0
    frozen = 0
    for layer in decoder_layers(model):
        if any(parameter.requires_grad for parameter in layer.parameters()):
            break
        frozen += 1
    return frozen


class ReferenceTop:
    """`reference` above its bottom `shared` decoder layers (it keeps them no more), fed
    the hidden states that enter layer `shared`: `hidden_states[shared]` of the trained
    model's forward pass with `output_hidden_states`."""

    def __init__(self, reference: PreTrainedModel, shared: int) -> None:
        inner = reference.model
        kept = list(inner.layers[shared:])
        for index, layer in enumerate(kept):
            layer.self_attn.layer_idx = index  # the top's own cache counts from 0
        inner.layers = torch.nn.ModuleList(kept)
        reference.config.num_hidden_layers = len(kept)
        if getattr(reference.config, "layer_types", None):
            reference.config.layer_types = reference.config.layer_types[shared:]
        self.model = reference
        self.shared = shared

    @classmethod
    def checked(
        cls, reference: PreTrainedModel, model: PreTrainedModel, probe: list[int]
    ) -> ReferenceTop | None:
        """The top of `reference` above `model`'s frozen bottom, checked to give what
        `reference` whole gives on `probe` (token ids); None where `model` trains every
        layer."""
        shared = frozen_bottom(model)
        if shared == 0:
            return None
        ids = torch.tensor([probe], device=model.device)
        with torch.no_grad():
            whole = reference(input_ids=ids).logits
            entering = model(input_ids=ids, output_hidden_states=True).hidden_states[shared]
            top = cls(reference, shared)
            if torch.allclose(top(entering).logits, whole, atol=TOLERANCE, rtol=0):
                return top
        raise TrainingError(
            "--reward-weighted: the starting model's bottom layers do not give the trained "
            "model's hidden states (another starting model, or an architecture that changes "
            "its inputs); train every layer (leave --train-layers out)"
        )

    def __call__(self, entering: torch.Tensor, **kwargs: Any) -> Any:
        return self.model(inputs_embeds=entering, **kwargs)
