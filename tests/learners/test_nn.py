"""Networks: masked distributions, GRU resets, vmap-safe orthogonal init."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents.core.spaces import Box, Discrete, MultiDiscrete
from jaxagents.nn import GRU, distribution
from jaxagents.nn.init import orthogonal


def test_masked_categorical_never_samples_illegal():
    logits = jnp.zeros((1000, 4))
    mask = jnp.array([True, False, True, False])
    d = distribution(Discrete(4), logits, mask=mask)
    a = np.asarray(d.sample(seed=jax.random.key(0)))
    assert set(a.tolist()) == {0, 2}
    np.testing.assert_allclose(d.entropy(), np.log(2), rtol=1e-5)
    # a fully masked row (inactive agent, finished game) stays finite
    full = distribution(Discrete(4), jnp.zeros((4,)), mask=jnp.zeros(4, bool))
    assert np.isfinite(float(full.log_prob(0))) and np.isfinite(float(full.entropy()))


def test_multidiscrete_and_box_heads():
    md = distribution(MultiDiscrete([2, 3]), jnp.zeros((5, 6)))
    a = md.sample(seed=jax.random.key(1))
    assert a.shape == (5, 2) and int(a[:, 0].max()) <= 1 and int(a[:, 1].max()) <= 2
    np.testing.assert_allclose(md.log_prob(a), np.log(1 / 6), rtol=1e-5)
    box = distribution(Box(-1.0, 1.0, (3,)), jnp.zeros((5, 3)), log_std=jnp.zeros(3))
    assert box.sample(seed=jax.random.key(2)).shape == (5, 3)
    np.testing.assert_allclose(box.log_prob(jnp.zeros((5, 3))), -1.5 * np.log(2 * np.pi), rtol=1e-5)


def test_gru_reset_clears_memory():
    gru = GRU(4)
    x = jax.random.normal(jax.random.key(0), (3, 2, 5))
    h0 = jnp.ones((2, 4))
    params = gru.init(jax.random.key(1), h0, x, jnp.zeros((3, 2), bool))
    reset = jnp.array([[False, False], [True, False], [False, False]])
    _, y = gru.apply(params, h0, x, reset)
    # env 0 restarts at t=1: its outputs from t=1 equal a fresh run from zero memory
    _, y_fresh = gru.apply(params, jnp.zeros((2, 4)), x[1:], jnp.zeros((2, 2), bool))
    np.testing.assert_allclose(y[1:, 0], y_fresh[:, 0], rtol=1e-5)
    assert not np.allclose(y[1:, 1], y_fresh[:, 1])


@pytest.mark.parametrize("shape", [(6, 3), (3, 6)])
def test_orthogonal_init_under_vmap(shape):
    init = orthogonal(2.0)
    keys = jax.random.split(jax.random.key(0), 3)
    batched = jax.jit(jax.vmap(lambda k: init(k, shape)))(keys)
    for k, w in zip(keys, batched):
        np.testing.assert_allclose(w, init(k, shape), rtol=1e-5, atol=1e-6)
        small = min(shape)
        gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
        np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-4)


def test_post_hidden_layers_after_the_gru():
    from jaxagents.nn.policy import ActorCritic, NetworkConfig

    cfg = NetworkConfig(hidden=(8,), activation="relu", recurrent=True, gru_size=6, post_hidden=[5])
    net = ActorCritic(cfg, Discrete(3))
    h = (jnp.zeros((2, 6)), jnp.zeros((2, 6)))
    x, reset = jnp.ones((4, 2, 7)), jnp.zeros((4, 2), bool)
    params = jax.jit(net.init)(jax.random.key(0), h, x, None, reset)
    # each stream: Dense 7->8, GRU 6, Dense 6->5, then the heads read 5 features
    actor = params["params"]["actor"]
    assert actor["MLP_1"]["Dense_0"]["kernel"].shape == (6, 5)
    assert params["params"]["pi"]["kernel"].shape == (5, 3)
    _, logits, value = jax.jit(net.apply)(params, h, x, None, reset)
    assert logits.shape == (4, 2, 3) and value.shape == (4, 2)
    with pytest.raises(ValueError, match="post_hidden applies after the GRU"):
        NetworkConfig(post_hidden=(4,))
    with pytest.raises(ValueError, match="post_hidden must be positive"):
        NetworkConfig(recurrent=True, post_hidden=(0,))


def test_clip_by_stream_norm_clips_actor_and_critic_apart():
    from jaxagents.learners.skeleton.optim import clip_by_stream_norm

    g = {"params": {"actor": {"w": jnp.full((4,), 3.0)}, "pi": {"b": jnp.zeros((2,))},
                    "critic": {"w": jnp.full((4,), 0.1)}, "v": {"b": jnp.full((1,), 0.1)}}}
    out, _ = clip_by_stream_norm(0.5).update(g, clip_by_stream_norm(0.5).init(g))
    p = out["params"]
    # actor norm 6 -> scaled to 0.5; critic norm ~0.22 < 0.5 -> unchanged
    np.testing.assert_allclose(np.linalg.norm(np.r_[p["actor"]["w"], p["pi"]["b"]]), 0.5, rtol=1e-6)
    np.testing.assert_allclose(p["critic"]["w"], 0.1)
    np.testing.assert_allclose(p["v"]["b"], 0.1)


@pytest.mark.slow  # (10-25 s: the default suite keeps its 10 minutes)
def test_cnn_keeps_flax_conv_parameters_and_outputs():
    """``CNN``'s ``ConvSame`` layers (slices + one matmul; fast gradients on XLA:CPU)
    replace ``nn.Conv`` without changing the parameter tree or the initial values, and
    compute the same function to float rounding."""
    import flax.linen as nn

    from jaxagents.nn import CNN
    from jaxagents.nn.init import orthogonal as ortho

    class ConvCNN(nn.Module):  # the previous CNN, written with nn.Conv
        @nn.compact
        def __call__(self, x):
            batch = x.shape[:-3]
            x = x.reshape(-1, *x.shape[-3:])
            for c, k in zip((8, 6), (3, 5)):
                x = nn.relu(nn.Conv(c, (k, k), padding="SAME", kernel_init=ortho(np.sqrt(2)))(x))
            x = x.reshape(*batch, -1)
            dense = nn.Dense(4, kernel_init=ortho(np.sqrt(2)), bias_init=nn.initializers.zeros, name="MLP_0")
            return nn.relu(dense(x.reshape(-1, x.shape[-1]))).reshape(*batch, 4)

    x = jax.random.normal(jax.random.key(0), (2, 3, 4, 5, 7))
    new, old = CNN((8, 6), (3, 5), hidden=(4,), act="relu"), ConvCNN()
    p_new, p_old = new.init(jax.random.key(1), x), old.init(jax.random.key(1), x)
    for i in range(2):
        for leaf in ("kernel", "bias"):
            np.testing.assert_array_equal(p_new["params"][f"Conv_{i}"][leaf], p_old["params"][f"Conv_{i}"][leaf])
    leaves, tree = jax.tree.flatten(p_new)  # random non-zero biases too
    bumped = jax.tree.unflatten(tree, [p + 0.1 * jax.random.normal(jax.random.key(i), p.shape) for i, p in enumerate(leaves)])
    assert np.any(np.asarray(new.apply(bumped, x)) == 0)  # the final ReLU is exercised
    y_new = new.apply(bumped, x)
    y_old = ConvCNN().apply({"params": {**bumped["params"], "MLP_0": bumped["params"]["MLP_0"]["Dense_0"]}}, x)
    assert y_new.shape == (2, 3, 4)
    np.testing.assert_allclose(np.asarray(y_new), np.asarray(y_old), rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # two compiles of full networks, ~20 s
@pytest.mark.parametrize("recurrent", [False, True])
def test_shared_input_fuses_the_first_layers_into_one_product(recurrent):
    """With ``critic_in=None`` (IPPO) the actor's and critic's first dense layers run
    as one product: one ``dot_general`` fewer than with the critic input given
    separately, the same parameter tree, and the same outputs and gradients to float
    rounding."""
    from jaxagents.nn.policy import ActorCritic, NetworkConfig

    net = ActorCritic(NetworkConfig(hidden=(16, 8), recurrent=recurrent, gru_size=4), Discrete(3))
    x = jax.random.normal(jax.random.key(0), (3, 5, 2, 11))  # [T, B, agents, obs]
    h = net.initial_state((5, 2))
    reset = jnp.zeros((3, 5, 2), bool).at[1, 0].set(True)
    params = net.init(jax.random.key(1), h, x, None, reset)
    assert params["params"]["actor"]["MLP_0"]["Dense_0"]["kernel"].shape == (11, 16)
    assert params["params"]["critic"]["MLP_0"]["Dense_0"]["kernel"].shape == (11, 16)

    fused = lambda p: net.apply(p, h, x, None, reset)  # noqa: E731
    apart = lambda p: net.apply(p, h, x, x, reset)  # noqa: E731

    def dots(f):
        return str(jax.make_jaxpr(f)(params)).count("dot_general")

    assert dots(fused) == dots(apart) - 1
    for a, b in zip(jax.tree.leaves(fused(params)), jax.tree.leaves(apart(params))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

    def loss(f):
        return lambda p: f(p)[1].sum() + jnp.square(f(p)[2]).sum()

    for a, b in zip(jax.tree.leaves(jax.grad(loss(fused))(params)), jax.tree.leaves(jax.grad(loss(apart))(params))):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
