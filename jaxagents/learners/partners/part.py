"""The interface of a partner part, and the three loops a learner runs over its parts.

A part is one partner or opponent mechanism (a snapshot pool, a league's payoff table,
a main exploiter, a parameter average, a distilled average policy). It owns one field
of the learner's ``TrainState.extra`` (a ``flax.struct`` dataclass with a field per part
that defaults to None, e.g. self-play's ``SelfPlayExtra``) and has three behaviours: its
initial state, its update after every PPO step, its evaluation. A learner lists its
parts; ``init``, ``after_update`` and ``evaluate`` below run them in the list's order.
A part may read what the parts before it did this update (``Context.new`` and
``Context.notes``), so the list's order is where the parts' dependencies are written.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax


@dataclasses.dataclass
class Context:
    """What one update hands its parts, in order (``Part.after_update``).

    Attributes:
        params: the learner's parameters after this update's gradient steps (one role's tree).
        update: ``i32[]``, the updates done, this one included.
        traj: the role's rollout ``Transition`` ``[T, E, n, ...]``, what the update trained on.
        before: the ``extra`` the rollout played with (every part's state before this update).
        new: ``{field: state}``, the new states of the parts earlier in the list.
        notes: ``{field: value}``, what an earlier part hands the later ones besides its
            state (the league: this update's draws and outcomes, which the exploiter fits).
    """

    params: dict
    update: jax.Array
    traj: Any
    before: Any
    new: dict = dataclasses.field(default_factory=dict)
    notes: dict = dataclasses.field(default_factory=dict)


# exact(params, prefix, weights=None) -> {prefix + name: f32[]}: a game's sampling-free measures of a
# policy (with weights f32[K], of the mixed strategy over K stacked params); {} where the game has none
Exact = Callable[..., dict]


class Part:
    """One partner mechanism: ``field`` names the ``extra`` field holding its state;
    subclasses override ``init`` and whichever of ``after_update``/``evaluate`` they use."""

    field: str = ""

    def init(self, params: dict, key: jax.Array) -> Any:
        """The part's first state from the learner's initial ``params`` (one role's tree)
        and the run's initialisation ``key``."""
        raise NotImplementedError

    def after_update(self, state: Any, ctx: Context) -> tuple[Any, dict]:
        """``(new state, metrics {name: f32[]})`` after one update; default: unchanged, none."""
        return state, {}

    def evaluate(self, state: Any, exact: Exact) -> dict:
        """Metrics ``{name: f32[]}`` of the part's own policies, measured with ``exact``;
        default: none."""
        return {}


def check(parts: list[Part], extra_type: type) -> None:
    """One-line error unless every part owns a distinct field of ``extra_type``."""
    fields = [p.field for p in parts]
    unknown = sorted(set(fields) - {f.name for f in dataclasses.fields(extra_type)})
    if unknown or len(set(fields)) != len(fields):
        raise ValueError(f"parts must own distinct fields of {extra_type.__name__}, got {fields}")


def init(parts: list[Part], extra_type: type, params: dict, key: jax.Array):
    """``extra_type`` with every part's first state (a field no part owns stays None)."""
    check(parts, extra_type)
    return extra_type(**{p.field: p.init(params, key) for p in parts})


def after_update(parts: list[Part], extra, params: dict, update: jax.Array, traj) -> tuple[Any, dict]:
    """``(extra, metrics)`` after one update: each part in the list's order, each seeing
    the new states (and notes) of those before it."""
    ctx = Context(params, update, traj, extra)
    metrics = {}
    for part in parts:
        ctx.new[part.field], m = part.after_update(getattr(extra, part.field), ctx)
        metrics.update(m)
    return extra.replace(**ctx.new), metrics


def evaluate(parts: list[Part], extra, exact: Exact) -> dict:
    """Every part's evaluation of its state in ``extra``."""
    metrics = {}
    for part in parts:
        metrics.update(part.evaluate(getattr(extra, part.field), exact))
    return metrics
