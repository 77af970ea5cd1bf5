"""The settings every learner's config shares, checked in one place: the run's length
(``num_envs`` environments stepped ``num_steps`` times per update, ``total_timesteps``
environment steps in all), the optimiser's step (``lr``, ``anneal_lr``,
``max_grad_norm``) and the discount ``gamma``.

A learner's settings class subclasses ``CommonConfig`` (a frozen dataclass), redeclares
a shared field to give it the learner's own default, and calls ``check_common()`` first
in its ``__post_init__``; each value is then the checked one (one-line errors naming the
field, ``jaxagents.core.validate``).
"""

from __future__ import annotations

import dataclasses

from jaxagents.core.validate import check_bool, check_float, check_positive_int

# where the shared floats may lie: a learning rate or a clip of 0 would not train, and
# lr=inf or gamma=nan would train to NaN
_FLOATS = {"lr": dict(low=0.0, low_open=True), "max_grad_norm": dict(low=0.0, low_open=True),
           "gamma": dict(low=0.0, high=1.0)}


@dataclasses.dataclass(frozen=True)
class CommonConfig:
    """The shared fields (defaults: PureJaxRL's PPO; each learner sets its own)."""

    num_envs: int = 16
    num_steps: int = 128
    total_timesteps: int = 1_000_000
    lr: float = 2.5e-4
    anneal_lr: bool = True
    max_grad_norm: float = 0.5
    gamma: float = 0.99

    def check_common(self) -> None:
        """Check (and normalise in place) the shared fields: positive integers, at least
        one update's worth of ``total_timesteps``, finite floats in range, a boolean
        ``anneal_lr``. Raises ``ValueError`` naming the field."""
        for name in ("num_envs", "num_steps", "total_timesteps"):
            object.__setattr__(self, name, check_positive_int(name, getattr(self, name)))
        if self.total_timesteps < self.num_envs * self.num_steps:
            raise ValueError(f"total_timesteps={self.total_timesteps} is less than one update "
                             f"(num_envs * num_steps = {self.num_envs * self.num_steps})")
        for name, bounds in _FLOATS.items():
            object.__setattr__(self, name, check_float(name, getattr(self, name), **bounds))
        object.__setattr__(self, "anneal_lr", check_bool("anneal_lr", self.anneal_lr))

    @property
    def num_updates(self) -> int:
        """``total_timesteps // (num_envs * num_steps)``: the updates of a run (a remainder is not trained)."""
        return self.total_timesteps // (self.num_envs * self.num_steps)

    def replace(self, **kw):
        """A copy with the fields in ``kw`` changed, validated again as at construction."""
        return dataclasses.replace(self, **kw)
