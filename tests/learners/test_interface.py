"""The learner interface: every learner returns a ``Learner`` that a population can
drive without knowing which learner it is."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents.learners import (
    Extension,
    Fitness,
    HParams,
    HParamSpec,
    Learner,
    PPOConfig,
    make_train,
)
from jaxagents.learners.policy_gradient import selfplay

TINY = dict(num_envs=4, num_steps=4, total_timesteps=4 * 4 * 2, update_epochs=1, num_minibatches=1)


@pytest.fixture(scope="module")
def ippo():
    return make_train(PPOConfig(**TINY, lr=3e-4), jaxagents.make("stag_hunt"))


def test_every_learner_is_a_learner(ippo):
    sp = selfplay.make_train(selfplay.SelfPlayConfig(ppo=TINY), jaxagents.make("kuhn_poker"))
    for learner in (ippo, sp):
        assert isinstance(learner, Learner) and learner.num_updates == 2
        assert set(learner.hparam_space) == {f.name for f in dataclasses.fields(HParams)}
    assert isinstance(sp.config, selfplay.SelfPlayConfig) and ippo.config.lr == 3e-4


def test_hparam_space_describes_the_traced_values(ippo):
    space = ippo.hparam_space
    assert space["lr"] == HParamSpec("lr", pytest.approx(3e-4), 1e-5, 1e-2, "log")
    assert float(ippo.default_hparams.lr) == pytest.approx(3e-4)
    # a config value outside the usual range widens it, so the default stays valid
    wide = make_train(PPOConfig(**TINY, lr=0.05), jaxagents.make("stag_hunt")).hparam_space["lr"]
    assert wide.high == 0.05 and wide.low == 1e-5
    draws = ippo.sample_hparams(jax.random.key(0), 256, names=("lr", "ent_coef"))
    lr = np.asarray(draws.lr)
    assert lr.shape == (256,) and lr.min() >= 1e-5 and lr.max() <= 1e-2
    # log-uniform: about a third of the draws per decade of [1e-5, 1e-2]
    assert 0.2 < np.mean(lr < 1e-4) < 0.45 and 0.2 < np.mean(lr > 1e-3) < 0.45
    np.testing.assert_array_equal(np.asarray(draws.gamma), np.full(256, np.float32(0.99)))  # not drawn: default
    with pytest.raises(ValueError, match="unknown hyper-parameters"):
        ippo.sample_hparams(jax.random.key(0), 2, names=("lrr",))
    with pytest.raises(ValueError, match="scale"):
        HParamSpec("lr", 1e-3, 1e-5, 1e-2, "exp")
    with pytest.raises(ValueError, match="low"):
        HParamSpec("lr", 1e-3, 0.0, 1e-2, "log")


# ~23 s: with the slow checks (the default suite keeps its 10 minutes)
@pytest.mark.heavy
def test_a_population_is_a_vmap_over_states_and_hparams(ippo):
    """Two members with different learning rates, one program: a member's result is
    the same as its own single run, and the learning rate really differs."""
    hp = ippo.default_hparams
    pop_hp = jax.tree.map(lambda x: jnp.stack([x, x]), hp).replace(lr=jnp.array([1e-4, 1e-2], jnp.float32))
    keys = jax.random.split(jax.random.key(0), 2)
    states, metrics = jax.jit(jax.vmap(ippo.train))(keys, pop_hp)
    alone, _ = jax.jit(ippo.train)(keys[1], hp.replace(lr=jnp.float32(1e-2)))
    for a, b in zip(jax.tree.leaves(alone.params), jax.tree.leaves(jax.tree.map(lambda x: x[1], states.params))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert metrics["update"].shape == (2, 2)
    fit = ippo.fitness(jax.tree.map(lambda x: x[:, -1], metrics))
    assert fit.shape == (2,)
    ev = jax.jit(jax.vmap(ippo.evaluate))(states, keys)
    assert {"eval/episode_return/row", "eval/episode_return/column"} <= set(ev)


def test_a_population_is_a_learner(ippo):
    """A ``Population`` answers every question of the ``Learner`` contract -- the
    runner drives both alike -- and only the member axis tells them apart."""
    from jaxagents.population import Population, PopulationState

    pop = Population(ippo, size=3)
    contract = {f.name for f in dataclasses.fields(Learner)} | {n for n in vars(Learner) if not n.startswith("_")}
    assert not [n for n in sorted(contract) if not hasattr(pop, n)]
    assert ippo.members is None and pop.members == 3 and ippo.placement is None
    assert pop.env is ippo.env and pop.agents is ippo.agents and pop.hparam_space["lr"] == ippo.hparam_space["lr"]
    state = jax.eval_shape(pop.init, jax.random.key(0))
    one = jax.eval_shape(ippo.init, jax.random.key(0))
    assert isinstance(state, PopulationState)
    assert jax.tree.leaves(pop.member_states(state).params)[0].shape == (3, *jax.tree.leaves(one.params)[0].shape)
    assert ippo.member_states(one) is one and int(ippo.best(one)) == 0 and ippo.state_sharding() is None
    # the learner's convention holds: init(key, default_hparams) is every member at the config's values
    hp = jax.eval_shape(pop.init, jax.random.key(0), pop.default_hparams).hparams
    assert hp.lr.shape == (3,) and pop.sample_hparams(jax.random.key(1), 3, ("lr",)).lr.shape == (3,)
    # a segment's metrics: {name: [S, U]}, a population's [S, U, P]; both make one row per update
    S, U = 2, 4
    base = {"update": np.tile(np.arange(1, U + 1), (S, 1)), "env_steps": np.tile(16 * np.arange(1, U + 1), (S, 1))}
    rows, member_rows = ippo.log_rows({**base, "episode_return/row": np.ones((S, U))}, S)
    assert [r["update"] for r in rows] == [1, 2, 3, 4] and member_rows == []
    per_member = {k: np.repeat(v[..., None], 3, -1) for k, v in base.items()}
    per_member.update({"episode_return/row": np.arange(S * U * 3, dtype=float).reshape(S, U, 3),
                       "fitness": np.ones((S, U, 3)), "pbt/ready": np.zeros((S, U, 3), bool),
                       "pbt/parent": np.tile(np.arange(3), (S, U, 1))})
    rows, member_rows = pop.log_rows(per_member, S)
    assert [r["update"] for r in rows] == [1, 2, 3, 4] and len(member_rows) == U
    assert rows[0]["episode_return/row"] == pytest.approx(np.mean([[0, 1, 2], [12, 13, 14]]))  # members' mean, then seeds'
    assert rows[0]["fitness/best"] == 1.0 and member_rows[0]["parent"] == [[0, 1, 2], [0, 1, 2]]


def test_default_fitness():
    metrics = {"episode_return/a": jnp.array(1.0), "episode_return/b": jnp.array(3.0), "eval/x": jnp.array(jnp.nan)}
    assert float(Fitness(("episode_return/a", "episode_return/b"))(metrics)) == 2.0
    assert float(Fitness(("episode_return/a",), sign=-1.0)(metrics)) == -1.0
    assert np.isnan(float(Fitness(("eval/x",))(metrics)))  # not measured at this update
    with pytest.raises(KeyError, match="fitness needs"):
        Fitness(("nope",))(metrics)


@pytest.mark.slow  # ~14 s
def test_extension_parts_are_typed_and_optional(ippo):
    """An extension replaces the evaluation and the fitness; the rest stays PPO's."""
    seen = []
    ext = Extension(evaluate=lambda state, key: {"eval/custom": jnp.float32(1.0)}, fitness=Fitness(("eval/custom",)),
                    after_update=lambda state, traj: (seen.append(1) or state, {"extra_metric": jnp.float32(2.0)}))
    learner = make_train(ippo.config, ippo.env, extension=ext)
    state = learner.init(jax.random.key(0))
    state, m = learner.update(state)
    assert float(m["extra_metric"]) == 2.0 and seen and "policy_loss/row" in m
    assert learner.evaluate(state, jax.random.key(1)) == {"eval/custom": 1.0}
    assert learner.fitness.names == ("eval/custom",)


@pytest.mark.parametrize("kwargs, message", [
    (dict(lr=float("inf")), "lr must be a finite number > 0, got inf"),
    (dict(ent_coef=float("nan")), "ent_coef must be a finite number >= 0"),
    (dict(lr="abc"), "lr must be a finite number > 0, got 'abc'"),
    (dict(num_envs=2.5), "num_envs must be a positive int, got 2.5"),
    (dict(num_envs=True), "num_envs must be a positive int, got True"),
    (dict(gamma=1.5), r"gamma must be a finite number in \[0, 1\], got 1.5"),
    (dict(anneal_lr="maybe"), "anneal_lr must be True or False"),
    (dict(advantage="gea"), r"advantage must be one of \['gae'"),
    (dict(role_start_update={"a": -1}), r"role_start_update\['a'\] must be an int >= 0"),
    (dict(agents_per_update=0), "agents_per_update must be None or a positive int"),
])
def test_ppo_config_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PPOConfig(**{**TINY, **kwargs})


@pytest.mark.parametrize("kwargs, message", [
    (dict(pool_size=2.5), "pool_size must be an int >= 0, got 2.5"),
    (dict(eval_every=2.5), "eval_every must be a positive int, got 2.5"),
    (dict(pool_prob=float("nan")), "pool_prob must be a finite number"),
    (dict(average_decay=1.0), "average_decay"),
])
def test_selfplay_config_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        selfplay.SelfPlayConfig(ppo=TINY, **kwargs)


def test_make_train_checks_what_needs_the_environment():
    """Caught when the learner is built, before anything compiles."""
    env = jaxagents.make("stag_hunt")
    with pytest.raises(ValueError, match=r"num_minibatches=3 must divide role 'row'.s batch"):
        make_train(PPOConfig(**{**TINY, "num_minibatches": 3}), env)
    with pytest.raises(ValueError, match=r"shaped_reward='shaped' names no info entry"):
        make_train(PPOConfig(**TINY, shaped_reward="shaped"), env)


@pytest.mark.parametrize("cls", ["ppo", "pqn", "q"])
def test_shared_fields_are_checked_once_for_every_learner(cls):
    """The fields every learner shares (``skeleton.config.CommonConfig``) get the same
    checks and messages whichever learner's settings hold them."""
    from jaxagents.learners.policy_gradient.ppo_config import PPOConfig
    from jaxagents.learners.skeleton.config import CommonConfig
    from jaxagents.learners.value_based.pqn import PQNConfig
    from jaxagents.learners.value_based.qlearn import QConfig

    make = {"ppo": PPOConfig, "pqn": PQNConfig, "q": QConfig}[cls]
    assert issubclass(make, CommonConfig)
    for kwargs, message in ((dict(lr=0.0), "lr must be a finite number > 0"),
                            (dict(max_grad_norm=float("nan")), "max_grad_norm must be a finite number > 0"),
                            (dict(gamma=-0.1), r"gamma must be a finite number in \[0, 1\]"),
                            (dict(num_steps=0), "num_steps must be a positive int"),
                            (dict(anneal_lr="maybe"), "anneal_lr must be True or False"),
                            (dict(num_envs=4, num_steps=4, total_timesteps=15), "total_timesteps=15 is less than one update")):
        with pytest.raises(ValueError, match=message):
            make(**kwargs)
    c = make(num_envs=4, num_steps=4, total_timesteps=40, anneal_lr="no")
    assert c.num_updates == 2 and c.anneal_lr is False and c.replace(total_timesteps=64).num_updates == 4
