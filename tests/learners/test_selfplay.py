"""Self-play: exploitability falls on Kuhn poker; the opponent pool fills as a
ring buffer and restricts training to the learner's seats; the parameter average and
the distilled average policy; scripted evaluations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents.evaluation.exploitability import exploitability, uniform_policy
from jaxagents.learners.policy_gradient.selfplay import ROLE, SelfPlayConfig, make_train


@pytest.fixture(scope="module")
def kuhn_run():
    env = jaxagents.make("kuhn_poker")
    cfg = SelfPlayConfig(
        ppo=dict(num_envs=128, num_steps=16, total_timesteps=128 * 16 * 30, update_epochs=2, num_minibatches=2, lr=3e-3, ent_coef=0.02),
        eval_every=10, eval_envs=64, eval_steps=8, pool_size=3, pool_every=10, pool_prob=0.25, average_decay=0.9,
        average_policy=dict(lr=3e-3, epochs=2),  # draws nothing: the other tests' numbers are unchanged by it
    )
    train = make_train(cfg, env)
    # train(key) is init + num_updates updates; run the updates one by one (one compile
    # of `update`, as `jit(train)` would cost) to keep the states around the last one
    update = jax.jit(train.update)
    state = jax.jit(train.init)(jax.random.key(0))
    rows = []
    for _ in range(cfg.num_updates):
        before = state
        state, m = update(state)
        rows.append(m)
    metrics = jax.tree.map(lambda *xs: np.stack(xs), *rows)
    return train, state, metrics, before


@pytest.mark.slow  # the module's Kuhn run (17 s): the default suite keeps its 10 minutes; test_smoke updates every learner
def test_kuhn_exploitability_falls(kuhn_run):
    _, _, metrics, _ = kuhn_run
    tree = jaxagents.make("kuhn_poker").game_tree()
    uniform = float(exploitability(tree, uniform_policy(tree)))
    assert abs(uniform - 0.4583) < 1e-3
    expl = np.asarray(metrics["eval/exploitability"])
    assert np.isnan(expl[0]) and not np.isnan(expl[9])  # evaluated every 10 updates only
    assert float(np.nanmin(expl)) < 0.3 < uniform


@pytest.mark.slow  # the module's Kuhn run (17 s): the default suite keeps its 10 minutes; test_smoke updates every learner
def test_pool_ring_buffer(kuhn_run):
    train, state, _, _ = kuhn_run
    pool = state.extra.pool
    # pushed at updates 10, 20, 30 on top of the initial parameters: 3 slots full
    assert int(pool.count) == 3 and int(pool.next) == (1 + 3) % 3
    latest = jax.tree.map(lambda x: x[(int(pool.next) - 1) % 3], pool.params)
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b), latest, state.params[ROLE])


@pytest.mark.slow  # the module's Kuhn run (17 s): the default suite keeps its 10 minutes; test_smoke updates every learner
def test_pool_is_evaluated_as_one_mixed_strategy(kuhn_run):
    """``eval/pool/exploitability``: the pool's filled slots as one mixed strategy, the
    same number as the mixture of the slots' tables computed from the game tree."""
    from jaxagents.evaluation.exploitability import mixture_policy, policy_from_fn
    from jaxagents.learners.policy_gradient.selfplay import merge

    train, state, metrics, _ = kuhn_run
    pool_expl = np.asarray(metrics["eval/pool/exploitability"])
    np.testing.assert_array_equal(np.isnan(pool_expl), np.isnan(np.asarray(metrics["eval/exploitability"])))
    env = jaxagents.make("kuhn_poker")
    tree, merged = env.game_tree(), merge(env)

    def table(p):
        return policy_from_fn(tree, merged.env.inner_policies(merged.inner_policies({ROLE: train.agents.logits_fn(p, ROLE)})))

    slots = [jax.tree.map(lambda x: x[i], state.extra.pool.params) for i in range(3)]
    tables = jnp.stack([table(p) for p in slots])
    want = float(exploitability(tree, mixture_policy(tree, tables)))
    got = float(jax.jit(train.evaluate)(state, jax.random.key(3))["eval/pool/exploitability"])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert np.isclose(pool_expl[-1], want, rtol=1e-5)  # the last update evaluated the same pool
    # A mixture, not one of its members: the mixed table is none of the slots' tables, and
    # its exploitability is told apart from each member's at 10x the tolerance used above
    # (members can land within 1e-4 of the mixture: 4.4e-5 was seen on jax 0.11).
    mixed = np.asarray(mixture_policy(tree, tables))
    assert min(float(np.abs(mixed - np.asarray(t)).max()) for t in tables) > 1e-3
    singles = [float(exploitability(tree, t)) for t in tables]
    assert min(abs(want - x) for x in singles) > 10 * 1e-5 * abs(want)


@pytest.mark.slow  # the module's Kuhn run (17 s): the default suite keeps its 10 minutes; test_smoke updates every learner
def test_parameter_average_is_an_ema_and_evaluated(kuhn_run):
    train, new, metrics, before = kuhn_run
    # the last update: average' = 0.9 * average + 0.1 * params'
    want = jax.tree.map(lambda a, p: 0.9 * a + 0.1 * p, before.extra.average, new.params[ROLE])
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7), new.extra.average, want)
    assert not jax.tree.all(jax.tree.map(lambda a, p: np.allclose(a, p), new.extra.average, new.params[ROLE]))
    avg = np.asarray(metrics["eval/average/exploitability"])
    cur = np.asarray(metrics["eval/exploitability"])
    np.testing.assert_array_equal(np.isnan(avg), np.isnan(cur))  # evaluated on the same updates
    assert np.all(avg[~np.isnan(avg)] > 0) and not np.allclose(avg[9::10], cur[9::10])


@pytest.mark.slow  # the module's Kuhn run (17 s): the default suite keeps its 10 minutes; test_smoke updates every learner
def test_distilled_policy_is_trained_evaluated_and_resumes(kuhn_run, tmp_path):
    from jaxagents.checkpoint import Checkpointer

    train, new, metrics, before = kuhn_run
    dist = np.asarray(metrics["eval/distilled/exploitability"])
    np.testing.assert_array_equal(np.isnan(dist), np.isnan(np.asarray(metrics["eval/exploitability"])))
    assert np.all((dist[9::10] > 0) & (dist[9::10] < 0.4583))  # below uniform play's
    loss = np.asarray(metrics["average_policy/loss"])
    assert np.all(np.isfinite(loss)) and np.all(loss > 0)
    moved = jax.tree.map(lambda a, b: not np.allclose(a, b), new.extra.distilled.params, before.extra.distilled.params)
    assert any(jax.tree.leaves(moved))
    # a checkpoint of the state before the last update resumes to the same last update, bit for bit
    ckpt = Checkpointer(str(tmp_path / "ckpt"))
    ckpt.save(29, before, {"x": 1})
    restored, _, _ = ckpt.restore_newest(new)
    ckpt.close()
    host = lambda x: jax.random.wrap_key_data(np.asarray(jax.random.key_data(x)), impl=jax.random.key_impl(x)) \
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else np.asarray(x)  # noqa: E731 (reuses the compiled update)
    again, _ = jax.jit(train.update)(jax.tree.map(host, restored))
    jax.tree.map(np.testing.assert_array_equal, again.extra.distilled, new.extra.distilled)


@pytest.mark.slow  # (10-25 s: the default suite keeps its 10 minutes)
def test_distilled_policy_fits_the_learners_own_action_frequencies():
    """Fitted to a rollout where, at one observation, the learner's own moves are action 0
    80% of the time, the distilled policy plays action 0 with probability 0.8: samples of
    seats that did not move (``active``) or were not the learner (``learner``) -- all
    action 1 here -- carry no weight."""
    from jaxagents.learners.partners import average_policy as AP
    from jaxagents.learners.policy_gradient.selfplay import merge
    from jaxagents.learners.skeleton.agents import Agents
    from jaxagents.learners.skeleton.rollout import Transition
    from jaxagents.nn import NetworkConfig

    merged = merge(jaxagents.make("kuhn_poker"))
    agents = Agents(merged, NetworkConfig(hidden=(16,)))
    space = merged.roles[ROLE]
    T, E, n = 10, 10, space.num_agents  # 100 samples per slot; slot 0 the learner's moves
    obs = jnp.broadcast_to(jax.random.uniform(jax.random.key(0), space.observation_space.shape), (T, E, n, *space.observation_space.shape))
    own = (jnp.arange(T * E).reshape(T, E) < 80).astype(jnp.int32)  # 80 of 100 learner moves: action 0
    action = jnp.stack([1 - own] + [jnp.ones((T, E), jnp.int32)] * (n - 1), -1)
    active = jnp.zeros((T, E, n), bool).at[..., 0].set(True).at[:5, :, 1].set(True)  # some moves of seat 1...
    learner = jnp.ones((T, E, n), bool).at[..., 1].set(False)  # ...by an opponent snapshot
    zeros = jnp.zeros((T, E, n))
    tr = Transition(obs, None, action, zeros, zeros, jnp.ones((T, E, n, space.action_space.n), bool), zeros.astype(bool),
                    zeros, zeros.astype(bool), zeros.astype(bool), active, learner, zeros, zeros, None)
    cfg = AP.AveragePolicyConfig(lr=3e-2, epochs=200)
    avg, loss = jax.jit(lambda a: AP.fit(cfg, agents, ROLE, a, tr))(AP.init(cfg, agents.init(jax.random.key(1))[ROLE]))
    probs = jax.nn.softmax(agents.logits_fn(avg.params, ROLE)(obs[0, :1, 0]))[0]
    np.testing.assert_allclose(probs[:2], [0.8, 0.2], atol=0.02)
    entropy = -(0.8 * np.log(0.8) + 0.2 * np.log(0.2))  # the cross-entropy's minimum
    assert float(loss) == pytest.approx(entropy, abs=0.02)


def test_average_decay_is_validated():
    with pytest.raises(ValueError, match="average_decay"):
        SelfPlayConfig(average_decay=1.0)


@pytest.mark.slow  # the module's Kuhn run (17 s): the default suite keeps its 10 minutes; test_smoke updates every learner
def test_returns_are_reported_per_seat(kuhn_run):
    _, _, metrics, _ = kuhn_run
    assert {"episode_return/player_0", "episode_return/player_1"} <= set(metrics)
    # zero-sum: the seats' mean returns cancel
    np.testing.assert_allclose(metrics["episode_return/player_0"], -metrics["episode_return/player_1"], atol=1e-5)


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
def test_tic_tac_toe_minimax_evaluator():
    env = jaxagents.make("tic_tac_toe")
    cfg = SelfPlayConfig(ppo=dict(num_envs=4, num_steps=4, total_timesteps=16), eval_envs=2048, eval_steps=12)
    train = make_train(cfg, env)
    state = jax.jit(train.init)(jax.random.key(0))
    m = jax.jit(train.evaluate)(state, jax.random.key(1))
    for seat in (0, 1):
        # a near-uniform policy never beats perfect play and loses most games
        assert float(m[f"eval/minimax/win/seat{seat}"]) == 0.0
        assert float(m[f"eval/minimax/loss/seat{seat}"]) > 0.5
        assert 0.0 <= float(m[f"eval/random/win/seat{seat}"]) <= 1.0
        # the exact outcome probabilities agree with the sampled games
        assert abs(float(m[f"eval/minimax/exact/loss/seat{seat}"]) - float(m[f"eval/minimax/loss/seat{seat}"])) < 0.05
        assert float(m[f"eval/minimax/exact/win/seat{seat}"]) == 0.0
        assert 0.0 <= float(m[f"eval/minimax/greedy/loss/seat{seat}"]) <= 1.0


def test_average_policy_config_errors():
    with pytest.raises(ValueError, match="average_policy.lr"):
        SelfPlayConfig(average_policy=dict(lr=0.0))
    with pytest.raises(ValueError, match="average_policy: .*epoch"):
        SelfPlayConfig(average_policy=dict(epoch=2))
    with pytest.raises(ValueError, match="feed-forward"):
        SelfPlayConfig(ppo=dict(network=dict(recurrent=True)), average_policy=dict())


def test_config_errors():
    with pytest.raises(ValueError, match="pool_prob"):
        SelfPlayConfig(pool_prob=1.5)
    with pytest.raises(ValueError, match="recurrent"):
        SelfPlayConfig(ppo=dict(network={"recurrent": True}), pool_size=2)


@pytest.mark.slow  # ~20 s: the default suite's 10 minutes; test_tic_tac_toe_minimax_evaluator stays in it
def test_tic_tac_toe_exact_minimax_evaluation_through_merged_roles():
    """Self-play's view of the game's exact evaluator: MergeRoles encodes each seat's
    observation exactly as the merged env does, a perfect shared policy never loses,
    a bad one does (the evaluator itself: tests/environments/games/test_tic_tac_toe_exact.py)."""
    from jaxagents_environments.games.tic_tac_toe_exact import board_observation
    from jaxagents_environments.games.tic_tac_toe_minimax import minimax_q

    from jaxagents.core.wrappers import FlattenObservation
    from jaxagents.learners.policy_gradient.selfplay import merge

    env = jaxagents.make("tic_tac_toe")
    merged = merge(env)
    state, ts = merged.reset(jax.random.key(0), merged.default_params())
    for a in (4, 0, 8):  # X centre, O corner, X corner
        state, ts = merged.step(jax.random.key(1), state, {ROLE: jnp.array([a, a])}, merged.default_params())
    board = state.board if hasattr(state, "board") else state.env_state.board
    for seat, role in enumerate(("first", "second")):
        raw = FlattenObservation.flatten(board_observation(board, seat)[None])
        np.testing.assert_array_equal(ts.obs[ROLE][seat], merged.encode_obs(ROLE, role, raw)[0])

    def perfect(obs):  # minimax values as logits, read from the merged observation
        marks = obs[:, :18].reshape(-1, 9, 2)
        own_mark = jnp.where(obs[:, -2:-1] > 0, 1, 2)
        board = (marks[..., 0] * own_mark + marks[..., 1] * (3 - own_mark)).astype(jnp.int32)
        return jnp.where(jnp.isfinite(minimax_q(board)), minimax_q(board), -1e9)

    exact = merged.exact_evaluation(merged.default_params())
    m = jax.jit(lambda: exact({ROLE: perfect}))()
    for seat in (0, 1):
        assert float(m[f"minimax/greedy/loss/seat{seat}"]) == 0.0 and float(m[f"minimax/greedy/win/seat{seat}"]) == 0.0
    first_cell = jax.jit(lambda: exact({ROLE: lambda o: -jnp.arange(9.0) * jnp.ones((o.shape[0], 1))}))()
    assert float(first_cell["minimax/greedy/loss/seat0"]) == 1.0  # X: 0, 1, 2 in a row is always blocked, then lost
    # a mixed strategy of the two (drawn once per game): each outcome is the weighted mean
    both = lambda o: jnp.stack([perfect(o), -jnp.arange(9.0) * jnp.ones((o.shape[0], 1))])  # [2, S, 9]
    mixed = jax.jit(lambda: exact({ROLE: both}, jnp.array([1.0, 3.0])))()
    for k in mixed:
        np.testing.assert_allclose(mixed[k], 0.25 * m[k] + 0.75 * first_cell[k], atol=1e-6)
    assert float(mixed["minimax/greedy/loss/seat0"]) == 0.75


def test_wrapped_env_keeps_its_evaluators():
    """Capabilities survive wrapping: self-play on a wrapped Kuhn still evaluates exact
    exploitability (and ranks by it); a wrapped tic-tac-toe still offers minimax."""
    from jaxagents.core.wrappers import EpisodeStats

    cfg = SelfPlayConfig(ppo=dict(num_envs=4, num_steps=4, total_timesteps=16))
    kuhn = make_train(cfg, EpisodeStats(jaxagents.make("kuhn_poker")))
    assert kuhn.fitness.names == ("eval/exploitability",) and kuhn.fitness.sign < 0
    shapes = jax.eval_shape(kuhn.evaluate, jax.eval_shape(kuhn.init, jax.random.key(0)), jax.random.key(1))
    assert "eval/exploitability" in shapes
    ttt = EpisodeStats(jaxagents.make("tic_tac_toe"))
    assert set(ttt.scripted_policies()) == {"minimax"} and ttt.exact_evaluation() is not None
    state, _ = ttt.reset(jax.random.key(0))
    a = ttt.scripted_policies()["minimax"](state, jax.random.key(1))
    assert set(a) == {"first", "second"} and a["first"].shape == (1,)
    # a game without capabilities offers none, wrapped or not
    assert EpisodeStats(jaxagents.make("stag_hunt")).exact_evaluation() is None


def test_magnet_config_errors():
    with pytest.raises(ValueError, match="magnet must be one of"):
        SelfPlayConfig(magnet="past")
    with pytest.raises(ValueError, match="magnet='average'.*average_decay"):
        SelfPlayConfig(magnet="average")
    with pytest.raises(ValueError, match="magnet_weight"):
        SelfPlayConfig(magnet="average", average_decay=0.9, magnet_weight=1.5)
    with pytest.raises(ValueError, match="magnet_weight=0.5 has no effect"):
        SelfPlayConfig(magnet_weight=0.5)
    with pytest.raises(ValueError, match="magnet='average'.*feed-forward"):
        SelfPlayConfig(ppo=dict(network={"recurrent": True}), magnet="average", average_decay=0.9)


@pytest.mark.slow  # ~11 s: the default suite's 10 minutes; the magnet's loss stays (test_ppo.py)
def test_magnet_is_the_parameter_average():
    """With ``magnet="average"`` the regulariser pulls towards ``extra.average``: at the
    first update the average is the initial parameters, i.e. the policy itself (KL 0);
    afterwards it lags the parameters (KL > 0). (The loss itself is checked against
    closed form in test_ppo.py.)"""
    env = jaxagents.make("kuhn_poker")
    cfg = SelfPlayConfig(ppo=dict(num_envs=16, num_steps=8, total_timesteps=16 * 8 * 3, ent_coef=0.1, lr=0.05,
                                  optimizer="sgd", update_epochs=1, num_minibatches=1, advantage="returns",
                                  normalize="role"),
                         eval_every=100, eval_envs=8, eval_steps=4, average_decay=0.5, magnet="average")
    _, m = jax.jit(make_train(cfg, env).train)(jax.random.key(3))
    kl = np.asarray(m["magnet_kl/agents"])
    assert abs(kl[0]) < 1e-6 and np.all(kl[1:] > 1e-7)
    assert np.all(np.isfinite(np.asarray(m["entropy/agents"])))
