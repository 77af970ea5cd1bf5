"""PBT's exploit and explore steps (pure functions), and a population run's PBT:
a copied member equals its parent exactly right after the exploit step."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxagents
from jaxagents.learners import HParamSpec, PPOConfig, make_train
from jaxagents.population import PBTConfig, Population
from jaxagents.population.pbt import copy_members, explore, exploit_explore, ranks, select_parents


@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(st.floats(-10, 10, width=32, allow_subnormal=False), st.just(float("nan"))), min_size=2, max_size=12), st.integers(0, 2**31 - 1))
def test_truncation_selection(values, seed):
    fitness = jnp.asarray(values, jnp.float32)
    P = len(values)
    k = PBTConfig(fraction=0.25).num_replaced(P)
    parents = np.asarray(select_parents(jax.random.key(seed), fitness, k))
    order = np.asarray(ranks(fitness))
    top, bottom = set(order[:k].tolist()), set(order[P - k :].tolist())
    for i in range(P):
        if i in bottom:
            assert parents[i] in top  # the worst copy one of the best
        else:
            assert parents[i] == i  # everyone else keeps its state
    f32 = np.asarray(fitness)
    f = np.where(np.isnan(f32), -np.inf, f32)
    assert all(f[a] >= f[b] for a, b in zip(order[:-1], order[1:]))  # NaN ranks last


def test_explore_perturbs_or_resamples_within_the_range():
    space = {"lr": HParamSpec("lr", 1e-3, 1e-4, 1e-2, "log"), "gamma": HParamSpec("gamma", 0.99, 0.9, 0.999)}

    @struct.dataclass
    class HP:
        lr: jax.Array
        gamma: jax.Array

    P = 64
    hp = HP(jnp.full((P,), 2e-3), jnp.linspace(0.9, 0.99, P))
    parents = jnp.arange(P).at[: P // 2].set(P - 1)  # the first half copies member P-1
    out = explore(jax.random.key(0), hp, parents, space, ("lr",), (0.8, 1.2), 0.25)
    lr = np.asarray(out.lr)
    np.testing.assert_array_equal(lr[P // 2 :], np.float32(2e-3))  # not copied: unchanged
    perturbed = np.isclose(lr[: P // 2], 1.6e-3) | np.isclose(lr[: P // 2], 2.4e-3)
    assert perturbed.sum() >= P // 4 and np.all((lr >= 1e-4) & (lr <= 1e-2))
    gamma = np.asarray(out.gamma)  # not explored: inherited exactly from the parent
    np.testing.assert_array_equal(gamma[: P // 2], np.asarray(hp.gamma)[P - 1])
    np.testing.assert_array_equal(gamma[P // 2 :], np.asarray(hp.gamma)[P // 2 :])
    # clipping: a factor that would leave the range lands on its edge
    edge = explore(jax.random.key(1), HP(jnp.full((P,), 1e-2), hp.gamma), parents, space, ("lr",), (1.5, 1.5), 0.0)
    assert float(jnp.max(edge.lr)) == pytest.approx(1e-2)


def test_members_keep_their_own_random_keys_through_many_ready_points():
    """The exploit step copies everything but the keys: after 200 ready points with
    random fitness the members' keys are still all distinct (copying them, as the
    parameters are, leaves one key for the whole population after a few dozen), and
    every other leaf of a copied member is its parent's."""
    P = 8
    cfg = PBTConfig(fraction=0.5, resample_prob=0.0)
    space = {"lr": HParamSpec("lr", 1e-3, 1e-4, 1e-2, "log")}

    @struct.dataclass
    class HP:
        lr: jax.Array

    @struct.dataclass
    class Member:
        key: jax.Array  # [P]
        keys: jax.Array  # [P, 3]: several keys per member (e.g. one per environment)
        params: jax.Array

    members = Member(jax.random.split(jax.random.key(0), P), jax.random.split(jax.random.key(1), (P, 3)), jnp.arange(P, dtype=jnp.float32))
    hp = HP(jnp.full((P,), 1e-3))

    @jax.jit
    def ready(carry, k):
        members, hp = carry
        k_fit, k_pbt, k_gen = jax.random.split(k, 3)
        fitness = jax.random.normal(k_fit, (P,))
        gen = jax.random.randint(k_gen, (), 0, 1000)
        new, hp, parents = exploit_explore(k_pbt, fitness, members, hp, space, cfg, generation=gen)
        np_ = new.params
        return (new, hp), (parents, np_, members.params)

    (members, hp), (parents, after, before) = jax.lax.scan(ready, (members, hp), jax.random.split(jax.random.key(2), 200))
    parents, after, before = map(np.asarray, (parents, after, before))
    assert (parents != np.arange(P)).sum() >= 200 * 4  # half the members copied at every point
    np.testing.assert_array_equal(after, np.take_along_axis(before, parents, axis=1))  # parameters copied exactly
    assert len(set(after[-1].tolist())) <= 2  # by now the parameters descend from one or two members ...
    for leaf in (members.key, members.keys):  # ... but every key is its own
        data = np.asarray(jax.random.key_data(leaf)).reshape(-1, 2)
        assert len({d.tobytes() for d in data}) == data.shape[0]
    # one ready point by hand: the copied member's key is its own key folded with the generation
    m0 = Member(jax.random.split(jax.random.key(3), 2), jax.random.split(jax.random.key(4), (2, 3)), jnp.arange(2.0))
    out = copy_members(m0, jnp.array([0, 0]), jnp.uint32(7))
    assert np.asarray(out.params).tolist() == [0.0, 0.0]
    k0, k1 = (np.asarray(jax.random.key_data(x)) for x in (out.key, m0.key))
    np.testing.assert_array_equal(k0[0], k1[0])  # the parent keeps its key
    np.testing.assert_array_equal(k0[1], np.asarray(jax.random.key_data(jax.random.fold_in(m0.key[1], 7))))


def test_config_is_validated():
    with pytest.raises(ValueError, match="pbt.fraction"):
        PBTConfig(fraction=0.7)
    with pytest.raises(ValueError, match="pbt.interval"):
        PBTConfig(interval=0)
    with pytest.raises(ValueError, match="pbt.hparams"):
        PBTConfig(hparams="lr")
    learner = make_train(PPOConfig(num_envs=2, num_steps=2, total_timesteps=4), jaxagents.make("stag_hunt"))
    with pytest.raises(ValueError, match="unknown hyper-parameters"):
        Population(learner, 4, PBTConfig(hparams=("lrr",)))
    with pytest.raises(ValueError, match="unknown hyper-parameter 'lrr'"):
        Population(learner, 4, ranges={"lrr": (0.1, 0.2)})
    # a range reaching outside the learner's own is refused, not silently trained with
    with pytest.raises(ValueError, match=r"population ranges: lr \[0.0001, 5\] reaches outside the learner's range for it, "
                                         r"\[1e-05, 0.01\]"):
        Population(learner, 4, ranges={"lr": (1e-4, 5.0)})
    with pytest.raises(ValueError, match=r"ent_coef \[-0.1, 0.1\] reaches outside"):
        Population(learner, 4, ranges={"ent_coef": (-0.1, 0.1)})
    sgd = make_train(PPOConfig(num_envs=2, num_steps=2, total_timesteps=4, optimizer="sgd", lr=0.5), jaxagents.make("stag_hunt"))
    assert sgd.hparam_space["lr"].high == 2.0  # plain SGD's rates are larger than Adam's
    assert Population(sgd, 4, ranges={"lr": (0.01, 1.0)}).space["lr"].high == 1.0


@pytest.fixture(scope="module")
def pbt_run():
    """Four IPPO members on the stag hunt, a ready point every 2 updates."""
    learner = make_train(PPOConfig(num_envs=8, num_steps=8, total_timesteps=8 * 8 * 4, update_epochs=1, num_minibatches=1),
                         jaxagents.make("stag_hunt", horizon=4))
    pop = Population(learner, 4, PBTConfig(interval=2, fraction=0.25, resample_prob=0.0), ranges={"lr": (1e-4, 1e-2)})
    update = jax.jit(pop.update)
    state = jax.jit(pop.init)(jax.random.key(0))
    rows = []
    for _ in range(2):
        state, m = update(state)
        rows.append(jax.tree.map(np.asarray, m))
    return pop, state, rows


# the module's population run (20-35 s to compile): with the slow checks, the default suite
# keeps its 10 minutes (it checks exploit and explore as functions, above)
@pytest.mark.slow
def test_exploit_copies_parameters_and_optimiser_state_exactly(pbt_run):
    pop, state, rows = pbt_run
    assert not rows[0]["pbt/ready"].any() and rows[1]["pbt/ready"].all()
    parents = rows[1]["pbt/parent"]
    children = [i for i in range(4) if parents[i] != i]
    assert len(children) == 1  # a quarter of four
    (c,) = children
    p = int(parents[c])
    member = lambda i: jax.tree.map(lambda x: x[i], state.members)  # noqa: E731
    for a, b in zip(jax.tree.leaves((member(c).params, member(c).opt_state)), jax.tree.leaves((member(p).params, member(p).opt_state))):
        np.testing.assert_array_equal(a, b)
    keys = np.asarray(jax.random.key_data(state.members.key))
    assert len({k.tobytes() for k in keys}) == 4  # the child kept a key of its own
    lr = rows[1]["hparams/lr"]
    assert lr[c] == pytest.approx(0.8 * lr[p]) or lr[c] == pytest.approx(1.2 * lr[p])  # explored
    # the child had the worst interval fitness, the parent the best
    assert int(np.asarray(state.parents)[c]) == p
    assert np.all(np.isfinite(rows[1]["fitness"]))


@pytest.mark.slow  # the module's population run, as above
def test_population_members_follow_their_own_hparams(pbt_run):
    pop, state, rows = pbt_run
    lr0 = rows[0]["hparams/lr"]
    assert len(set(lr0.tolist())) == 4 and np.all((lr0 >= 1e-4) & (lr0 <= 1e-2))
    assert int(state.update) == 2 and np.asarray(state.members.update).tolist() == [2, 2, 2, 2]
    ev = jax.jit(pop.evaluate)(state, jax.random.key(1))
    assert ev["eval/episode_return/row"].shape == (4,)
    assert 0 <= int(jax.jit(pop.best)(state)) < 4
