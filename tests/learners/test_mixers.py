"""The value-decomposition mixers: VDN is the sum; QMIX's mixer is monotonic in
every agent's Q for any parameters and state (property test), depends on the state,
and the check itself catches a non-monotonic function."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxagents.learners.value_based.mixers import VDN, QMix, make_mixer

N, G = 4, 6  # agents, global-state width
MIXER = QMix(embed=8, hyper_hidden=16)
# compiled once: (params, q[B, N], s[B, G]) -> Q_tot[B]
APPLY = jax.jit(MIXER.apply)
INIT = jax.jit(lambda k: MIXER.init(k, jnp.zeros((1, N)), jnp.zeros((1, G))))
# dQ_tot / dq per row: (params, q[B, N], s[B, G]) -> [B, N]
GRAD = jax.jit(lambda p, q, s: jax.vmap(jax.grad(lambda qi, si: MIXER.apply(p, qi[None], si[None])[0]))(q, s))


def _never_decreases(fn, q, s, agent, delta):
    """fn(q + delta e_agent) >= fn(q) row by row, with delta >= 0."""
    bumped = q.at[:, agent].add(delta)
    return np.asarray(fn(bumped, s)) >= np.asarray(fn(q, s))


@jax.jit
def _check(seed, scale, agent, delta):
    """For random parameters and states: does ``Q_tot`` never decrease when agent
    ``agent``'s Q grows by ``delta``, and is every ``dQ_tot / dq_i >= 0``?"""
    k_p, k_q, k_s, k_w = jax.random.split(jax.random.key(seed), 4)
    params = INIT(k_p)
    # random parameters, not just the initialisation: every weight scaled by a random factor of either sign
    leaves, tree = jax.tree.flatten(params)
    factors = jax.random.normal(k_w, (len(leaves),)) * scale * 100.0  # 100: undo the small init of the output layers
    params = jax.tree.unflatten(tree, [x * f for x, f in zip(leaves, factors)])
    q = jax.random.normal(k_q, (64, N)) * 10.0
    s = jax.random.normal(k_s, (64, G)) * 3.0
    bumped = q + delta * jax.nn.one_hot(agent, N)
    monotone = MIXER.apply(params, bumped, s) >= MIXER.apply(params, q, s)
    return jnp.all(monotone), jnp.all(GRAD(params, q, s) >= 0.0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.sampled_from([0.1, 1.0, 10.0]), agent=st.integers(0, N - 1),
       delta=st.floats(0.0, 50.0, width=32))
def test_qmix_is_monotonic_in_every_agent(seed, scale, agent, delta):
    monotone, gradients = _check(seed, scale, agent, delta)
    assert bool(monotone) and bool(gradients)


def test_the_monotonicity_check_catches_a_decreasing_mixer():
    q = jax.random.normal(jax.random.key(0), (8, N))
    s = jnp.zeros((8, G))
    assert not _never_decreases(lambda q, s: q[:, 0] - 2.0 * q[:, 1], q, s, 1, 1.0).any()


def test_qmix_depends_on_the_state_and_has_the_documented_shapes():
    params = INIT(jax.random.key(1))
    shapes = jax.tree.map(jnp.shape, params["params"])
    assert shapes["hyper_w1"]["Dense_0"]["kernel"] == (G, 16) and shapes["hyper_w1"]["Dense_1"]["kernel"] == (16, N * 8)
    assert shapes["hyper_w2"]["Dense_1"]["kernel"] == (16, 8) and shapes["hyper_b1"]["Dense_0"]["kernel"] == (G, 8)
    q = jnp.ones((3, 2, N))  # any leading batch axes
    s = jax.random.normal(jax.random.key(2), (3, 2, G))
    out = MIXER.apply(params, q, s)
    assert out.shape == (3, 2)
    assert not np.allclose(out[0, 0], out[1, 1])  # same Qs, other states: other Q_tot


def test_vdn_is_the_sum_and_make_mixer_validates():
    q = jnp.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(VDN().apply({}, q), q.sum(-1))
    assert make_mixer("none") is None and isinstance(make_mixer("vdn"), VDN) and make_mixer("qmix", 4, 8).embed == 4
    with pytest.raises(ValueError, match="mixer must be one of"):
        make_mixer("qtran")
