"""The league (``jaxagents.learners.partners.league``): PFSP weights in closed form, the payoff
table from known outcomes, sampling frequencies, the ring buffer as one configuration
of it (the same draws as the pre-league pool), the main exploiter
(``jaxagents.learners.partners.exploiter``: its draws, its loss's samples, its resets), training,
resume and populations."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import jaxagents
from jaxagents.core.wrappers.autoreset import fold_in_each
from jaxagents.learners.partners import exploiter as X
from jaxagents.learners.partners import league as L
from jaxagents.learners.policy_gradient.selfplay import ROLE, SelfPlayConfig, make_train

REFERENCE = os.path.join(os.path.dirname(__file__), "data", "selfplay_pool_reference.npz")


# ----------------------------------------------------------------------- weights


def test_pfsp_weights_closed_form():
    p = jnp.array([0.2, 0.5, 0.9, 0.3])
    hard = np.array([0.64, 0.25, 0.01])  # (1 - p)^2 of the 3 filled slots
    np.testing.assert_allclose(L.pfsp_weights(p, 3, "hard"), np.append(hard / hard.sum(), 0.0), rtol=1e-6)
    var = np.array([0.16, 0.25, 0.09])  # p (1 - p)
    np.testing.assert_allclose(L.pfsp_weights(p, 3, "variance"), np.append(var / var.sum(), 0.0), rtol=1e-6)
    np.testing.assert_allclose(L.pfsp_weights(p, 4, "uniform"), np.full(4, 0.25))
    # every f(p) zero (the main agent always wins: hard has nothing to prioritise): uniform over filled slots
    np.testing.assert_allclose(L.pfsp_weights(jnp.ones(3), 2, "hard"), [0.5, 0.5, 0.0])


def test_config_validation_one_line():
    for kwargs, match in (
        (dict(weighting="easy"), "league.weighting must be one of"),
        (dict(self_play=0.5, pfsp=0.5, latest=0.5), "must be 1"),
        (dict(pfsp=-0.1, self_play=0.95, latest=0.15), "league.pfsp"),
        (dict(payoff_decay=0.0), "league.payoff_decay"),
    ):
        with pytest.raises(ValueError, match=match) as e:
            L.LeagueConfig(**kwargs)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="pool_size > 0"):
        SelfPlayConfig(league={})
    with pytest.raises(ValueError, match="pool_prob=0.3 has no effect"):
        SelfPlayConfig(pool_size=2, pool_prob=0.3, league={})
    with pytest.raises(ValueError, match="league: .*unexpected keyword"):
        SelfPlayConfig(pool_size=2, league={"weight": "hard"})
    cfg = SelfPlayConfig(pool_size=2, league={"weighting": "variance"})
    assert cfg.league.weighting == "variance" and cfg.mix is cfg.league
    for kwargs, match in (
        (dict(exploiter={}), r"league.self_play \+ league.pfsp \+ league.latest \+ league.exploiter.share must be 1"),
        (dict(self_play=0.35, pfsp=0.5, latest=0.15, exploiter={"share": 0.0}), "league.exploiter.share"),
        (dict(self_play=0.0, pfsp=0.0, latest=0.0, exploiter={"share": 1.0}), "league.exploiter.share"),
        (dict(self_play=0.2, exploiter={"lr": 0.0}), "league.exploiter.lr"),
        (dict(self_play=0.2, exploiter={"reset_every": -1}), "league.exploiter.reset_every"),
        (dict(self_play=0.2, exploiter={"shares": 0.15}), "league.exploiter: .*unexpected keyword"),
        (dict(self_play=0.2, exploiter=0.15), "league.exploiter must be an ExploiterConfig"),
    ):
        with pytest.raises(ValueError, match=match) as e:
            L.LeagueConfig(**kwargs)
        assert "\n" not in str(e.value)
    assert L.LeagueConfig(self_play=0.2, exploiter={}).exploiter == X.ExploiterConfig(share=0.15)
    assert SelfPlayConfig(pool_size=2, pool_prob=0.25).mix == L.LeagueConfig.ring_buffer(0.25)


def test_runner_config_checks_the_league_section():
    from jaxagents import runner

    base = {"learner": "selfplay", "env": {"id": "kuhn_poker"}, "train": {"pool_size": 2}}
    runner.prepare({**base, "train": {"pool_size": 2, "league": {"weighting": "hard", "payoff_decay": 0.9}}})
    with pytest.raises(ValueError, match="league"):
        runner.prepare({**base, "train": {"pool_size": 2, "league": {"wieghting": "hard"}}})
    with pytest.raises(ValueError, match="track_payoff|league"):
        runner.prepare({**base, "train": {"pool_size": 2, "league": {"track_payoff": False}}})
    league = {"self_play": 0.25, "exploiter": {"share": 0.1, "reset_every": 50}}
    runner.prepare({**base, "train": {"pool_size": 2, "league": league}})
    with pytest.raises(ValueError, match="exploiter.*reset_evry|reset_evry"):
        runner.prepare({**base, "train": {"pool_size": 2, "league": {**league, "exploiter": {"reset_evry": 5}}}})


# ----------------------------------------------------------------------- draws


def _legacy_draw(key, count, pool_prob, E, n, env_ids=None):
    """The opponent draw of self-play's pool before the league (kept here as the
    reference the ring-buffer configuration must reproduce)."""
    k_use, k_idx, k_seat = jax.random.split(key, 3)
    if env_ids is None:
        use = jax.random.bernoulli(k_use, pool_prob, (E,))
        idx = jax.random.randint(k_idx, (E,), 0, count)
        seat = jax.random.randint(k_seat, (E,), 0, n)
    else:
        each = lambda k, draw: jax.vmap(draw)(fold_in_each(k, env_ids))  # noqa: E731
        use = each(k_use, lambda k: jax.random.bernoulli(k, pool_prob))
        idx = each(k_idx, lambda k: jax.random.randint(k, (), 0, count))
        seat = each(k_seat, lambda k: jax.random.randint(k, (), 0, n))
    return use, idx, seat


@pytest.mark.parametrize("split,pool_prob,seed,count", [(False, 0.25, 1, 3), (True, 0.5, 3, 2)])
def test_ring_buffer_configuration_draws_as_the_pool_did(split, pool_prob, seed, count):
    env_ids = jnp.arange(8, 264) if split else None
    cfg = L.LeagueConfig.ring_buffer(pool_prob)
    new = jax.jit(lambda k, c: L.draw(cfg, k, c, c % 5, None, 5, 256, 2, env_ids))
    old = jax.jit(lambda k, c: _legacy_draw(k, c, pool_prob, 256, 2, env_ids))
    key = jax.random.key(seed)
    d = new(key, jnp.int32(count))
    for got, want in zip((d.use, d.idx, d.seat), old(key, jnp.int32(count))):
        np.testing.assert_array_equal(got, want)


def test_sampling_frequencies_follow_the_weights_and_the_mix():
    cfg = L.LeagueConfig(weighting="hard", self_play=0.3, pfsp=0.5, latest=0.2)
    p = jnp.array([0.1, 0.6, 0.8, 0.5])
    E = 200_000
    d = jax.jit(lambda k: L.draw(cfg, k, jnp.int32(3), jnp.int32(2), p, 4, E, 2))(jax.random.key(0))
    use, idx = np.asarray(d.use), np.asarray(d.idx)
    assert abs(use.mean() - 0.7) < 0.005
    w = np.asarray(L.pfsp_weights(p, 3, "hard"))
    # slot 1 is the latest ((next - 1) % K): it gets the latest games plus its PFSP share
    want = 0.5 * w + 0.2 * (np.arange(4) == 1)
    freq = np.bincount(idx[use], minlength=4) / E
    np.testing.assert_allclose(freq, want, atol=0.005)
    assert freq[3] == 0.0  # never an unfilled slot
    seats = np.bincount(np.asarray(d.seat), minlength=2) / E
    np.testing.assert_allclose(seats, [0.5, 0.5], atol=0.005)


@pytest.mark.parametrize("split", [False, True])
def test_exploiter_games_take_a_share_of_the_self_play_games_only(split):
    """With an exploiter of share s, a fraction s of the environments meets it (slot
    index K); every other environment draws exactly what the same mix without it
    (s given back to self-play) draws: same use, slot and seat."""
    base = L.LeagueConfig(weighting="hard", self_play=0.5, pfsp=0.3, latest=0.2)
    withx = L.LeagueConfig(weighting="hard", self_play=0.3, pfsp=0.3, latest=0.2, exploiter={"share": 0.2})
    p = jnp.array([0.1, 0.6, 0.8, 0.5])
    E = 100_000
    ids = jnp.arange(E) if split else None
    a, b = (jax.jit(lambda k, c=c: L.draw(c, k, jnp.int32(3), jnp.int32(2), p, 4, E, 2, ids))(jax.random.key(1))
            for c in (base, withx))
    vs = np.asarray(b.idx) == 4
    assert abs(vs.mean() - 0.2) < 0.005 and np.all(np.asarray(b.use)[vs])
    assert not np.any(np.asarray(a.use)[vs])  # they were self-play games without the exploiter
    for f in ("use", "idx", "seat"):
        np.testing.assert_array_equal(np.asarray(getattr(a, f))[~vs], np.asarray(getattr(b, f))[~vs])
    np.testing.assert_array_equal(np.asarray(a.seat), np.asarray(b.seat))


@pytest.mark.slow  # (10-25 s: the default suite keeps its 10 minutes)
def test_exploiter_fits_its_own_finished_moves_only():
    """``exploiter.fit`` on a hand-made Kuhn rollout: the exploiter's moves (opponent
    seat, in its environments, in episodes that end inside the rollout) where action 0
    returned +1 and action 1 returned -1 make it prefer action 0 there; changing what
    happens on every other sample (the main agent's moves, another opponent's
    environment, an unfinished episode, a seat that is not to move) changes nothing."""
    env = jaxagents.make("kuhn_poker")
    from jaxagents.learners.policy_gradient.selfplay import merge
    from jaxagents.learners.skeleton.agents import Agents
    from jaxagents.learners.skeleton.rollout import Transition

    merged = merge(env)
    agents = Agents(merged, SelfPlayConfig().ppo.network)
    params = agents.init(jax.random.key(0))[ROLE]
    D = merged.roles[ROLE].observation_space.shape[0]
    T, E, n = 2, 8, 2
    rng = np.random.default_rng(0)
    obs = np.broadcast_to(rng.normal(size=(1, 1, 1, D)).astype(np.float32), (T, E, n, D)).copy()
    action = np.zeros((T, E, n), np.int32)
    action[0, 1::2] = 1  # odd environments take action 1 at t = 0
    reward = np.zeros((T, E, n), np.float32)
    reward[0, :, 1] = np.where(np.arange(E) % 2 == 0, 1.0, -1.0)  # seat 1's move at t = 0 pays +-1 at once
    terminated = np.zeros((T, E, n), bool)
    terminated[0] = True  # the episode ends at t = 0 (t = 1 starts another that does not end)
    active = np.zeros((T, E, n), bool)
    active[:, :, 1] = True  # seat 1 moves
    learner = np.zeros((T, E, n), bool)
    learner[:, :, 0] = True  # the main agent in seat 0: seat 1 is the opponent
    mine = jnp.asarray(np.arange(E) < 6)  # environments 6, 7 meet a snapshot instead

    def transition(reward, action):
        z = jnp.zeros((T, E, n), jnp.float32)
        return Transition(jnp.asarray(obs), None, jnp.asarray(action), z, z, None, jnp.zeros((T, E, n), bool),
                          jnp.asarray(reward), jnp.asarray(terminated), jnp.zeros((T, E, n), bool), jnp.asarray(active),
                          jnp.asarray(learner), z, z, None)

    cfg = X.ExploiterConfig(lr=1e-2, epochs=20, ent_coef=0.0)
    fit = jax.jit(lambda tr: X.fit(cfg, agents, ROLE, X.init(cfg, params), tr, mine, 1.0))
    ex, m = fit(transition(reward, action))
    assert float(m["exploiter/samples"]) == 6.0
    probs = lambda p: np.asarray(jax.nn.softmax(agents.logits_fn(p, ROLE)(obs[0, 0, :1])))[0]  # noqa: E731
    assert probs(ex.params)[0] > probs(params)[0] + 0.1

    noise_r, noise_a = reward.copy(), action.copy()
    noise_r[0, 6:, 1] = 5.0  # a snapshot's environments
    noise_r[1] = rng.normal(size=(E, n))  # the unfinished episode at t = 1
    noise_a[1] = 1 - noise_a[1]
    noise_r[0, :, 0] = -7.0  # the main agent's seat
    ex2, m2 = fit(transition(noise_r, noise_a))
    jax.tree.map(np.testing.assert_array_equal, ex2.params, ex.params)
    np.testing.assert_array_equal(m2["exploiter/loss"], m["exploiter/loss"])


def test_exploiter_restarts_from_the_main_agent():
    cfg = X.ExploiterConfig(reset_every=4)
    main = {"w": jnp.ones(3)}
    ex = X.Exploiter({"w": jnp.full(3, 2.0)}, cfg.optimizer().init({"w": jnp.zeros(3)}))
    for u, want in ((3, 2.0), (4, 1.0), (8, 1.0)):
        np.testing.assert_array_equal(X.maybe_reset(cfg, ex, main, jnp.int32(u)).params["w"], np.full(3, want))
    assert X.maybe_reset(X.ExploiterConfig(), ex, main, jnp.int32(4)) is ex  # reset_every 0: never


# ----------------------------------------------------------------------- payoff table


@struct.dataclass
class _Traj:  # the fields of a rollout Transition that outcomes() reads, [T, E, n]
    terminated: jax.Array
    truncated: jax.Array
    reset: jax.Array
    learner: jax.Array
    episode_return: jax.Array


def test_payoff_table_from_known_outcomes():
    T, E, n = 4, 5, 2
    done = np.zeros((T, E), bool)
    reset = np.zeros((T, E), bool)
    ret = np.zeros((T, E, n), np.float32)
    learner = np.zeros((T, E, n), bool)
    seat = np.array([0, 1, 0, 1, 0])
    learner[:, np.arange(E), seat] = True
    # env 0: starts at t=0, learner (seat 0) wins at t=1; a new game starts at t=2, draw at t=3
    reset[0, 0], done[1, 0], ret[1, 0] = True, True, [1.0, -1.0]
    reset[2, 0], done[3, 0] = True, True
    # env 1: an episode from the previous rollout ends at t=0 (not credited), the next (t=1) is lost at t=2
    done[0, 1], ret[0, 1] = True, [-2.0, 2.0]
    reset[1, 1], done[2, 1], ret[2, 1] = True, True, [3.0, -3.0]  # learner in seat 1 loses
    # env 2: a self-play game (use=False): never credited
    reset[0, 2], done[1, 2], ret[1, 2] = True, True, [1.0, -1.0]
    # env 3: wins (seat 1) against slot 2; env 4: starts, never finishes
    reset[0, 3], done[2, 3], ret[2, 3] = True, True, [-1.0, 1.0]
    reset[0, 4] = True
    traj = _Traj(jnp.asarray(done)[..., None].repeat(n, -1), jnp.zeros((T, E, n), bool),
                 jnp.asarray(reset)[..., None].repeat(n, -1), jnp.asarray(learner), jnp.asarray(ret))
    draws = L.Draws(use=jnp.array([True, True, False, True, True]), idx=jnp.array([0, 0, 0, 2, 1]), seat=jnp.asarray(seat))
    wins, games = L.outcomes(traj, draws, 3)
    np.testing.assert_allclose(games, [3.0, 0.0, 1.0, 0.0])  # env 0: 2 games, env 1: 1, env 3: 1; no exploiter
    np.testing.assert_allclose(wins, [1.5, 0.0, 1.0, 0.0])  # win + draw (1/2) + loss; a win
    # the same game of env 3 against the exploiter (slot K = 3) is credited to it alone
    wins_x, games_x = L.outcomes(traj, draws.replace(idx=draws.idx.at[3].set(3)), 3)
    np.testing.assert_allclose(games_x, [3.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(wins_x, [1.5, 0.0, 0.0, 1.0])
    wins, games = wins[:3], games[:3]
    state = L.init_state(jax.random.key(0), 3)
    state = L.record(state, wins, games, 0.5)
    state = L.record(state, wins, games, 0.5)  # decayed counts: x * 0.5 + x
    np.testing.assert_allclose(state.games, [4.5, 0.0, 1.5])
    np.testing.assert_allclose(state.win_rate, [(2.25 + 0.5) / 5.5, 0.5, (1.5 + 0.5) / 2.5])
    state = L.forget(state, jnp.int32(2), jnp.bool_(True))
    np.testing.assert_allclose(state.games, [4.5, 0.0, 0.0])
    np.testing.assert_allclose(L.forget(state, jnp.int32(0), jnp.bool_(False)).games, state.games)


# ----------------------------------------------------------------------- training


TINY = dict(ppo=dict(num_envs=32, num_steps=8, total_timesteps=32 * 8 * 4, update_epochs=1, num_minibatches=1),
            eval_every=3, eval_envs=8, eval_steps=4, pool_size=3, pool_every=2)


@pytest.fixture(scope="module")
def league_run():
    exploiter = dict(share=0.2, reset_every=3, lr=0.01)
    cfg = SelfPlayConfig(**TINY, league=dict(weighting="hard", self_play=0.2, pfsp=0.4, latest=0.2, payoff_decay=0.9,
                                             exploiter=exploiter))
    train = make_train(cfg, jaxagents.make("kuhn_poker"))
    update = jax.jit(train.update)
    states = [jax.jit(train.init)(jax.random.key(0))]
    rows = []
    for _ in range(cfg.num_updates):
        s, m = update(states[-1])
        states.append(s)
        rows.append(m)
    return train, update, states, rows


@pytest.mark.slow  # the default suite's 10 minutes (its module fixture compiles a run, ~20 s alone)
def test_league_trains_and_keeps_its_payoff_table(league_run):
    train, _, states, rows = league_run
    table = states[-1].extra.league
    assert table.wins.shape == (3,) and int(states[-1].extra.pool.count) == 3
    assert all(float(r["league/games"]) > 0 for r in rows)
    # every credited game is between 0 and the number of episodes that finished
    assert all(float(r["league/games"]) <= float(r["episodes"]) for r in rows)
    assert np.all((np.asarray(table.win_rate) > 0) & (np.asarray(table.win_rate) < 1))
    assert np.isfinite(float(rows[2]["eval/exploitability"]))
    # update 1: the table's counts are exactly that update's credited games (nothing decayed yet)
    np.testing.assert_allclose(np.sum(states[1].extra.league.games), float(rows[0]["league/games"]))
    # the exploiter: its games are credited apart from the snapshots', it trains on its own
    # moves, and it restarts from the main agent at update 3 (reset_every)
    assert all(float(r["league/exploiter_games"]) > 0 and float(r["exploiter/samples"]) > 0 for r in rows)
    assert all(float(r["league/games"]) + float(r["league/exploiter_games"]) <= float(r["episodes"]) for r in rows)
    assert all(0 < float(r["league/exploiter_win_rate"]) < 1 and np.isfinite(float(r["exploiter/loss"])) for r in rows)
    def same(s):  # the exploiter's parameters are the main agent's
        return all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(s.extra.exploiter.params), jax.tree.leaves(s.params[ROLE])))

    assert same(states[0]) and not same(states[2]) and same(states[3]) and not same(states[4])
    moved = jax.tree.leaves(jax.tree.map(lambda a, b: np.abs(np.asarray(a) - np.asarray(b)).max(), states[2].extra.exploiter.params,
                                         states[1].extra.exploiter.params))
    assert max(moved) > 0  # it learns between resets


def _host(x):
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(np.asarray(jax.random.key_data(x)), impl=jax.random.key_impl(x))
    return np.asarray(x)


@pytest.mark.slow  # the default suite's 10 minutes (its module fixture compiles a run, ~20 s alone)
def test_resume_is_bit_identical(league_run, tmp_path):
    from jaxagents.checkpoint import Checkpointer

    train, update, states, rows = league_run
    ckpt = Checkpointer(str(tmp_path / "ckpt"))
    ckpt.save(3, states[3], {"x": 1})
    restored, step, _ = ckpt.restore_newest(states[0])  # any state of the right shapes
    ckpt.close()
    assert step == 3
    # the restored arrays come back committed to a device, and jit would compile update
    # again for them (~20 s); the same values from the host reuse the compiled update
    s = jax.tree.map(_host, restored)
    for u in range(3, len(rows)):
        s, m = update(s)
        jax.tree.map(np.testing.assert_array_equal, m, rows[u])
    key_data = lambda t: jax.tree.map(lambda x: jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x, t)  # noqa: E731
    jax.tree.map(np.testing.assert_array_equal, key_data(s), key_data(states[-1]))


def _script(name, rel):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(__file__), rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# the reference's own regeneration script (its capture, config and source commit)
POOL_REFERENCE = _script("selfplay_pool_reference", "selfplay_pool_reference.py")
REFERENCE_DATA = _script("reference_data", os.path.join("..", "reference_data.py"))


def test_pool_reference_names_the_commit_it_came_from():
    assert REFERENCE_DATA.stored_commit(REFERENCE) == POOL_REFERENCE.COMMIT


@pytest.mark.slow
def test_ring_buffer_run_matches_the_pre_league_pool():
    """Every metric and state leaf of 2 updates of a pool run, against the outputs of the
    pool implementation before the league (bit for bit with JAXAGENTS_POOL_REFERENCE_EXACT=1
    on the machine that recorded them) (tests/learners/data, written by it on CPU
    with JAX 0.10.2 under the suite's XLA flags, tests/conftest.py; another XLA build
    or optimisation level rounds differently -- regenerate it there with
    ``tests/learners/selfplay_pool_reference.py``, which records only from that commit,
    1ec1535)."""
    ref = REFERENCE_DATA.arrays(REFERENCE)
    got = POOL_REFERENCE.capture(SelfPlayConfig(**POOL_REFERENCE.POOL))
    # measures added since (the pool evaluated as one mixed strategy) read the run, never steer it
    added = {k for k in set(got) - set(ref) if "/eval/pool/" in k}
    assert added and set(got) - added == set(ref)
    # bit for bit on the machine the reference was recorded on; elsewhere (another processor
    # under the same "model name", e.g. with or without AVX-512) XLA's CPU code rounds
    # differently: floats agree to rounding (an Intel Xeon: 5e-4 relative; another AMD EPYC
    # 8.7e-6), integers (keys, counts) exactly
    exact = os.environ.get("JAXAGENTS_POOL_REFERENCE_EXACT") == "1"
    for k in ref:
        if exact or not np.issubdtype(ref[k].dtype, np.floating):
            np.testing.assert_array_equal(got[k], ref[k], err_msg=k)
        else:
            np.testing.assert_allclose(got[k], ref[k], rtol=2e-3, atol=1e-6, err_msg=k)


@pytest.mark.heavy
def test_league_inside_a_population():
    from jaxagents.population import Population

    cfg = SelfPlayConfig(**TINY, league=dict(weighting="variance", self_play=0.2, exploiter={"share": 0.15}))
    pop = Population(make_train(cfg, jaxagents.make("kuhn_poker")), 2)
    state = jax.jit(pop.init)(jax.random.key(0))
    update = jax.jit(pop.update)
    for _ in range(3):
        state, m = update(state)
    table = state.members.extra.league
    assert table.games.shape == (2, 3)
    # members draw and record their own games
    assert not np.array_equal(np.asarray(table.wins[0]), np.asarray(table.wins[1]))
    assert np.asarray(m["league/games"]).shape == (2,)
    # each member has its own exploiter
    w = jax.tree.leaves(state.members.extra.exploiter.params)[0]
    assert w.shape[0] == 2 and not np.array_equal(np.asarray(w[0]), np.asarray(w[1]))
    assert np.asarray(m["league/exploiter_games"]).shape == (2,)
