"""What every mean-field environment shares: the agent view, the distributional view
and the tabular model the equilibrium solvers read.

A mean-field environment has ``S`` individual states, ``A`` actions and a horizon of
``H`` steps. It is offered in two views of the same dynamics:

* **Agent view** (the ``Env`` API, one role ``"agent"`` with ``N`` agents). Each agent
  has an individual state ``s_i`` in ``0..S-1`` (``agent_states(state)``) and observes
  its own state plus a small population summary; per-step work is ``O(N)``
  (histograms with ``bincount``, per-agent gathers from ``[S]``-sized tables). The
  state keeps ``hist``, the empirical distribution ``f32[S]`` of agent states, and the
  time ``t``. The horizon *terminates* the episode (the time is observed).
* **Distributional view** (``dist_reset``/``dist_step``): the state is the histogram
  ``mu`` (``f32[S]``, sums to 1) and the population plays a tabular policy
  ``pi[S, A]``; ``mu_{t+1}[s'] = sum_{s,a} mu_t[s] pi[s,a] P_t[s,a,s']``. It is the
  ``N -> infinity`` limit of the agent view (tested: the empirical histogram of ``N``
  agents approaches it like ``1/sqrt(N)``).

Both views are built on the tabular model that subclasses define and that
``jaxagents_environments.meanfield.solvers`` uses:

* ``initial_distribution(params) -> f32[S]``;
* ``transition(nu, t, params) -> f32[S, A, S]``: ``P(s' | s, a)`` given the
  state-action distribution ``nu[S, A]`` of the population at time ``t`` (``nu``
  rather than ``mu`` because some interactions depend on what others *do*, e.g. the
  contact levels of infected agents);
* ``reward(nu, mu_next, t, params) -> f32[S, A]``: expected reward of one agent in
  state ``s`` taking ``a`` (``mu_next`` for rewards that look at the arrival density);
* ``legal_table``: ``bool[S, A]`` host array of legal actions.

A policy table is normalised by ``normalize_policy``: negative entries and illegal
actions get probability 0 and an all-zero row becomes uniform over the legal actions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Env
from jaxagents.core.histogram import counts
from jaxagents.core.rng import agent_uniforms, check_rng

ROLE = "agent"
MASS_TOL = 1e-4  # tolerance on "sums to 1" for host-side checks (f32 histograms)


@struct.dataclass
class DistState:
    """Distributional-view state: ``mu`` ``f32[S]`` (sums to 1) and time ``t`` ``i32[]``."""

    mu: jax.Array
    t: jax.Array


# ----------------------------------------------------------------------------- checks
def check_distribution(name: str, mu, size: int | None = None, axis: int = -1) -> None:
    """Raise ``ValueError`` unless ``mu`` is finite, non-negative and sums to 1 along
    ``axis`` (within ``MASS_TOL``); ``size`` checks the length of that axis."""
    mu = np.asarray(mu, np.float64)
    if size is not None and (mu.ndim == 0 or mu.shape[axis] != size):
        raise ValueError(f"{name} must have length {size} along axis {axis}, got shape {mu.shape}")
    if not np.all(np.isfinite(mu)):
        raise ValueError(f"{name} must be finite")
    if np.any(mu < 0):
        raise ValueError(f"{name} must be non-negative (a probability distribution), got min {mu.min():.3g}")
    total = mu.sum(axis=axis)
    if np.any(np.abs(total - 1.0) > MASS_TOL):
        raise ValueError(f"{name} must sum to 1 (a probability distribution), got sums {np.round(total, 6).tolist()}")


def check_range(name: str, value, lo: float | None = 0.0, hi: float | None = None) -> None:
    """Raise ``ValueError`` naming ``params.<name>`` unless every entry is finite and in
    ``[lo, hi]`` (``None`` = unbounded)."""
    v = np.asarray(value, np.float64)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"params.{name} must be finite, got {v.tolist()}")
    if lo is not None and np.any(v < lo):
        raise ValueError(f"params.{name} must be >= {lo}" + (f" and <= {hi}" if hi is not None else "") + f", got {v.tolist()}")
    if hi is not None and np.any(v > hi):
        raise ValueError(f"params.{name} must be <= {hi}" + (f" and >= {lo}" if lo is not None else "") + f", got {v.tolist()}")


def check_shape(name: str, value, shape: tuple) -> None:
    if tuple(np.shape(value)) != tuple(shape):
        raise ValueError(f"params.{name} must have shape {tuple(shape)}, got {tuple(np.shape(value))}")


def check_int_arg(name: str, value, lo: int, hi: int | None = None) -> int:
    """Constructor argument check: an int in ``[lo, hi]``."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= lo
    if ok and hi is not None:
        ok = value <= hi
    if not ok:
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be an int {rng}, got {value!r}")
    return int(value)


# ----------------------------------------------------------------------------- helpers
def histogram(idx: jax.Array, num_bins: int) -> jax.Array:
    """``f32[num_bins]`` fraction of entries of ``idx`` (``i32[N]``) in each bin.

    ``O(N)``, no sort: ``jaxagents.core.histogram.counts`` (compares for a few bins,
    else one flat scatter-add, also under ``vmap``)."""
    return counts(idx, num_bins) / jnp.float32(idx.shape[0])


SMALL_TABLE = 16


def lookup(table: jax.Array, idx: jax.Array) -> jax.Array:
    """``table[idx]`` for a 1-D ``table`` and per-agent indices ``idx`` (in range).

    Tables of at most ``SMALL_TABLE`` entries use a chain of selects: on XLA:CPU a
    gather whose result feeds a reduction (a mean reward, the harness's reward sum)
    runs about 30x slower than this vectorised chain at 10^6 agents."""
    n = table.shape[0]
    if n > SMALL_TABLE:
        return table[idx]
    out = jnp.broadcast_to(table[0], idx.shape)
    for k in range(1, n):
        out = jnp.where(idx == k, table[k], out)
    return out


def normalize_policy(policy: jax.Array, legal: jax.Array) -> jax.Array:
    """``policy[..., S, A]`` as probabilities over the legal actions (module docstring)."""
    p = jnp.where(legal, jnp.maximum(policy, 0.0), 0.0)
    total = p.sum(-1, keepdims=True)
    uniform = legal / legal.sum(-1, keepdims=True)
    return jnp.where(total > 0, p / jnp.where(total > 0, total, 1.0), uniform)


def sample_from_rows(u: jax.Array, probs: jax.Array, rows: jax.Array) -> jax.Array:
    """Inverse-CDF sampling: ``i32[N]`` index drawn from row ``rows[i]`` of
    ``probs[R, K]`` with the uniform ``u[i]``. ``O(N K)`` with ``K`` small."""
    cdf = jnp.cumsum(probs, axis=-1)
    cdf = cdf / cdf[:, -1:]  # guard against rounding: the last entry is exactly 1
    return sum((u >= lookup(cdf[:, j], rows)).astype(jnp.int32) for j in range(probs.shape[-1] - 1))


class MeanFieldEnv(Env):
    """Base class of the mean-field environments (see the module docstring).

    Subclasses set ``num_states``, ``num_actions``, ``horizon``, ``roles`` (one role
    ``"agent"``), ``legal_table`` and implement the model methods and
    ``reset_env``/``step_env``/``agent_states``. Their states carry ``hist`` and ``t``.
    """

    num_states: int
    num_actions: int
    horizon: int
    legal_table: np.ndarray  # bool[S, A]
    state_names: tuple[str, ...] = ()

    def _setup(self, num_agents: int, horizon: int, rng: str) -> None:
        self.n = check_int_arg("num_agents", num_agents, 1)
        self.horizon = check_int_arg("horizon", horizon, 1)
        self.rng = check_rng(rng)

    # ------------------------------------------------------------------ model
    def initial_distribution(self, params) -> jax.Array:
        raise NotImplementedError

    def transition(self, nu: jax.Array, t: jax.Array, params) -> jax.Array:
        raise NotImplementedError

    def reward(self, nu: jax.Array, mu_next: jax.Array, t: jax.Array, params) -> jax.Array:
        raise NotImplementedError

    def agent_states(self, state) -> jax.Array:
        """``i32[N]`` individual state index of every agent."""
        raise NotImplementedError

    @property
    def legal(self) -> jax.Array:
        return jnp.asarray(self.legal_table)

    # ------------------------------------------------------------------ distributional view
    def dist_state(self, mu, t=0) -> DistState:
        """A distributional state from a histogram, checked on the host when concrete."""
        if not isinstance(mu, jax.core.Tracer):
            check_distribution("mu", mu, self.num_states)
        return DistState(mu=jnp.asarray(mu, jnp.float32), t=jnp.asarray(t, jnp.int32))

    def dist_reset(self, params=None) -> DistState:
        params = self._params(params)
        return DistState(mu=self.initial_distribution(params), t=jnp.zeros((), jnp.int32))

    def dist_step(self, dstate: DistState, policy: jax.Array, params=None):
        """Apply the population policy ``policy[S, A]`` to ``mu``.

        Returns ``(DistState, mean_reward f32[])``: the next histogram and the
        population's average reward of this step."""
        params = self._params(params)
        pi = normalize_policy(jnp.asarray(policy, jnp.float32), self.legal)
        nu = dstate.mu[:, None] * pi
        mu_next = jnp.einsum("sa,sat->t", nu, self.transition(nu, dstate.t, params))
        r = self.reward(nu, mu_next, dstate.t, params)
        return DistState(mu=mu_next, t=dstate.t + 1), jnp.sum(nu * r)

    # ------------------------------------------------------------------ agent view helpers
    def uniforms(self, key: jax.Array) -> jax.Array:
        """``f32[N]`` one uniform number per agent (``rng`` chosen at construction)."""
        return agent_uniforms(key, self.n, self.rng)

    def tabular_actions(self, key: jax.Array, state, policy: jax.Array) -> dict:
        """Every agent draws its action from ``policy[S, A]`` at its own state:
        ``{"agent": i32[N]}`` (for scripted rollouts and the law-of-large-numbers tests)."""
        pi = normalize_policy(jnp.asarray(policy, jnp.float32), self.legal)
        return {ROLE: sample_from_rows(self.uniforms(key), pi, self.agent_states(state))}

    @property
    def global_obs_shape(self) -> tuple[int]:
        return (self.num_states + 1,)

    def global_obs(self, state, params=None) -> jax.Array:
        """The population histogram and the time: ``f32[S + 1]`` = ``[hist, t / H]``."""
        t = jnp.minimum(state.t, self.horizon) / self.horizon
        return jnp.concatenate([state.hist, t.astype(jnp.float32)[None]])
