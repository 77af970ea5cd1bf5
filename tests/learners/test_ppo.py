"""IPPO / MAPPO: learning signals on a matrix game, traced hyper-parameters,
recurrent and centralised-critic variants, and loss masking of inactive agents."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents.learners import HParams, PPOConfig, make_train
from jaxagents.learners.policy_gradient.update import Batch, role_loss, subsample_agents

DEFECT = 1  # prisoner's dilemma: action 1 is the dominant one


def defect_prob(train, params, role):
    env = train.env
    _, ts = env.reset(jax.random.key(0), train.env_params)
    out = train.agents.logits_fn(params, role)(ts.obs[role])
    return float(jax.nn.softmax(out)[0, DEFECT])


@pytest.fixture(scope="module")
def pd_sweep():
    """One compile: IPPO on a one-shot prisoner's dilemma, vmapped over two seeds
    with different learning rates (0 and 0.01)."""
    env = jaxagents.make("prisoners_dilemma")
    params = env.default_params().replace(horizon=jnp.asarray(1, jnp.int32))
    cfg = PPOConfig(num_envs=32, num_steps=4, total_timesteps=32 * 4 * 25, update_epochs=2, num_minibatches=2, lr=1e-2, ent_coef=0.0)
    train = make_train(cfg, env, env_params=params)
    hp = HParams.from_config(cfg)
    hp = jax.tree.map(lambda x: jnp.stack([x, x]), hp).replace(lr=jnp.array([0.0, 1e-2]))
    state, metrics = jax.jit(jax.vmap(train))(jax.random.split(jax.random.key(0), 2), hp)
    return train, state, metrics


# the module's IPPO sweep (20-40 s to compile): with the slow checks, the default suite keeps its
# 10 minutes (IPPO trains through the CLI there: tests/learners/test_train_by_name.py)
@pytest.mark.slow
def test_dominant_action_learned_and_lr_is_traced(pd_sweep):
    train, state, metrics = pd_sweep
    frozen = jax.tree.map(lambda x: x[0], state.params)
    learned = jax.tree.map(lambda x: x[1], state.params)
    for role in ("row", "column"):
        assert abs(defect_prob(train, frozen[role], role) - 0.5) < 0.05  # lr = 0: still uniform
        assert defect_prob(train, learned[role], role) > 0.9
    # mutual defection pays P = 1 to both; the frozen pair keeps the uniform mean 2.25
    assert float(metrics["episode_return/row"][1, -1]) < 1.6
    assert abs(float(metrics["episode_return/row"][0, -5:].mean()) - 2.25) < 0.4
    assert metrics["env_steps"].shape == (2, 25) and int(metrics["env_steps"][1, -1]) == 32 * 4 * 25


@pytest.mark.slow  # the module's IPPO sweep, as above
def test_metrics_finite(pd_sweep):
    _, _, metrics = pd_sweep
    for k, v in metrics.items():
        assert np.all(np.isfinite(np.asarray(v))), k


def test_config_errors():
    with pytest.raises(ValueError, match="num_envs"):
        PPOConfig(num_envs=0)
    with pytest.raises(ValueError, match="advantage"):
        PPOConfig(advantage="vtrace")
    with pytest.raises(ValueError, match="total_timesteps"):
        PPOConfig(num_envs=16, num_steps=128, total_timesteps=100)
    with pytest.raises(ValueError, match="divisible"):
        PPOConfig(num_envs=6, num_minibatches=4, network={"recurrent": True})


# with the slow checks (13-20 s each): the default suite's 10 minutes
@pytest.mark.slow
@pytest.mark.parametrize("variant", ["mappo", "recurrent"])
def test_variants_run(variant):
    env = jaxagents.make("stag_hunt")
    # MAPPO also freezes one role (role_start_update) and slows the other (role_lr_scale)
    kw = ({"central_critic": True, "role_start_update": {"column": 5}, "role_lr_scale": {"row": 0.5}} if variant == "mappo"
          else {"network": {"recurrent": True, "gru_size": 8}})
    cfg = PPOConfig(num_envs=4, num_steps=8, total_timesteps=4 * 8 * 2, update_epochs=1, num_minibatches=2, **kw)
    train = make_train(cfg, env)
    state, metrics = jax.jit(train)(jax.random.key(1))
    assert int(state.update) == 2
    if variant == "mappo":
        start = jax.jit(train.init)(jax.random.key(1)).params
        changed = lambda r: any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(start[r]), jax.tree.leaves(state.params[r])))  # noqa: E731
        assert changed("row") and not changed("column")
        with pytest.raises(ValueError, match="unknown roles"):
            make_train(cfg.replace(role_lr_scale={"planner": 0.1}), env)
        with pytest.raises(ValueError, match="role_start_update"):
            PPOConfig(role_start_update={"row": 1.5})
    assert all(np.all(np.isfinite(np.asarray(v))) for v in metrics.values())
    if variant == "mappo":
        # the critic reads the global state plus a one-hot agent id
        g = train.agents.global_obs_shape
        assert state.env.ts.obs["row"].shape[:2] == (4, 1)
        assert train.agents.critic_input("row", jnp.zeros((4, 1, 7)), jnp.zeros((4, *g))).shape == (4, 1, int(np.prod(g)) + 1)
    with pytest.raises(ValueError, match="bootstrap_truncated"):
        make_train(cfg.replace(bootstrap_truncated=True), env)


@pytest.fixture(scope="module")
def pennies():
    """A tiny IPPO learner on matching pennies and its row network's initial parameters,
    shared by the loss checks below (compiling the network's init takes 5-10 s)."""
    cfg = PPOConfig(num_envs=2, num_steps=2, total_timesteps=4)
    train = make_train(cfg, jaxagents.make("matching_pennies"))
    return cfg, train, jax.jit(train.agents.init)(jax.random.key(0))["row"]  # one compile (eager init dispatches op by op)


def test_inactive_samples_do_not_reach_the_loss(pennies):
    cfg, train, params = pennies
    k = jax.random.split(jax.random.key(1), 4)
    shape = (1, 6, 1)
    w = jnp.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0]).reshape(shape)
    b = Batch(
        obs=jax.random.uniform(k[0], (*shape, 7)), critic_in=jax.random.uniform(k[0], (*shape, 7)),
        action=jax.random.randint(k[1], shape, 0, 2), log_prob=jnp.full(shape, -0.69), value=jnp.zeros(shape),
        mask=jnp.ones((*shape, 2), bool), reset=jnp.zeros(shape, bool),
        advantage=jax.random.normal(k[2], shape), target=jax.random.normal(k[3], shape), weight=w,
    )
    hp = HParams.from_config(cfg)
    h0 = train.agents.modules["row"].initial_state((6, 1))
    garbage = b.replace(advantage=b.advantage.at[0, 3:].set(1e6), target=b.target.at[0, 3:].set(-1e6))
    grad = jax.jit(jax.grad(lambda p, batch: role_loss(train.agents, "row", p, batch, hp, h0, True, True)[0]))
    g1, g2 = grad(params, b), grad(params, garbage)
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7), g1, g2)


def test_subsample_agents_keeps_whole_agent_slots():
    t, e, n, k = 3, 2, 10, 4
    slot = jnp.broadcast_to(jnp.arange(n, dtype=jnp.float32)[None, None, :], (t, e, n))
    b = Batch(obs=slot[..., None] * jnp.ones(5), critic_in=None, action=slot.astype(jnp.int32), log_prob=slot,
              value=slot, mask=jnp.ones((t, e, n, 2), bool), reset=jnp.zeros((t, e, n), bool),
              advantage=slot, target=slot, weight=jnp.ones((t, e, n)))
    h0 = jnp.broadcast_to(jnp.arange(n, dtype=jnp.float32)[None, :, None], (e, n, 8))
    sub, h = subsample_agents(b, h0, jax.random.key(0), k)
    ids = np.asarray(sub.value[0, 0])
    assert sub.obs.shape == (t, e, k, 5) and sub.mask.shape == (t, e, k, 2) and h.shape == (e, k, 8)
    assert len(set(ids.tolist())) == k  # distinct slots, without replacement
    for x in (sub.value, sub.action, sub.obs[..., 0], h[None, ..., 0]):  # the same slots at every (t, env), in every field
        np.testing.assert_array_equal(np.asarray(x), np.broadcast_to(ids, x.shape))
    same, h_same = subsample_agents(b, h0, jax.random.key(0), n)
    assert same is b and h_same is h0
    with pytest.raises(ValueError, match="agents_per_update"):
        PPOConfig(agents_per_update=0)


def test_role_gamma_overrides_the_discount_of_one_role():
    from types import SimpleNamespace

    from jaxagents.learners.policy_gradient import estimators

    t, e, n = 4, 1, 2
    rng = np.random.default_rng(0)
    tr = lambda: SimpleNamespace(  # noqa: E731
        reward=jnp.asarray(rng.normal(size=(t, e, n)), jnp.float32), value=jnp.asarray(rng.normal(size=(t, e, n)), jnp.float32),
        terminated=jnp.zeros((t, e, n), bool), truncated=jnp.zeros((t, e, n), bool), final_value=jnp.zeros((t, e, n)),
        active=jnp.ones((t, e, n), bool), learner=jnp.ones((t, e, n), bool))
    traj = {"follower": tr(), "leader": tr()}
    last = {r: jnp.ones((e, n)) for r in traj}
    cfg = PPOConfig(role_gamma={"follower": 0.0}, normalize="none")
    hp = HParams.from_config(cfg)
    ids = {"follower": jnp.zeros(n, jnp.int32), "leader": jnp.ones(n, jnp.int32)}
    common = dict(gamma=hp.gamma, gae_lambda=hp.gae_lambda)
    out, _ = estimators.compute("gae", traj, last, ids, jnp.zeros((1, 2)), role_gamma=dict(cfg.role_gamma), **common)
    f = traj["follower"]
    np.testing.assert_allclose(out["follower"].advantage, f.reward - f.value, atol=1e-6)  # myopic: A = r - V
    plain, _ = estimators.compute("gae", traj, last, ids, jnp.zeros((1, 2)), **common)
    np.testing.assert_array_equal(out["leader"].advantage, plain["leader"].advantage)  # the other role keeps hp.gamma
    assert not np.allclose(plain["follower"].advantage, out["follower"].advantage)
    with pytest.raises(ValueError, match="role_gamma"):
        PPOConfig(role_gamma={"follower": 1.5})


# ~16 s: with the slow checks
@pytest.mark.slow
def test_gpu_program_trains_identically(monkeypatch):
    """On GPU (``cheap_branches()`` False) the rollout has no data-dependent ``cond`` or
    ``while``: ``VecEnv`` resets by selection and the truncation bootstrap computes both
    sides. Same keys, so the same training run bit for bit: IPPO on level-based foraging
    (episodes end by eating the food or at a 6-step limit, so both resets and truncations
    happen), traced once as on CPU and once with the backend reported as a GPU."""

    def run(backend):
        monkeypatch.setattr(jax, "default_backend", lambda: backend)
        env = jaxagents.make("lbf")
        params = env.default_params().replace(horizon=jnp.asarray(6, jnp.int32))
        cfg = PPOConfig(num_envs=8, num_steps=8, total_timesteps=8 * 8 * 2, update_epochs=1, num_minibatches=2,
                        bootstrap_truncated=True)
        train = make_train(cfg, env, env_params=params)
        jaxpr = str(jax.make_jaxpr(train)(jax.random.key(3)))
        state, metrics = jax.jit(train)(jax.random.key(3))
        return ("cond" in jaxpr or "while" in jaxpr), state.params, metrics

    branching, params_cpu, metrics_cpu = run("cpu")
    selecting, params_gpu, metrics_gpu = run("gpu")
    assert branching and not selecting
    for a, b in zip(jax.tree.leaves((params_cpu, metrics_cpu)), jax.tree.leaves((params_gpu, metrics_gpu))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


class _NoPromises(jaxagents.core.wrappers.base.Wrapper):
    """The same environment without ``Role.always_legal`` / ``always_active``."""

    def __init__(self, env):
        super().__init__(env)
        self.roles = {k: dataclasses.replace(r, always_legal=False, always_active=False) for k, r in env.roles.items()}


# ~15 s: with the slow checks
@pytest.mark.slow
def test_role_promises_drop_weights_and_masks_but_not_results(monkeypatch):
    """A role that promises every action legal and every agent active trains on
    minibatches without masks or sample weights (None: a plain mean, an unmasked
    softmax) -- and to the same parameters as the same game without the promises,
    where the all-True masks and all-one weights are carried and applied."""
    from jaxagents.learners.policy_gradient import ppo

    seen = []
    real = ppo.ppo_epochs

    def spy(agents, params, opt_state, batches, *a, **k):
        seen.append({r: (b.mask is None, b.weight is None) for r, b in batches.items()})
        return real(agents, params, opt_state, batches, *a, **k)

    monkeypatch.setattr(ppo, "ppo_epochs", spy)
    env = jaxagents.make("prisoners_dilemma")
    assert all(r.always_legal and r.always_active for r in env.roles.values())
    cfg = PPOConfig(num_envs=8, num_steps=4, total_timesteps=8 * 4 * 2, update_epochs=2, num_minibatches=2, lr=1e-2)
    out = {}
    for name, e in (("promised", env), ("plain", _NoPromises(env))):
        state, metrics = jax.jit(make_train(cfg, e))(jax.random.key(5))
        out[name] = (state.params, metrics)
    assert seen == [{"row": (True, True), "column": (True, True)}, {"row": (False, False), "column": (False, False)}]
    for a, b in zip(jax.tree.leaves(out["promised"]), jax.tree.leaves(out["plain"])):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)
    # critic-free estimators keep the weights: they drop the samples of unfinished episodes
    crit_free = PPOConfig(num_envs=8, num_steps=4, total_timesteps=8 * 4, advantage="returns")
    jax.eval_shape(make_train(crit_free, env), jax.random.key(0))
    assert seen[-1] == {"row": (True, False), "column": (True, False)}


def test_unweighted_loss_equals_the_all_ones_weighted_loss(pennies):
    cfg, train, params = pennies
    k = jax.random.split(jax.random.key(2), 4)
    shape = (1, 6, 1)
    b = Batch(
        obs=jax.random.uniform(k[0], (*shape, 7)), critic_in=None, action=jax.random.randint(k[1], shape, 0, 2),
        log_prob=jnp.full(shape, -0.69), value=jnp.zeros(shape), mask=jnp.ones((*shape, 2), bool),
        reset=jnp.zeros(shape, bool), advantage=jax.random.normal(k[2], shape), target=jax.random.normal(k[3], shape),
        weight=jnp.ones(shape),
    )
    hp = HParams.from_config(cfg)
    h0 = train.agents.modules["row"].initial_state((6, 1))
    loss = jax.jit(lambda p, batch: role_loss(train.agents, "row", p, batch, hp, h0, True, True))
    weighted, bare = loss(params, b), loss(params, b.replace(weight=None, mask=None))
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7), weighted, bare)


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
def test_magnet_regulariser_is_minus_the_kl_to_the_magnet():
    """``role_loss(..., magnet=q)`` weighs ``-KL(pi || pi_q)`` by ``ent_coef`` in place of
    the entropy (with ``magnet_weight=w``: ``(1 - w) H(pi) - w KL``): checked against the softmaxes of both networks' logits, with an illegal
    action that must not count; a magnet equal to the policy has KL 0."""
    env = jaxagents.make("matching_pennies")
    cfg = PPOConfig(num_envs=2, num_steps=2, total_timesteps=4, ent_coef=0.3)
    train = make_train(cfg, env)
    params = jax.jit(train.agents.init)(jax.random.key(0))["row"]
    # initial actors are near uniform: scaled up, the magnet's policy is far from the policy's
    magnet = jax.tree.map(lambda x: 30.0 * x, jax.jit(train.agents.init)(jax.random.key(5))["row"])
    k = jax.random.split(jax.random.key(2), 4)
    shape = (1, 6, 1)
    mask = jnp.ones((*shape, 2), bool).at[0, 0, 0, 1].set(False)  # sample 0: only action 0 legal
    b = Batch(
        obs=jax.random.uniform(k[0], (*shape, 7)), critic_in=None, action=jnp.zeros(shape, jnp.int32),
        log_prob=jnp.full(shape, -0.69), value=jnp.zeros(shape), mask=mask,
        reset=jnp.zeros(shape, bool), advantage=jax.random.normal(k[2], shape), target=jax.random.normal(k[3], shape),
        weight=jnp.asarray([1.0, 2.0, 0.0, 1.0, 1.0, 3.0]).reshape(shape),
    )
    hp = HParams.from_config(cfg)
    h0 = train.agents.modules["row"].initial_state((6, 1))
    loss = jax.jit(lambda p, m: role_loss(train.agents, "row", p, b, hp, h0, True, True, magnet=m))
    plain = jax.jit(lambda p: role_loss(train.agents, "row", p, b, hp, h0, True, True))

    def probs(p):
        logits = train.agents.logits_fn(p, "row")(b.obs.reshape(6, 7))
        return np.asarray(jax.nn.softmax(jnp.where(mask.reshape(6, 2), logits, -1e9)), np.float64)

    pi, rho = probs(params), probs(magnet)
    kl = np.sum(np.where(pi > 0, pi * (np.log(np.maximum(pi, 1e-300)) - np.log(np.maximum(rho, 1e-300))), 0.0), -1)
    w = np.asarray(b.weight).reshape(6)
    want_kl = np.sum(w * kl) / np.sum(w)
    (total, m), (total0, m0) = loss(params, magnet), plain(params)
    assert kl[0] == 0.0 and want_kl > 1e-3
    np.testing.assert_allclose(m["magnet_kl"], want_kl, rtol=1e-4)
    np.testing.assert_allclose(m["entropy"], m0["entropy"], rtol=1e-6)
    # total = pg + vf * v - ent_coef * reg: the entropy's place taken by -KL
    np.testing.assert_allclose(total - total0, 0.3 * (float(m0["entropy"]) + want_kl), rtol=1e-4, atol=1e-6)
    assert "magnet_kl" not in m0
    # magnet_weight w: (1 - w) H - w KL in the entropy's place
    mixed = jax.jit(lambda p, m: role_loss(train.agents, "row", p, b, hp, h0, True, True, magnet=m, magnet_weight=0.25))
    total_w, m_w = mixed(params, magnet)
    np.testing.assert_allclose(m_w["magnet_kl"], want_kl, rtol=1e-4)
    np.testing.assert_allclose(total_w - total0, 0.3 * 0.25 * (float(m0["entropy"]) + want_kl), rtol=1e-4, atol=1e-6)
    _, same = loss(params, params)
    np.testing.assert_allclose(same["magnet_kl"], 0.0, atol=1e-6)
    # the magnet is a constant: no gradient flows into it
    g = jax.grad(lambda q: loss(params, q)[0])(magnet)
    assert all(float(jnp.max(jnp.abs(x))) == 0.0 for x in jax.tree.leaves(g))
