"""IQL, VDN and QMIX (``jaxagents.learners.value_based.qlearn``).

* On a one-shot stag hunt whose actions are ordered so that the team optimum is
  *not* action 0 (the greedy tie-break), VDN finds the optimal joint action
  (stag, stag) in every member of a 2-member PBT population; IQL, on each agent's
  own reward, settles on the risk-dominant (hare, hare) in every seed (``-m slow``):
  against a partner that explores uniformly, hare's sure 3 beats stag's expected 2.
  The same settings, two different answers: neither is the network's default.
* A run checkpointed half-way (replay buffer, target network, optimiser,
  environments and PBT state included) and restored ends bit-identical to the
  uninterrupted one.
* QMIX (recurrent agents, hypernetworks on ``global_obs``) on a two-step
  coordination game whose best-paying action is illegal: no stored action is ever
  illegal (random or greedy), and the greedy team plays the best legal joint action.
* The TD pieces: the target's max and double-Q argmax ignore illegal actions;
  inactive agents change nothing in the loss; config errors name the field.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxagents_environments.games.matrix import MatrixGame

import jaxagents
from jaxagents.core.spaces import Discrete
from jaxagents.core.types import Role
from jaxagents.learners.value_based.qlearn import (
    QConfig,
    make_train,
    next_values,
    td_loss,
)
from jaxagents.learners.value_based.qnets import greedy
from jaxagents.population import PBTConfig, Population

# actions (hare, stag, feast); payoff[player, row action, column action]. Hare pays 3
# whatever the partner does, stag pays 4 with a stag partner and 0 alone; feast pays 9
# but is illegal for both players (masked at every step).
STAG_LAST = np.array([[[3, 3, 9], [0, 4, 9], [9, 9, 9]], [[3, 0, 9], [3, 4, 9], [9, 9, 9]]], np.float32)
TINY = dict(num_envs=16, num_steps=2, total_timesteps=16 * 2 * 32, buffer_size=16 * 16, batch_size=32, sample_length=1,
            num_gradient_steps=4, learning_starts=16 * 2, target_update_interval=2, lr=1e-2, eps_decay=0.75,
            network=dict(hidden=[16], layer_norm=False))


class MaskedStagHunt(MatrixGame):
    """The stag hunt above, its third action illegal for both players."""

    def __init__(self, horizon: int = 1):
        super().__init__(payoff=STAG_LAST, horizon=horizon)
        self.roles = {r: Role(1, role.observation_space, Discrete(3)) for r, role in self.roles.items()}

    def _masked(self, ts):
        legal = jnp.array([[True, True, False]])
        return ts.replace(action_mask={r: legal for r in self.roles})

    def reset_env(self, key, params):
        state, ts = super().reset_env(key, params)
        return state, self._masked(ts)

    def step_env(self, key, state, actions, params):
        state, ts = super().step_env(key, state, actions, params)
        return state, self._masked(ts)


def _greedy_first_actions(learner, params):
    """Each member's greedy (row, column) action at the first step: ``i32[P, 2]``."""
    env = learner.env
    _, ts = env.reset(jax.random.key(0))
    agents = learner.agents

    def one(p):
        acts = []
        for role in ("row", "column"):
            obs = ts.obs[role][None, None]  # [T=1, E=1, n=1, D]
            _, q = agents.apply(p[role], role, jnp.zeros((1, 1, agents.hidden_size)), obs, jnp.ones((1, 1, 1), bool))
            acts.append(greedy(q[0, 0, 0], ts.action_mask[role][0]))
        return jnp.stack(acts)

    return np.asarray(jax.jit(jax.vmap(one))(params))


def _stored_actions(buffer):
    """Every action in the members' buffers (``[P, ...]`` leaves): the last steps
    written, all of them once the buffer has wrapped around."""
    full = np.asarray(buffer.is_full).reshape(-1)[0]
    n = None if full else int(np.asarray(buffer.current_index).reshape(-1)[0])
    return np.concatenate([np.asarray(buffer.experience.action[r])[:, :, :n].reshape(-1) for r in ("row", "column")])


@pytest.fixture(scope="module")
def vdn_population(tmp_path_factory):
    """2 VDN members (lr drawn per member, PBT every 8 updates) on the one-shot stag
    hunt; a checkpoint half-way, restored and continued."""
    from jaxagents.checkpoint import Checkpointer

    learner = make_train(QConfig(mixer="vdn", **TINY), MaskedStagHunt())
    pop = Population(learner, 2, PBTConfig(interval=8, fraction=0.5), ranges={"lr": (7e-3, 1.5e-2)})
    init, update = jax.jit(pop.init), jax.jit(pop.update)
    state = init(jax.random.key(0))
    rows, half = [], learner.num_updates // 2
    for i in range(learner.num_updates):
        if i == half:
            ck = Checkpointer(tmp_path_factory.mktemp("qlearn_ckpt"))
            ck.save(i, state, {})
            resumed, resumed_rows = ck.restore(init(jax.random.key(1)))[0], []
        state, m = update(state)
        rows.append(jax.tree.map(np.asarray, m))
        if i >= half:
            resumed, m2 = update(resumed)
            resumed_rows.append(jax.tree.map(np.asarray, m2))
    return learner, state, rows, resumed, resumed_rows


@pytest.mark.slow  # the default suite's 10 minutes (its module fixture compiles a run, ~20 s alone)
def test_vdn_finds_the_coordinated_optimum_in_every_population_member(vdn_population):
    learner, state, rows, _, _ = vdn_population
    # (stag, stag): 4 each, only reachable together; neither action 0 nor the illegal feast
    np.testing.assert_array_equal(_greedy_first_actions(learner, state.members.params), [[1, 1], [1, 1]])
    actions = _stored_actions(state.members.buffer)
    assert set(np.unique(actions).tolist()) == {0, 1}  # both legal actions explored, the illegal one never
    assert rows[-1]["learning"].all() and np.all(np.isfinite(rows[-1]["loss"]))
    assert rows[7]["pbt/ready"].all() and rows[-1]["hparams/lr"].shape == (2,)  # PBT ran over the learner unchanged
    assert rows[0]["epsilon"][0] == pytest.approx(1.0) and rows[-1]["epsilon"][0] == pytest.approx(0.05)
    assert np.all(rows[-1]["episode_return/row"] > 3.5)  # the training returns agree (epsilon 0.05)


@pytest.mark.slow  # the default suite's 10 minutes (its module fixture compiles a run, ~20 s alone)
def test_resume_from_a_checkpoint_is_bit_identical(vdn_population):
    _, state, rows, resumed, resumed_rows = vdn_population
    flat = lambda s: [np.asarray(jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x)  # noqa: E731
                      for x in jax.tree.leaves(s)]
    a, b = flat(state), flat(resumed)
    assert len(a) == len(b)
    for x, y in zip(a, b):  # parameters, target, optimiser, environments, replay buffer, PBT state, keys
        np.testing.assert_array_equal(x, y)
    for m1, m2 in zip(rows[len(rows) - len(resumed_rows):], resumed_rows):
        assert m1.keys() == m2.keys()
        for k in m1:
            np.testing.assert_array_equal(m1[k], m2[k], err_msg=k)


@pytest.mark.slow  # a third compile (~8 s); the default suite keeps VDN's and QMIX's
def test_iql_settles_on_the_risk_dominant_equilibrium():
    learner = make_train(QConfig(mixer="none", **TINY), MaskedStagHunt())
    states, _ = jax.jit(jax.vmap(learner.train))(jax.random.split(jax.random.key(0), 2))
    # (hare, hare) in both seeds: against a partner exploring uniformly, hare's sure 3
    # beats stag's expected 2, and once both play hare, stag pays 0
    np.testing.assert_array_equal(_greedy_first_actions(learner, states.params), [[0, 0], [0, 0]])
    assert set(np.unique(_stored_actions(states.buffer)).tolist()) == {0, 1}


@pytest.fixture(scope="module")
def qmix_two_steps():
    """QMIX, recurrent agents, on the masked stag hunt played twice per episode."""
    cfg = QConfig(mixer="qmix", **{**TINY, "num_steps": 4, "sample_length": 3, "learning_starts": 16 * 4, "gamma": 0.5,
                                   "mixer_embed": 8, "mixer_hyper_hidden": 8,
                                   "network": dict(hidden=[16], recurrent=True, gru_size=16, layer_norm=False)})
    learner = make_train(cfg, MaskedStagHunt(horizon=2))
    state, metrics = jax.jit(learner.train)(jax.random.key(0))
    return learner, state, jax.tree.map(np.asarray, metrics)


@pytest.mark.slow  # the default suite's 10 minutes (its fixture trains QMIX, ~15 s alone); one QMIX update stays in test_smoke.py
def test_qmix_recurrent_never_chooses_an_illegal_action_and_coordinates(qmix_two_steps):
    learner, state, metrics = qmix_two_steps
    assert set(np.unique(_stored_actions(jax.tree.map(lambda x: x[None], state.buffer))).tolist()) == {0, 1}
    assert metrics["epsilon"][0] == pytest.approx(1.0) and metrics["learning"][-1] == 1.0
    ev = jax.jit(learner.evaluate)(state, jax.random.key(3))
    assert float(ev["eval/episode_return/row"]) == 8.0  # (stag, stag) at both steps


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
def test_pqn_and_q_learning_evaluate_the_same_greedy_policy_alike():
    """The value-based learners share one evaluation (``common.evaluate_greedy``): on
    the one-shot stag hunt, PQN's and IQL's ``evaluate`` of the same Q-networks report
    the same metrics, every episode the greedy joint action's payoff (never the illegal
    feast)."""
    from jaxagents.learners.value_based import pqn

    env, net = MaskedStagHunt(), dict(hidden=[16], layer_norm=False)
    iql = make_train(QConfig(mixer="none", **{**TINY, "network": dict(net, recurrent=False)}), env)
    pqn_learner = pqn.make_train(pqn.PQNConfig(num_envs=4, num_steps=2, total_timesteps=64, num_minibatches=2,
                                               network=net), env)
    state = iql.init(jax.random.key(0))
    pqn_state = pqn_learner.init(jax.random.key(1)).replace(params=state.params)
    key = jax.random.key(2)
    m_iql = jax.jit(lambda s: iql.evaluate(s, key, num_envs=4, num_steps=3))(state)
    m_pqn = jax.jit(lambda s: pqn_learner.evaluate(s, key, num_envs=4, num_steps=3))(pqn_state)
    assert {k: float(v) for k, v in m_iql.items()} == {k: float(v) for k, v in m_pqn.items()}
    row, col = _greedy_first_actions(iql, jax.tree.map(lambda x: x[None], state.params))[0]
    assert int(m_iql["eval/episodes"]) == 4 * 3 and max(row, col) < 2
    assert float(m_iql["eval/episode_return/row"]) == STAG_LAST[0, row, col]
    assert float(m_iql["eval/episode_return/column"]) == STAG_LAST[1, row, col]


def test_the_target_ignores_illegal_actions():
    q_target = jnp.array([[1.0, 100.0, 2.0], [5.0, -1.0, 100.0]])
    q_online = jnp.array([[0.0, 100.0, 1.0], [0.0, 1.0, 100.0]])
    mask = jnp.array([[True, False, True], [True, True, False]])
    np.testing.assert_array_equal(next_values(q_online, q_target, mask, double_q=False), [2.0, 5.0])
    # double Q: the online network's best *legal* action (2, then 1), valued by the target
    np.testing.assert_array_equal(next_values(q_online, q_target, mask, double_q=True), [2.0, -1.0])


def test_inactive_agents_change_nothing_in_the_loss():
    q = jnp.array([1.0, 2.0, 3.0, 4.0])
    active = jnp.array([True, False, True, False])
    loss, _ = td_loss(q, jnp.zeros(4), jnp.ones(4), jnp.zeros(4, bool), active, 0.9)
    other, _ = td_loss(q.at[1].set(-50.0).at[3].set(7.0), jnp.zeros(4), jnp.ones(4).at[1].set(9.0), jnp.zeros(4, bool), active, 0.9)
    assert float(loss) == float(other) == pytest.approx((0.0 + 4.0) / 2)


def test_bad_configs_name_the_field():
    with pytest.raises(ValueError, match="mixer must be one of"):
        QConfig(mixer="qtran")
    with pytest.raises(ValueError, match="eps_end"):
        QConfig(eps_end=1.5)
    with pytest.raises(ValueError, match="team_reward"):
        QConfig(team_reward="max")
    with pytest.raises(ValueError, match="buffer_size"):
        make_train(QConfig(num_envs=4, num_steps=8, total_timesteps=64, buffer_size=16), jaxagents.make("stag_hunt"))
    with pytest.raises(ValueError, match="data_shards"):
        make_train(QConfig(num_envs=4, num_steps=8, total_timesteps=64), jaxagents.make("stag_hunt"), data_axis="data", data_shards=2)
    with pytest.raises(ValueError, match="global_obs"):
        make_train(QConfig(num_envs=4, num_steps=8, total_timesteps=64), _NoGlobal())


class _NoGlobal(MatrixGame):
    def __init__(self):
        super().__init__("coordination")

    def global_obs(self, state, params=None):
        raise NotImplementedError
