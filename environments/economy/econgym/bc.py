"""EconGym's behaviour-cloned households (``agents/behavior_cloning/bc_agent.py``, commit
d81cd5d) as a ``ScriptedRoles`` policy of ``Society``.

EconGym's default households are a network cloned from the 2022 Survey of Consumer
Finances: the actor half of its ``mlp_net``, ``mu = tanh(W3 tanh(W2 tanh(W1 x + b1) +
b2) + b3)``, ``sigma = 0.05 exp(sigma_log)``, on each household's ``x = [education e,
wealth, age]`` (``[e, wealth]`` for infinitely lived households; wealth in dollars, as
EconGym observes it), and it acts ``N(mu, (0.01 sigma)^2)``. EconGym's runner scales only
its PPO, DDPG and SAC agents' actions from ``[-1, 1]`` onto their ranges, so the
network's outputs reach the economy as they are: the savings share (clipped to
``[-0.5, 1]``), the labour share of ``h_max`` and the risky share (clipped to ``[0,
1]``) themselves; ``household_bc`` turns them into our ``[-1, 1]`` actions that map onto
the same values. With several firms EconGym's network picks the employer uniformly at
random and spreads spending equally, as here. One network per household type (Ramsey, OLG, each
with or without the risky asset); ``bc_convert.py`` converts EconGym's checkpoints
(jaxagents does not ship them) into the ``.npz`` files ``load_weights`` reads.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

ACTOR_KEYS = ("fc1_a.weight", "fc1_a.bias", "fc2_a.weight", "fc2_a.bias", "action_mean.weight",
              "action_mean.bias", "sigma_log")
TYPE_FILES = {"ramsey": "ramsey", "olg": "OLG", "ramsey_risk_invest": "ramsey_risk_invest",
              "olg_risk_invest": "OLG_risk_invest"}
ENV_VAR = "ECONGYM_BC_WEIGHTS"


def load_weights(path: str) -> dict:
    """The actor arrays of one converted network (``bc_convert.py``'s ``.npz``):
    ``{name: f32 array}`` with ``fc1_a.weight`` ``[H, D]``, ``fc2_a.weight`` ``[H, H]``,
    ``action_mean.weight`` ``[A, H]``, their biases and ``sigma_log`` ``[1, A]``."""
    if not os.path.isfile(path):
        raise ValueError(f"bc_weights: no converted network at {path} (run bc_convert.py on EconGym's checkout)")
    with np.load(path) as f:
        missing = [k for k in ACTOR_KEYS if k not in f.files]
        if missing:
            raise ValueError(f"bc_weights: {path} is not a converted EconGym network (missing {missing})")
        w = {k: jnp.asarray(f[k], jnp.float32) for k in ACTOR_KEYS}
    h, d = w["fc1_a.weight"].shape
    a = w["action_mean.weight"].shape[0]
    want = {"fc1_a.bias": (h,), "fc2_a.weight": (h, h), "fc2_a.bias": (h,), "action_mean.weight": (a, h),
            "action_mean.bias": (a,), "sigma_log": (1, a)}
    for k, shape in want.items():
        if tuple(w[k].shape) != shape:
            raise ValueError(f"bc_weights: {path}: {k} has shape {tuple(w[k].shape)}, expected {shape}")
    return w


def weights_for(households: str, directory: str) -> dict:
    """The network of household type ``households`` (a ``Society`` household type) from
    a directory of converted networks."""
    return load_weights(os.path.join(directory, TYPE_FILES[households] + ".npz"))


def actor(w: dict, x):
    """``(mu f32[N, A], sigma f32[A])`` of EconGym's network on inputs ``x`` ``f32[N, D]``
    (its policy head ``(mean, 0.05 exp(sigma_log))``)."""
    hp = jax.lax.Precision.HIGHEST
    h = jnp.tanh(jnp.dot(x, w["fc1_a.weight"].T, precision=hp) + w["fc1_a.bias"])
    h = jnp.tanh(jnp.dot(h, w["fc2_a.weight"].T, precision=hp) + w["fc2_a.bias"])
    mu = jnp.tanh(jnp.dot(h, w["action_mean.weight"].T, precision=hp) + w["action_mean.bias"])
    return mu, 0.05 * jnp.exp(w["sigma_log"][0])


def inputs(state, olg: bool):
    """EconGym's network inputs ``f32[C, 2 or 3]`` from a ``SocietyState``: education
    (productivity ``e``), wealth in dollars and, with overlapping generations, age."""
    cols = [state.e, state.assets] + ([state.age] if olg else [])
    return jnp.stack(cols, axis=1).astype(jnp.float32)


def household_bc(env, w: dict):
    """``fn(key, state, timestep, params) -> f32[C, A]``: the households' actions by
    EconGym's behaviour-cloned network ``w`` (``ScriptedRoles`` signature)."""
    cfg = env.config
    m = cfg.num_firms
    n_out = w["action_mean.weight"].shape[0]
    wanted = 3 if cfg.risk_invest else 2
    if n_out != wanted:
        raise ValueError(f"bc_weights: the network has {n_out} actions, {cfg.households!r} households need {wanted}")
    if w["fc1_a.weight"].shape[1] != (3 if cfg.olg else 2):
        raise ValueError(f"bc_weights: the network reads {w['fc1_a.weight'].shape[1]} inputs, "
                         f"{cfg.households!r} households give {3 if cfg.olg else 2}")

    def policy(key, state, ts, params):
        k_noise, k_firm = jax.random.split(key)
        mu, sigma = actor(w, inputs(state, cfg.olg))
        real = mu + 0.01 * sigma * jax.random.normal(k_noise, mu.shape)
        return to_actions(real, params, m, k_firm)

    return policy


def to_actions(real, params, num_firms, key):
    """Our ``[-1, 1]`` household actions ``f32[C, A]`` for EconGym's unscaled network
    outputs ``real`` ``f32[C, 2 or 3]`` (savings share, labour share, risky share), each
    clipped to its range as EconGym clips them; with several firms an employer drawn
    uniformly and an equal spending split appended."""
    lo, hi = params.save_range[0], params.save_range[1]
    save = jnp.clip(real[:, 0], lo, hi)
    cols = [2.0 * (save - lo) / (hi - lo) - 1.0] + [2.0 * jnp.clip(real[:, j], 0.0, 1.0) - 1.0
                                                    for j in range(1, real.shape[1])]
    act = jnp.stack(cols, axis=1)
    if num_firms > 1:  # employer uniform at random, spending split equally (EconGym's fill-in)
        employer = 2.0 * jax.random.uniform(key, (real.shape[0], 1)) - 1.0
        act = jnp.concatenate([act, employer, jnp.zeros((real.shape[0], num_firms))], axis=1)
    return jnp.clip(act, -1.0, 1.0).astype(jnp.float32)

    return policy
