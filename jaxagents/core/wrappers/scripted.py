"""Scripted roles: some roles of an environment act by fixed rules inside ``step``,
so a learner sees only the others.

``ScriptedRoles(env, {"firm": firm_rule, ...})`` removes the scripted roles from
``roles`` and from every per-role dict of the time steps it returns (``obs``,
``reward``, ``action_mask``, ``active``); ``step`` takes actions for the remaining
roles only and fills in the scripted ones before stepping the wrapped environment.

A policy is a pure, jit-able function::

    policy(key, state, timestep, params) -> action  # [n_role, *action_shape]

called once per step for one (unbatched) environment, where ``key`` is a fresh key
for that role and that step, ``state`` is the wrapped environment's state, ``params``
its params, and ``timestep`` the last ``TimeStep`` the wrapped environment returned
(from ``reset`` or the previous ``step``) with its per-role dicts restricted to the
scripted roles: what the scripted agents would have observed, their legal actions
and the reward of their last transition, plus ``terminated``/``truncated``/``info``.
That ``timestep`` is kept in the wrapper's state (``ScriptedState.last``) so that
observation-based rules (e.g. a Taylor rule reading inflation) need no recomputation.
The action must match the role's action space in shape and kind (the wrapped
environment's ``check_actions`` raises at trace time otherwise); its effect when out
of range is the wrapped environment's documented one.

Everything else -- ``terminated``, ``truncated``, ``info``, params, ``global_obs``
and ``render`` -- passes through unchanged. The scripted roles' rewards are not lost:
they are in ``state.last.reward``.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
from flax import struct

from jaxagents.core.types import TimeStep
from jaxagents.core.wrappers.base import Wrapper

Policy = Callable[[jax.Array, Any, TimeStep, Any], jax.Array]

_PER_ROLE = ("obs", "reward", "action_mask", "active")


@struct.dataclass
class ScriptedState:
    """The wrapped environment's state and its last time step, restricted to the
    scripted roles (what their policies read on the next step)."""

    env_state: Any
    last: TimeStep


def _restrict(ts: TimeStep, roles) -> TimeStep:
    """``ts`` with every per-role dict keeping only ``roles``."""
    return ts.replace(**{f: {r: getattr(ts, f)[r] for r in roles} for f in _PER_ROLE})


class ScriptedRoles(Wrapper):
    """Let ``policies`` play some roles of ``env`` (see the module docstring).

    Args:
        env: any jaxagents ``Env`` (wrappers included).
        policies: ``{role: policy}``; each role must be one of ``env.roles``, and at
            least one role must be left for the learner.
    """

    def __init__(self, env, policies: dict[str, Policy]):
        super().__init__(env)
        if not isinstance(policies, dict) or not policies:
            raise ValueError(f"ScriptedRoles: policies must be a non-empty dict {{role: fn}}, got {policies!r}")
        unknown = sorted(set(policies) - set(env.roles))
        if unknown:
            raise ValueError(f"ScriptedRoles: policies name unknown roles {unknown}; roles are {sorted(env.roles)}")
        bad = sorted(r for r, fn in policies.items() if not callable(fn))
        if bad:
            raise TypeError(f"ScriptedRoles: policies for {bad} are not callable")
        if set(policies) == set(env.roles):
            raise ValueError(f"ScriptedRoles: every role {sorted(env.roles)} is scripted; leave at least one to learn")
        # keep the wrapped env's role order for both groups (policies are called in it)
        self.policies = {r: policies[r] for r in env.roles if r in policies}
        self.scripted = tuple(self.policies)
        self.roles = {r: role for r, role in env.roles.items() if r not in policies}

    @property
    def name(self) -> str:
        """``ScriptedRoles[scripted roles]<inner name>``."""
        return f"ScriptedRoles[{','.join(self.scripted)}]<{self.env.name}>"

    def reset_env(self, key, params):
        """The wrapped env's ``reset``: the state keeps the time step restricted to the
        scripted roles (``ScriptedState.last``); the returned time step has only the
        learner's roles."""
        env_state, ts = self.env.reset(key, params)
        return ScriptedState(env_state, _restrict(ts, self.scripted)), _restrict(ts, self.roles)

    def scripted_actions(self, key, state: ScriptedState, params) -> dict:
        """``{scripted role: action}`` for the next step of ``state``."""
        keys = jax.random.split(key, len(self.scripted))
        return {r: self.policies[r](k, state.env_state, state.last, params) for k, r in zip(keys, self.scripted)}

    def step_env(self, key, state: ScriptedState, actions, params):
        """Fill in the scripted roles' actions from their policies (one half of ``key``), step
        the wrapped env with the other half, and split its time step as ``reset_env`` does.
        ``actions`` holds the learner's roles only."""
        k_env, k_policy = jax.random.split(key)
        full = {**actions, **self.scripted_actions(k_policy, state, params)}
        env_state, ts = self.env.step(k_env, state.env_state, full, params)
        return ScriptedState(env_state, _restrict(ts, self.scripted)), _restrict(ts, self.roles)

    def inner_state(self, state):
        return state.env_state

    def exact_evaluation(self, params=None):
        # an exact evaluator scores a policy for every role; the scripted roles'
        # policies are not logits functions, so there is nothing exact to offer
        return None
