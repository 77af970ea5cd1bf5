"""Episode statistics, jit-safe: per-role returns and lengths of finished episodes."""

from __future__ import annotations

import jax.numpy as jnp
from flax import struct

from jaxagents.core.wrappers.base import Wrapper


@struct.dataclass
class EpisodeStatsState:
    """``env_state`` plus running per-agent returns ``{role: f32[n]}`` and the length."""

    env_state: object
    episode_return: dict
    episode_length: jnp.ndarray


class EpisodeStats(Wrapper):
    """Adds to ``info`` on every step:

    * ``episode_return/<role>``: ``f32[]`` mean over the role's agents of the return
      accumulated so far in this episode, this step's reward included;
    * ``episode_length``: ``i32[]`` steps so far including this one;
    * ``episode_done``: ``bool[]`` this step ended the episode.

    So the returns and lengths of finished episodes are the entries where
    ``episode_done`` is True; average them with that mask. The accumulators restart at
    zero after a finished episode, so the wrapper may sit inside or outside an
    auto-reset. ``reset`` emits the same keys (zeros) so the info structure is stable.
    """

    def _info(self, ts, ret, length, done):
        info = dict(ts.info)
        for role, r in ret.items():
            info[f"episode_return/{role}"] = jnp.mean(r)
        info["episode_length"] = length
        info["episode_done"] = done
        return ts.replace(info=info)

    def reset_env(self, key, params):
        """The wrapped env's ``reset`` with zeroed accumulators and the episode keys in
        ``info`` (zeros, ``episode_done`` False)."""
        state, ts = self.env.reset(key, params)
        ret = {k: jnp.zeros((r.num_agents,), jnp.float32) for k, r in self.roles.items()}
        length = jnp.zeros((), jnp.int32)
        return EpisodeStatsState(state, ret, length), self._info(ts, ret, length, jnp.zeros((), bool))

    def step_env(self, key, state, actions, params):
        """The wrapped env's ``step``; adds this step's rewards to the running returns and
        reports them in ``info``, then zeroes the accumulators if the episode ended."""
        env_state, ts = self.env.step(key, state.env_state, actions, params)
        ret = {k: state.episode_return[k] + ts.reward[k] for k in self.roles}
        length = state.episode_length + 1
        done = ts.done
        ts = self._info(ts, ret, length, done)
        keep = lambda x: jnp.where(done, jnp.zeros_like(x), x)
        new = EpisodeStatsState(env_state, {k: keep(v) for k, v in ret.items()}, keep(length))
        return new, ts

    def inner_state(self, state):
        return state.env_state
