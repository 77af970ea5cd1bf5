"""``PPOConfig``: the static settings of the PPO family (IPPO, MAPPO, and self-play's
``ppo`` section), every field checked on construction with ``jaxagents.core.validate``
-- types, finite numbers, ranges -- so a bad value is a one-line error naming the
field before anything is built. Checks that need the environment are ``make_train``'s.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxagents.core.validate import (
    check_choice,
    check_float,
    check_int,
    check_positive_int,
)
from jaxagents.learners.policy_gradient import estimators
from jaxagents.learners.policy_gradient.update import OPTIMIZERS
from jaxagents.learners.skeleton import curriculum
from jaxagents.learners.skeleton.config import CommonConfig
from jaxagents.nn import NetworkConfig


@dataclasses.dataclass(frozen=True)
class PPOConfig(CommonConfig):
    """PPO settings (defaults: PureJaxRL / JaxMARL's IPPO).

    ``total_timesteps`` counts environment steps (one step of all agents of one
    environment); ``num_updates = total_timesteps // (num_envs * num_steps)``.
    """

    # num_envs 16, num_steps 128, total_timesteps 1M, lr 2.5e-4, anneal_lr, max_grad_norm 0.5,
    # gamma 0.99: CommonConfig's fields and defaults
    update_epochs: int = 4
    num_minibatches: int = 4
    optimizer: str = "adam"
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    ent_coef_final: float | None = None
    vf_coef: float = 0.5
    clip_per_stream: bool = False  # clip actor and critic gradients separately (JaxMARL MAPPO)
    network: NetworkConfig = NetworkConfig()
    central_critic: bool = False
    advantage: str = "gae"
    normalize: str = "minibatch"
    rae_alpha: float = 0.95
    gigpo_omega: float = 1.0
    shaped_reward: str | None = None
    shaped_reward_horizon: float = 0.0
    bootstrap_truncated: bool | None = None
    reset_budget: int | None = None
    agents_per_update: int | None = None
    role_lr_scale: Any = None
    role_start_update: Any = None
    role_gamma: Any = None
    env_schedule: Any = None  # {param: {from, to, start, end}}: env params ramped over updates (learners.curriculum)

    def __post_init__(self):
        self.check_common()
        object.__setattr__(self, "env_schedule", curriculum.parse(self.env_schedule))
        # per-role settings: {role: value}, kept as sorted pairs so the config stays hashable
        for name, kind in (("role_lr_scale", float), ("role_start_update", int), ("role_gamma", float)):
            v = getattr(self, name)
            if v is None:
                v = {}
            if not isinstance(v, (dict, tuple)):
                raise ValueError(f"{name} must be a mapping {{role: {kind.__name__}}}, got {v!r}")
            v = dict(v)
            for role, x in v.items():
                high = 1.0 if name == "role_gamma" else None
                if kind is int:
                    check_int(f"{name}[{role!r}]", x, low=0)
                else:
                    check_float(f"{name}[{role!r}]", x, low=0.0, high=high)
            object.__setattr__(self, name, tuple(sorted(v.items())))
        if isinstance(self.network, dict):
            object.__setattr__(self, "network", NetworkConfig(**self.network))
        for name in ("update_epochs", "num_minibatches"):
            object.__setattr__(self, name, check_positive_int(name, getattr(self, name)))
        object.__setattr__(self, "agents_per_update", check_positive_int("agents_per_update", self.agents_per_update, none_ok=True))
        object.__setattr__(self, "reset_budget", check_positive_int("reset_budget", self.reset_budget, none_ok=True))
        # every float must be a finite number in its range (lr=inf or ent_coef=nan would train to NaN)
        bounds = {
            "clip_eps": dict(low=0.0, low_open=True),
            "gae_lambda": dict(low=0.0, high=1.0), "rae_alpha": dict(low=0.0, high=1.0),
            "ent_coef": dict(low=0.0), "vf_coef": dict(low=0.0), "gigpo_omega": dict(low=0.0),
            "shaped_reward_horizon": dict(low=0.0),
        }
        for name, b in bounds.items():
            object.__setattr__(self, name, check_float(name, getattr(self, name), **b))
        object.__setattr__(self, "ent_coef_final", check_float("ent_coef_final", self.ent_coef_final, low=0.0, none_ok=True))
        for name in ("clip_per_stream", "central_critic"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.bootstrap_truncated is not None and not isinstance(self.bootstrap_truncated, bool):
            raise ValueError(f"bootstrap_truncated must be null, true or false, got {self.bootstrap_truncated!r}")
        if self.shaped_reward is not None and not isinstance(self.shaped_reward, str):
            raise ValueError(f"shaped_reward must be null or the name of an info entry, got {self.shaped_reward!r}")
        check_choice("advantage", self.advantage, estimators.ESTIMATORS)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_choice("normalize", self.normalize, estimators.NORMALIZATIONS)
        if self.network.recurrent and self.num_envs % self.num_minibatches:
            raise ValueError(
                f"recurrent training splits environments into minibatches: num_envs={self.num_envs} "
                f"must be divisible by num_minibatches={self.num_minibatches}"
            )
