"""ScriptedRoles: scripted roles act inside ``step``; the learner sees the others only.

Hand-checked on the iterated prisoner's dilemma (row payoffs R=3, S=0, T=5, P=1;
action 0 = cooperate): against an always-cooperate column the row's reward is the
payoff row ``payoff[0, a, 0]``; against tit-for-tat (which reads its own last
observation from the wrapper's state) it is the payoff one step behind.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.games.matrix import MatrixGame
from jaxagents.core.wrappers import ScriptedRoles, VecEnv

PD = MatrixGame("prisoners_dilemma", horizon=10)
A = PD.num_actions


def always_cooperate(key, state, ts, params):
    return jnp.zeros((1,), jnp.int32)


def tit_for_tat(key, state, ts, params):
    """The column's observation holds the row's previous action at ``[A+1, 2A+2)``
    (slot ``A`` of that one-hot: no previous step -> cooperate)."""
    opp = jnp.argmax(ts.obs["column"][0, A + 1 : 2 * A + 2])
    return jnp.where(opp == A, 0, opp)[None].astype(jnp.int32)


def play(env, row_actions, seed=0):
    key = jax.random.key(seed)
    state, ts = env.reset(key)
    rewards = []
    for t, a in enumerate(row_actions):
        state, ts = env.step(jax.random.fold_in(key, t), state, {"row": jnp.array([a], jnp.int32)})
        rewards.append(float(ts.reward["row"][0]))
    return state, ts, rewards


def test_roles_and_timesteps_hold_the_learner_only():
    env = ScriptedRoles(PD, {"column": always_cooperate})
    assert list(env.roles) == ["row"] and env.roles["row"] == PD.roles["row"]
    state, ts = env.reset(jax.random.key(0))
    for field in ("obs", "reward", "action_mask", "active"):
        assert set(getattr(ts, field)) == {"row"}
        assert set(getattr(state.last, field)) == {"column"}  # what the scripted role saw
    with pytest.raises(ValueError, match="exactly the roles"):
        env.step(jax.random.key(1), state, {"row": jnp.zeros(1, jnp.int32), "column": jnp.zeros(1, jnp.int32)})


def test_reward_is_the_payoff_row_against_a_fixed_column():
    env = ScriptedRoles(PD, {"column": always_cooperate})
    state, ts, rewards = play(env, [0, 1, 1, 0])
    payoff = np.asarray(PD.default_params().payoff)
    assert rewards == [payoff[0, a, 0] for a in [0, 1, 1, 0]] == [3.0, 5.0, 5.0, 3.0]
    np.testing.assert_array_equal(state.last.reward["column"], [3.0, 0.0, 0.0, 3.0][-1:])


def test_policy_reads_the_last_timestep():
    env = ScriptedRoles(PD, {"column": tit_for_tat})
    # column plays C, then copies the row: (D,C)=5, (D,D)=1, (C,D)=0, (C,C)=3
    _, _, rewards = play(env, [1, 1, 0, 0])
    assert rewards == [5.0, 1.0, 0.0, 3.0]


def test_jit_and_vmap_match_the_eager_rollout_and_compile_once():
    env = ScriptedRoles(PD, {"column": tit_for_tat})
    acts = jnp.array([[1, 1, 0, 0], [0, 1, 0, 1], [1, 0, 1, 0]], jnp.int32)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def rollout(key, row):
        state, _ = env.reset(key)

        def body(s, a):
            s, ts = env.step(key, s, {"row": a[None]})
            return s, ts.reward["row"][0]

        return jax.lax.scan(body, state, row)[1]

    keys = jax.random.split(jax.random.key(3), 3)
    batched = np.asarray(jax.vmap(rollout)(keys, acts))
    for b in range(3):
        np.testing.assert_array_equal(batched[b], play(env, list(np.asarray(acts[b])))[2])
    # VecEnv auto-resets through the wrapper (horizon 10 terminates on step 10)
    vec = VecEnv(env, 4)
    state, ts = vec.reset(jax.random.key(0))
    step = jax.jit(vec.step)
    for t in range(10):
        state, ts = step(jax.random.key(t), state, {"row": jnp.ones((4, 1), jnp.int32)})
    assert bool(np.all(ts.terminated)) and np.all(np.asarray(ts.reward["row"]) == 1.0)  # (D, D) after step 1
    assert np.all(np.asarray(state.env_state.t) == 0)  # reset: a new episode


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="unknown roles"):
        ScriptedRoles(PD, {"columnn": always_cooperate})
    with pytest.raises(ValueError, match="every role"):
        ScriptedRoles(PD, {"row": always_cooperate, "column": always_cooperate})
    with pytest.raises(TypeError, match="not callable"):
        ScriptedRoles(PD, {"column": 0})
    with pytest.raises(ValueError, match="non-empty"):
        ScriptedRoles(PD, {})
