"""``gtb``: the rules one at a time on hand-built states, conservation on random
rollouts, vmap over maps, the layouts, rendering. Step-for-step parity with the AI
Economist's own code is in ``test_gtb_parity.py``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents import random_actions
from jaxagents_environments.economy.gtb import GTB, Draws, layouts, rules
from jaxagents_environments.economy.gtb.layouts import STONE, WOOD

OPEN_MAP = "\n".join([" " * 6] * 5 + ["SW@   "])  # 6x6, a stone and a wood source, water


@pytest.fixture(scope="module")
def small():
    env = GTB(3, layout=OPEN_MAP, placement="random", horizon=20, tax_period=5)
    params = env.default_params()
    step = jax.jit(lambda s, a, d: env.step_with_draws(s, a, params, d))
    return env, params, step


def _state(env, params, locs, **kw):
    s = env.initial_state(params, jnp.asarray(locs), jnp.full((env.N,), 15.0), jnp.zeros((env.N,))).replace(**kw)
    return s.replace(mask=env.action_mask(s))  # a state edited by hand refreshes its cached mask


def _draws(env, priority=None, bonus=None, regen=1.0):
    n = env.N
    return Draws(priority=jnp.arange(n) if priority is None else jnp.asarray(priority),
                 bonus=jnp.ones((n,)) if bonus is None else jnp.asarray(bonus, jnp.float32),
                 regen=jnp.full((len(env.source_tiles[0]),), regen, jnp.float32))


def _act(env, citizen, planner=0):
    return {"citizen": jnp.asarray(citizen, jnp.int32), "planner": jnp.full((1, env.B), planner, jnp.int32)}


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_layout_parse_and_generated():
    q = layouts.parse(layouts.QUADRANT_25X25)
    assert (q.height, q.width) == (25, 25)
    assert q.sources[WOOD].sum() == 20 and q.sources[STONE].sum() == 20  # "20each"
    assert not np.any(q.sources[WOOD] & q.sources[STONE]) and not np.any(q.water & q.sources.any(0))
    big = layouts.for_citizens(1000)
    assert big.height == big.width == 400 and big.sources.sum() == 40 * 256
    with pytest.raises(ValueError, match="unknown characters"):
        layouts.parse("WX")
    with pytest.raises(ValueError, match="layout must be one of"):
        GTB(4, layout="nowhere")


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_ranked_skills_match_the_monte_carlo_figure():
    # the AI Economist's fixed_four: mean ranked payments from 1e5 seeded draws
    # (16.4724, 13.2671, 11.3316, 22.2496 as it printed them, in rank order below)
    exact = layouts.expected_ranked_multipliers(4, 3.0) * 10
    np.testing.assert_allclose(exact, [11.3316, 13.2671, 16.4724, 22.2496], atol=0.02)
    rng = np.random.default_rng(0)
    x = np.sort(np.minimum(3, 2 * rng.pareto(4, (200_000, 4)) + 1), 1).mean(0)
    np.testing.assert_allclose(exact / 10, x, atol=3e-3)


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_contested_tile_goes_to_the_first_visitor(small):
    env, params, step = small
    right, left = rules.ActionLayout(2, env.P).move(1), rules.ActionLayout(2, env.P).move(0)
    s = _state(env, params, [(0, 0), (0, 2), (4, 4)])
    for prio, winner in (([0, 1, 2], 0), ([5, 3, 9], 1)):
        s2, ts = step(s, _act(env, [right, left, 0]), _draws(env, prio))
        loc = np.asarray(s2.loc)
        assert tuple(loc[winner]) == (0, 1) and tuple(loc[1 - winner]) == ((0, 2) if winner == 0 else (0, 0))
        np.testing.assert_allclose(np.asarray(s2.labour)[:2], [1.0 * (winner == 0), 1.0 * (winner == 1)])


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_moves_into_occupied_water_and_edges_are_masked(small):
    env, params, step = small
    lay = env.layout
    s = _state(env, params, [(5, 3), (4, 3), (0, 0)])  # citizen 0 east of water (5, 2)
    mask = np.asarray(env.action_mask(s))
    assert not mask[0, lay.move(0)]  # water to the left
    assert not mask[0, lay.move(2)]  # citizen 1 above
    assert not mask[0, lay.move(3)] and not mask[2, lay.move(2)] and not mask[2, lay.move(0)]  # edges
    s2, ts = step(s, _act(env, [lay.move(0), 0, lay.move(2)]), _draws(env))
    assert tuple(np.asarray(s2.loc)[0]) == (5, 3) and int(ts.info["num_illegal"]) == 2


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_gather_build_and_houses(small):
    env, params, step = small
    lay = env.layout
    s = _state(env, params, [(4, 0), (4, 1), (0, 5)])
    # both step onto their source tile below; citizen 1 gets the bonus unit
    s, ts = step(s, _act(env, [lay.move(3), lay.move(3), 0]), _draws(env, bonus=[0.5, 0.0, 0.0]))
    s = s.replace(bonus_prob=jnp.asarray([0.4, 0.4, 0.0]))
    s, ts = step(_state(env, params, [(4, 0), (4, 1), (0, 5)]).replace(bonus_prob=jnp.asarray([0.4, 0.4, 0.0])),
                 _act(env, [lay.move(3), lay.move(3), 0]), _draws(env, bonus=[0.5, 0.1, 0.0]))
    np.testing.assert_array_equal(np.asarray(s.goods)[:2], [[1, 0], [0, 2]])
    assert not np.asarray(s.resources)[:, 5, :2].any() and np.asarray(ts.info["gathered"]).tolist() == [1, 2]
    np.testing.assert_allclose(np.asarray(s.labour)[:2], [2.0, 2.0])  # move + collect
    # regrowth (draw below regen_prob) refills the source under the standing citizen
    s, _ = step(s, _act(env, [0, 0, 0]), _draws(env, regen=0.0))
    assert np.asarray(s.resources)[STONE, 5, 0] and np.asarray(s.resources)[WOOD, 5, 1]
    s, _ = step(s, _act(env, [0, 0, 0]), _draws(env))  # ... and it is gathered on the next step
    np.testing.assert_array_equal(np.asarray(s.goods)[:2], [[2, 0], [0, 3]])
    # build: a stone and a wood, not on a source tile; the house blocks others only
    s = _state(env, params, [(2, 2), (2, 3), (0, 5)], goods=jnp.asarray([[1, 1], [1, 1], [0, 0]]))
    assert np.asarray(env.action_mask(s))[:2, rules.BUILD].all()
    assert not np.asarray(env.action_mask(s.replace(loc=jnp.asarray([(5, 0), (2, 3), (0, 5)]))))[0, rules.BUILD]
    s, ts = step(s, _act(env, [rules.BUILD, 0, 0]), _draws(env))
    assert int(np.asarray(s.house)[2, 2]) == 0 and int(ts.info["builds"]) == 1
    np.testing.assert_allclose(np.asarray(s.coin)[0], 10.0 + 15.0)
    np.testing.assert_array_equal(np.asarray(s.goods)[0], [0, 0])
    s = s.replace(loc=jnp.asarray([(1, 2), (2, 3), (0, 5)]))
    mask = np.asarray(env.action_mask(s))
    assert mask[0, lay.move(3)] and not mask[1, lay.move(0)]  # owner may enter, others not


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_orders_match_at_the_older_price_and_expire(small):
    env, params, step = small
    lay = env.layout
    s = _state(env, params, [(0, 0), (0, 2), (0, 4)], goods=jnp.asarray([[0, 2], [0, 0], [0, 0]]))
    s, _ = step(s, _act(env, [lay.order(WOOD, 1, 4), 0, 0]), _draws(env))  # ask 4 rests
    s, ts = step(s, _act(env, [0, lay.order(WOOD, 0, 7), 0]), _draws(env))  # bid 7 takes it at 4
    assert np.asarray(ts.info["trades"]).tolist() == [0, 1]
    np.testing.assert_allclose(np.asarray(s.coin)[:2], [14.0, 6.0])
    np.testing.assert_array_equal(np.asarray(s.goods)[:2, WOOD], [1, 1])
    # same step: bid 9 (citizen 1) and ask 2 (citizen 0) trade at the ask's price
    s, ts = step(s, _act(env, [lay.order(WOOD, 1, 2), lay.order(WOOD, 0, 5), 0]), _draws(env))
    np.testing.assert_allclose(np.asarray(s.coin)[:2], [16.0, 4.0])
    assert float(jnp.sum(s.escrow_coin)) == 0 and int(jnp.sum(s.escrow_goods)) == 0
    # an unmatched bid expires after order_duration steps and returns its escrow
    p = params.replace(order_duration=jnp.asarray(2, jnp.int32))
    step2 = jax.jit(lambda s, a, d: env.step_with_draws(s, a, p, d))
    s, _ = step2(s, _act(env, [0, 0, lay.order(STONE, 0, 3)]), _draws(env))
    for _ in range(2):
        assert float(s.escrow_coin[2]) == 3.0
        s, _ = step2(s, _act(env, [0, 0, 0]), _draws(env))
    assert float(s.escrow_coin[2]) == 0.0 and float(s.coin[2]) == 10.0


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_no_self_crossing_orders(small):
    env, params, step = small
    lay = env.layout
    s = _state(env, params, [(0, 0), (0, 2), (0, 4)], goods=jnp.asarray([[1, 0], [0, 0], [0, 0]]))
    s, _ = step(s, _act(env, [lay.order(STONE, 1, 5), 0, 0]), _draws(env))  # own ask at 5
    mask = np.asarray(env.action_mask(s))[0]
    bids = [mask[lay.order(STONE, 0, p)] for p in range(env.P)]
    assert bids == [p < 5 for p in range(env.P)]  # coin 10 allows all; own ask caps at 4


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_taxes_rates_and_lump_sum(small):
    env, params, step = small
    s = _state(env, params, [(0, 0), (0, 2), (0, 4)])
    level = 10  # action 11 -> level 10 -> 50% in every bracket
    s, ts = step(s, _act(env, [0, 0, 0], planner=level + 1), _draws(env))
    np.testing.assert_allclose(np.asarray(s.rates), 0.5)
    s = s.replace(coin=jnp.asarray([40.0, 10.0, 10.0]))  # citizen 0 earned 30 this period
    for _ in range(4):
        s, ts = step(s, _act(env, [0, 0, 0]), _draws(env))
    np.testing.assert_allclose(float(ts.info["tax_revenue"]), 15.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(s.coin), [30.0, 15.0, 15.0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(s.last_coin), [30.0, 15.0, 15.0], rtol=1e-6)
    # the cap: rate_max 0.2 caps level 20 (100%)
    p = params.replace(rate_max=jnp.asarray(0.2, jnp.float32))
    s2, _ = env.step_with_draws(s, _act(env, [0, 0, 0], planner=21), p, _draws(env))
    np.testing.assert_allclose(np.asarray(s2.rates), 0.2)


@pytest.fixture(scope="module")
def rollout():
    """Random legal play of 8 maps x 4 citizens for 300 steps, taxes every 25 steps."""
    env = GTB(4, horizon=300, tax_period=25)
    params = env.default_params()

    def one(key):
        s, ts = env.reset(key, params)

        def body(c, k):
            s, ts = c
            k1, k2, k3 = jax.random.split(k, 3)
            a = random_actions(env, k1, ts)
            a["planner"] = jax.random.randint(k3, (1, env.B), 0, env.L + 1)
            s2, ts2 = env.step(k2, s, a, params)
            return (s2, ts2), (s, s2, ts2.info, ts2.reward)

        return jax.lax.scan(body, (s, ts), jax.random.split(key, 300))[1]

    return env, jax.jit(jax.vmap(one))(jax.random.split(jax.random.PRNGKey(3), 8))


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_conservation_on_random_rollouts(rollout):
    env, (s0, s1, info, reward) = rollout
    tot = lambda s: s.coin + s.escrow_coin
    goods = lambda s: s.goods + s.escrow_goods
    d_coin = np.asarray(jnp.sum(tot(s1) - tot(s0), -1))
    built = np.asarray(jnp.sum((s1.house >= 0) & (s0.house < 0), (-1, -2)))
    new_house = (s1.house >= 0) & (s0.house < 0)  # [maps, T, H, W]
    owner = jnp.where(new_house, s1.house, 0)
    paid = jnp.take_along_axis(s0.build_payment, owner.reshape(*owner.shape[:2], -1), -1)
    payments = np.asarray(jnp.sum(jnp.where(new_house.reshape(paid.shape), paid, 0.0), -1))
    np.testing.assert_allclose(d_coin, payments, atol=2e-3)  # trades and taxes move coin, houses create it
    d_goods = np.asarray(jnp.sum(goods(s1) - goods(s0), 2))  # [maps, T, R]
    np.testing.assert_array_equal(d_goods, np.asarray(info["gathered"]) - built[..., None])
    np.testing.assert_array_equal(built, np.asarray(info["builds"]))
    assert built.sum() > 0 and np.asarray(info["trades"]).sum() > 0 and np.asarray(info["tax_revenue"]).sum() > 0
    assert int(np.asarray(info["num_illegal"]).sum()) == 0
    assert np.all(np.asarray(s1.escrow_coin) >= -1e-4) and np.all(np.asarray(s1.coin) >= -1e-4)
    # escrow equals the open bids' prices; open orders per resource within the limit
    bids = np.where(np.asarray(s1.book.open) & (np.asarray(s1.book.side) == 0), np.asarray(s1.book.level), 0)
    np.testing.assert_allclose(bids.sum(-1), np.asarray(s1.escrow_coin), atol=1e-4)
    # no two citizens on a tile, nobody on water or another's house
    loc = np.asarray(s1.loc)
    cells = loc[..., 0] * env.width + loc[..., 1]
    assert all(len(set(c)) == env.N for c in cells.reshape(-1, env.N))
    assert not np.asarray(env.water)[loc[..., 0], loc[..., 1]].any()
    owner = np.take_along_axis(np.asarray(s1.house).reshape(*cells.shape[:2], -1), cells, -1)
    assert np.all((owner < 0) | (owner == np.arange(env.N)))
    # rewards: changes of utility and of equality x productivity
    np.testing.assert_allclose(np.asarray(reward["citizen"]), np.asarray(s1.utility - s0.utility), atol=1e-5)
    np.testing.assert_allclose(np.asarray(reward["planner"])[..., 0], np.asarray(s1.swf - s0.swf), atol=1e-5)


@pytest.mark.slow  # (10-25 s: the default suite keeps its 10 minutes)
def test_registered_and_renders():
    env = jaxagents.make("gtb")
    assert env.roles["citizen"].action_space.n == 50 and list(env.roles["planner"].action_space.nvec) == [22] * 7
    s, ts = env.reset(jax.random.PRNGKey(0))
    np.testing.assert_allclose(np.sort(np.asarray(s.build_payment)), layouts.expected_ranked_multipliers(4, 3.0) * 10,
                               rtol=1e-5)
    assert sorted(map(tuple, np.asarray(s.loc).tolist())) == [(0, 0), (0, 24), (24, 0), (24, 24)]
    img = env.render(s)
    assert img.shape == (300, 300, 3) and img.dtype == np.uint8 and len(np.unique(img.reshape(-1, 3), axis=0)) > 5


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_many_citizens_on_a_generated_map():
    env = GTB(300, horizon=5)
    assert env.placement == "random" and env.height >= 200
    s, ts = jax.jit(env.reset)(jax.random.PRNGKey(1))
    loc = np.asarray(s.loc)
    assert len({tuple(x) for x in loc}) == 300 and not np.asarray(env.water)[loc[:, 0], loc[:, 1]].any()
    assert ts.obs["citizen"].shape == (300, env.roles["citizen"].observation_space.shape[0])


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_bad_params_and_arguments_are_named():
    env = GTB(4, horizon=10)
    p = env.default_params()
    for field, value, msg in (("regen_prob", 2.0, "params.regen_prob must be a finite scalar in"),
                              ("rate_max", -0.1, "params.rate_max"),
                              ("bracket_cutoffs", jnp.asarray([1.0, 2, 3, 4, 5, 6, 7]), "start at 0"),
                              ("schedule", jnp.asarray([0, 1, 2, 3, 4, 5, 21]), "levels 0..20"),
                              ("schedule", jnp.asarray([-3, 0, 0, 0, 0, 0, 0]), "-2 \\(random\\)"),
                              ("schedule", jnp.asarray([0, 0]), "schedule must be i32\\[7\\]")):
        with pytest.raises(ValueError, match=msg):
            env.validate_params(p.replace(**{field: jnp.asarray(value)}))
    with pytest.raises(ValueError, match="placement must be"):
        GTB(4, placement="corner")
    with pytest.raises(ValueError, match="land tiles for num_citizens=40"):
        GTB(40, layout="WS\n@ ", placement="random")


@pytest.mark.heavy  # ~20 s: the default suite's 10 minutes
def test_fixed_and_random_schedules_override_the_planner(small):
    env, params, step = small  # 3 citizens, 7 brackets, 21 levels
    fixed = params.replace(schedule=jnp.asarray([2, 4, 6, 8, 10, 12, 20], jnp.int32))
    s = jax.jit(env.reset)(jax.random.PRNGKey(0), fixed)[0]
    np.testing.assert_allclose(np.asarray(s.rates), [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.0], rtol=1e-6)
    for _ in range(6):  # across a period start: the planner's action (level 0 everywhere) is ignored
        s, ts = env.step_with_draws(s, _act(env, [0, 0, 0], planner=1), fixed, _draws(env))
        np.testing.assert_allclose(np.asarray(s.rates), [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.0], rtol=1e-6)
        assert not bool(ts.active["planner"][0])  # nobody to train: the planner never acts
    capped = fixed.replace(rate_max=jnp.float32(0.25))  # the tax cap still applies (tax annealing)
    s, _ = env.step_with_draws(s, _act(env, [0, 0, 0]), capped, _draws(env))
    np.testing.assert_allclose(np.asarray(s.rates), [0.1, 0.2, 0.25, 0.25, 0.25, 0.25, 0.25], rtol=1e-6)
    # mixed: bracket 0 is the planner's, the rest fixed
    mixed = params.replace(schedule=jnp.asarray([-1, 0, 0, 0, 0, 0, 0], jnp.int32))
    s, ts = jax.jit(env.reset)(jax.random.PRNGKey(0), mixed)
    assert bool(ts.active["planner"][0])
    s, _ = env.step_with_draws(s, _act(env, [0, 0, 0], planner=11), mixed, _draws(env))
    np.testing.assert_allclose(np.asarray(s.rates), [0.5, 0, 0, 0, 0, 0, 0], atol=1e-6)
    # random: a level per bracket drawn at reset, fixed for the episode
    rand = params.replace(schedule=jnp.full((7,), -2, jnp.int32))
    drawn = np.asarray(jax.vmap(lambda k: env.reset(k, rand)[0].schedule)(jax.random.split(jax.random.PRNGKey(1), 200)))
    assert drawn.min() == 0 and drawn.max() == 20 and len({tuple(r) for r in drawn}) == 200
    assert abs(drawn.mean() - 10) < 0.5
