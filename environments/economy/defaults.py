"""Params dataclasses built from a table of defaults (shared by the economies)."""

from __future__ import annotations

import jax.numpy as jnp


def from_defaults(cls, defaults: dict, overrides: dict, integers=("horizon",)):
    """``cls(**{**defaults, **overrides})`` with every value an array: ``i32`` for the
    fields named in ``integers``, ``f32`` otherwise. An unknown field is a
    ``ValueError`` naming it and the fields there are."""
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {unknown}; fields: {sorted(defaults)}")
    values = {**defaults, **overrides}
    return cls(**{k: jnp.asarray(v, jnp.int32 if k in integers else jnp.float32) for k, v in values.items()})
