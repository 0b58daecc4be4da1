"""Opt-in scenario variants (reset options) that leave default play exactly as it was."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer


def withheld_option(options: dict[str, Any]) -> bool:
    """The `withheld` reset option (the withheld-knowledge variant): true or false."""
    withheld = options.get("withheld", False)
    if not isinstance(withheld, bool):
        raise ValueError(f"withheld must be true or false, not {withheld!r}")
    return withheld


class VariantObservation(BaseModel):
    """An observation model with fields only a variant sets (`variant_fields`): unset
    (None), they are left out of its dump, as the observation dict leaves them out in
    default play."""

    variant_fields: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _without_unset_variant_fields(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        for key in self.variant_fields:
            if data.get(key) is None:
                data.pop(key, None)
        return data
