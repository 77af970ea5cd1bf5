"""Piecewise-linear income tax schedules: bracket sets, tax, marginal rates, validation.

A schedule is ``B`` bracket rates ``tau`` and ``B`` lower cutoffs ``c`` with
``c_0 = 0 < c_1 < ... < c_{B-1}``; bracket ``b`` is ``[c_b, c_{b+1})`` (the last one is
open-ended). The tax on a pre-tax income ``z >= 0`` is

    T(z) = sum_b tau_b * clip(z - c_b, 0, c_{b+1} - c_b)                        (spec)
         = sum_b (tau_b - tau_{b-1}) * max(z - c_b, 0),   tau_{-1} = 0           (used)

The second form is the same function written with rate *increments*: it needs no
bracket widths, no infinity for the top bracket, and one fused pass over the agents
with ``B`` scalar coefficients (on CPU about 20x faster than broadcasting ``z`` against
a ``[N, B]`` grid, which is what matters at a million agents). ``B`` is static and
small, so the Python loop over brackets below unrolls at trace time; nothing loops
over agents.

Every function takes agents on the last axis of ``z`` and allows batch axes;
``rates``/``cutoffs`` are ``[..., B]`` and broadcast against ``z``'s batch axes.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

BRACKET_SETS: dict[str, tuple[float, ...]] = {
    # lower cutoffs c_0 = 0 < c_1 < ... (the top bracket is open-ended)
    "flat": (0.0,),
    "three": (0.0, 90_000.0, 159_100.0),
    "us_federal": (0.0, 11_600.0, 47_150.0, 100_525.0, 191_950.0, 243_725.0, 609_350.0),
}
"""Named bracket sets (dollars of annual income): a flat tax, three brackets (the LLM
Economist's), and the US federal 2024 single-filer brackets."""

US_FEDERAL_2024_RATES: tuple[float, ...] = (0.10, 0.12, 0.22, 0.24, 0.32, 0.35, 0.37)
"""The 2024 US federal marginal rates of the ``"us_federal"`` brackets."""


def cutoffs_of(brackets) -> np.ndarray:
    """Lower cutoffs ``f32[B]`` of a named bracket set or of a sequence of cutoffs.

    Raises ``ValueError`` naming the allowed names, or why the cutoffs are invalid.
    """
    if isinstance(brackets, str):
        if brackets not in BRACKET_SETS:
            raise ValueError(
                f"brackets must be one of {sorted(BRACKET_SETS)} or a sequence of cutoffs, got {brackets!r}")
        return np.asarray(BRACKET_SETS[brackets], np.float32)
    cutoffs = np.asarray(brackets, np.float64)
    check_cutoffs(cutoffs, "brackets")
    return cutoffs.astype(np.float32)


# --------------------------------------------------------------------------- validation
def check_cutoffs(cutoffs, name: str = "cutoffs") -> None:
    """Host check: ``[..., B]`` with ``c_0 = 0`` and strictly increasing finite values."""
    c = np.asarray(cutoffs, np.float64)
    if c.ndim < 1 or c.shape[-1] < 1:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of lower cutoffs, got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError(f"{name} must be finite (the top bracket is open-ended by itself), got {c.tolist()}")
    if np.any(c[..., 0] != 0):
        raise ValueError(f"{name}[0] must be 0 (the first bracket starts at zero income), got {c[..., 0].tolist()}")
    if np.any(np.diff(c, axis=-1) <= 0):
        raise ValueError(f"{name} must be strictly increasing (sorted brackets), got {c.tolist()}")


def check_rates(rates, name: str = "rates") -> None:
    """Host check: every rate is a finite fraction in ``[0, 1]`` (0% to 100%)."""
    r = np.asarray(rates, np.float64)
    if not np.all(np.isfinite(r)) or np.any(r < 0) or np.any(r > 1):
        raise ValueError(f"{name} must be fractions in [0, 1] (0% to 100%), got {r.tolist()}")


# --------------------------------------------------------------------------- the schedule
def _increments(rates):
    """``tau_b - tau_{b-1}`` with ``tau_{-1} = 0``: ``[..., B]``."""
    return jnp.diff(rates, axis=-1, prepend=jnp.zeros_like(rates[..., :1]))


def _per_bracket(values, b):
    """Entry ``b`` of ``[..., B]`` as ``[..., 1]``, broadcastable over the agent axis."""
    return values[..., b : b + 1]


def _agents(z):
    """``z`` with an agent axis (a scalar income is one agent) and an undo function."""
    z = jnp.asarray(z)
    if not jnp.issubdtype(z.dtype, jnp.floating):
        z = z.astype(jnp.float32)
    if z.ndim == 0:
        return z[None], lambda out: out[..., 0]
    return z, lambda out: out


def tax(z, rates, cutoffs):
    """Tax owed on pre-tax incomes ``z`` (``[..., N]`` or a scalar, ``z >= 0``)."""
    z, undo = _agents(z)
    d = _increments(jnp.asarray(rates, z.dtype))
    c = jnp.asarray(cutoffs, z.dtype)
    total = _per_bracket(d, 0) * jnp.maximum(z, 0)
    for b in range(1, d.shape[-1]):
        total = total + _per_bracket(d, b) * jnp.maximum(z - _per_bracket(c, b), 0)
    return undo(total)


def bracket_index(z, cutoffs):
    """Index ``b`` of the bracket ``[c_b, c_{b+1})`` holding each income: ``i32``, ``z``'s shape."""
    z, undo = _agents(z)
    c = jnp.asarray(cutoffs, z.dtype)
    idx = jnp.zeros(z.shape, jnp.int32)
    for b in range(1, c.shape[-1]):
        idx = idx + (z >= _per_bracket(c, b)).astype(jnp.int32)
    return undo(idx)


def marginal_rate(z, rates, cutoffs):
    """Marginal rate at each income (the rate of the bracket holding it); ``z``'s shape."""
    z, undo = _agents(z)
    d = _increments(jnp.asarray(rates, z.dtype))
    c = jnp.asarray(cutoffs, z.dtype)
    out = jnp.broadcast_to(_per_bracket(d, 0), jnp.broadcast_shapes(z.shape, d[..., :1].shape))
    for b in range(1, d.shape[-1]):
        out = out + jnp.where(z >= _per_bracket(c, b), _per_bracket(d, b), 0)
    return undo(out)


def tax_at_cutoffs(rates, cutoffs):
    """``T(c_b)`` for every cutoff: ``[..., B]`` (the intercepts of the linear pieces)."""
    rates = jnp.asarray(rates, jnp.float32)
    c = jnp.asarray(cutoffs, jnp.float32)
    widths = jnp.diff(c, axis=-1)
    paid = jnp.cumsum(rates[..., :-1] * widths, axis=-1)
    return jnp.concatenate([jnp.zeros_like(c[..., :1]), paid], axis=-1)
