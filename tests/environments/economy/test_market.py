"""The market economy: the auction against a loop reference, conservation of coin and
goods (hypothesis), masks against an independent rule check, escrow, expiry, taxes,
rewards, and bad arguments.

One compiled rollout (``run``) serves every environment test: the random legal and
illegal rollouts, every hypothesis example, and the hand-built single steps (it
starts from any state); the rest are small compiles of ``reset``, ``match`` and helpers.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from jaxagents_environments.economy.market import ASK, BID, EMPTY, Market, OrderBook, match, rules
from jaxagents_environments.economy.market.auction import arrival_ranks
from jaxagents_environments.economy.metrics import gini
from jaxagents import random_actions

N, R, K, T = 8, 2, 3, 30
PRICES = (1, 2, 3, 5)
P = len(PRICES)
BRACKETS = (0.0, 10.0, 100.0)
PERIOD, DURATION = 5, 4


@pytest.fixture(scope="module")
def env():
    return Market(num_citizens=N, num_resources=R, max_orders=K, prices=PRICES, brackets=BRACKETS,
                  rate_levels=11, horizon=1000, tax_period=PERIOD, order_duration=DURATION)


@pytest.fixture(scope="module")
def params(env):
    # crafting needs one unit of each resource, so random play crafts often
    return env.default_params().replace(craft_units=jnp.int32(1), order_labour=jnp.float32(0.25))


@pytest.fixture(scope="module")
def state0(env, params):
    return jax.device_get(jax.jit(env.reset)(jax.random.key(5), params)[0])


@pytest.fixture(scope="module")
def run(env, params):
    """``run(key, state, raw_citizen[T, N], raw_gov[T, B], use_raw)``: T recorded steps
    from ``state``, with the given (possibly illegal) actions or, when ``use_raw`` is
    False, random legal ones. Returns (state before, mask before, actions, state after,
    time step after), each with a leading T axis. The one compiled program of the
    module's env tests (hand-built single steps read index 0)."""

    def rollout(key, state, raw_c, raw_g, use_raw):
        def body(carry, xs):
            state, mask = carry
            k, rc, rg = xs
            ka, ks = jax.random.split(k)
            legal = random_actions(env, ka, SimpleNamespace(action_mask={"citizen": mask}))
            acts = {"citizen": jnp.where(use_raw, rc, legal["citizen"]),
                    "government": jnp.where(use_raw, rg, legal["government"][0])[None]}
            new, nts = env.step(ks, state, acts, params)
            nts = nts.replace(info=dict(nts.info, global_obs=env.global_obs(new, params)))
            return (new, nts.action_mask["citizen"]), (state, mask, acts, new, nts)

        mask = env.action_mask(state, params)
        return jax.lax.scan(body, (state, mask), (jax.random.split(key, T), raw_c, raw_g))[1]

    f = jax.jit(rollout)

    def call(key, state, rc, rg, use_raw):
        state = jax.tree_util.tree_map(np.asarray, state)  # host arrays: one cache entry
        out = jax.device_get(f(key, state, np.asarray(rc), np.asarray(rg), use_raw))
        assert f._cache_size() == 1, "a test changed a state dtype or shape: recompiled"
        return out

    return call


@pytest.fixture(scope="module")
def legal_rollout(env, run, state0):
    zc, zg = np.zeros((T, N), np.int32), np.zeros((T, env.B), np.int32)
    return run(jax.random.key(0), state0, zc, zg, False)


@pytest.fixture(scope="module")
def illegal_rollout(env, run, state0):
    rng = np.random.default_rng(1)
    rc = rng.integers(-2, env.layout.n + 2, (T, N)).astype(np.int32)
    rg = rng.integers(-1, env.L + 1, (T, env.B)).astype(np.int32)
    return run(jax.random.key(1), state0, rc, rg, True)


@pytest.fixture(scope="module")
def step(env, run):
    """One step from a hand-built state (the rollout's first step; the rest are no-ops)."""

    def one(key, state, acts):
        rc = np.zeros((T, N), np.int32)
        rg = np.zeros((T, env.B), np.int32)
        rc[0], rg[0] = acts["citizen"], acts["government"][0]
        before, mask, _, after, ts = run(key, state, rc, rg, True)
        return jax.tree_util.tree_map(lambda x: x[0], (after, ts))

    return one


# ------------------------------------------------------------------ reference code
def reference_match(level, resource, side, time, rank, num_resources):
    """The AI Economist's loop: while the best bid crosses the best ask, trade them at
    the earlier order's price and remove both (price-time priority)."""
    level, resource, side, time, rank = (np.ravel(x) for x in (level, resource, side, time, rank))
    fill = np.full(level.shape, EMPTY)
    for q in range(num_resources):
        book = [i for i in range(level.size) if level[i] >= 0 and resource[i] == q]
        bids = sorted((i for i in book if side[i] == BID), key=lambda i: (-level[i], time[i], rank[i]))
        asks = sorted((i for i in book if side[i] == ASK), key=lambda i: (level[i], time[i], rank[i]))
        while bids and asks and level[bids[0]] >= level[asks[0]]:
            b, a = bids.pop(0), asks.pop(0)
            fill[b] = fill[a] = level[b] if (time[b], rank[b]) < (time[a], rank[a]) else level[a]
    return fill


def reference_mask(coin, goods, level, resource, side, craft_units):
    """Legal actions, one citizen at a time, straight from the rules."""
    n_act = 2 + R + 2 * R * P
    mask = np.zeros((coin.shape[0], n_act), bool)
    for i in range(coin.shape[0]):
        mask[i, : 1 + R] = True
        mask[i, 1 + R] = sum(goods[i] >= craft_units) >= 2
        opened = level[i] >= 0
        for q in range(R):
            my_bids = [level[i, s] for s in range(K) if opened[s] and resource[i, s] == q and side[i, s] == BID]
            my_asks = [level[i, s] for s in range(K) if opened[s] and resource[i, s] == q and side[i, s] == ASK]
            for j in range(P):
                room = opened.sum() < K
                mask[i, 2 + R + (2 * q) * P + j] = room and coin[i] >= PRICES[j] and all(j < a for a in my_asks)
                mask[i, 2 + R + (2 * q + 1) * P + j] = room and goods[i, q] >= 1 and all(j > b for b in my_bids)
    return mask


def escrow(level, resource, side):
    """Coin ``[..., N]`` and goods ``[..., N, R]`` in escrow, from the order slots."""
    opened = level >= 0
    price = np.asarray(PRICES)[np.maximum(level, 0)]
    coin = np.where(opened & (side == BID), price, 0).sum(-1)
    goods = np.stack([(opened & (side == ASK) & (resource == q)).sum(-1) for q in range(R)], -1)
    return coin, goods


def reference_tax(z, cutoffs, rates):
    z = max(z, 0.0)
    edges = list(cutoffs) + [np.inf]
    return sum(r * min(max(z - lo, 0.0), hi - lo) for r, lo, hi in zip(rates, edges[:-1], edges[1:]))


# ------------------------------------------------------------------ the auction
def book_of(orders, n=6, k=2):
    """``orders``: (citizen, slot, resource, side, level, time, rank) tuples."""
    b = {f: np.zeros((n, k), np.int32) for f in ("level", "resource", "side", "time", "rank")}
    b["level"][:] = EMPTY
    for i, s, q, sd, lv, t, rk in orders:
        for f, v in zip(("resource", "side", "level", "time", "rank"), (q, sd, lv, t, rk)):
            b[f][i, s] = v
    return OrderBook(**{f: jnp.asarray(v) for f, v in b.items()})


def test_hand_built_book():
    # resource 0, resting (time 0): ask c0 @3, ask c1 @1, bid c2 @0;
    # new (time 1): bid c3 @4 (arrival 0), bid c4 @2 (arrival 1), ask c5 @0 (arrival 2).
    # Ranked bids 4, 2, 0 vs asks 0, 1, 3: pair 1 (c3, c5) crosses, the bid came first: price level 4;
    # pair 2 (c4, c1) crosses, the resting ask came first: level 1; pair 3 (0 vs 3) does not.
    # resource 1: two resting asks @2 (c1 arrival 5, c0 arrival 3) and c3's ask @3 (arrival 0);
    # one new bid @3 from c2: c0's ask (same price, earlier arrival) trades, at its price (2);
    # c3's earlier ask at a worse price does not jump the queue.
    orders = [(0, 0, 0, ASK, 3, 0, 0), (1, 0, 0, ASK, 1, 0, 1), (2, 0, 0, BID, 0, 0, 2),
              (3, 0, 0, BID, 4, 1, 0), (4, 0, 0, BID, 2, 1, 1), (5, 0, 0, ASK, 0, 1, 2),
              (1, 1, 1, ASK, 2, 0, 5), (0, 1, 1, ASK, 2, 0, 3), (3, 1, 1, ASK, 3, 0, 0),
              (2, 1, 1, BID, 3, 1, 4)]
    fill = np.asarray(jax.jit(match, static_argnums=(1, 2, 3))(book_of(orders), 2, 5, 8))
    want = np.full((6, 2), EMPTY)
    want[3, 0] = want[5, 0] = 4
    want[4, 0] = want[1, 0] = 1
    want[2, 1] = want[0, 1] = 2
    np.testing.assert_array_equal(fill, want)
    # time beats arrival rank: the same two asks, but c1's placed a step earlier, fills first
    orders[6] = (1, 1, 1, ASK, 2, -1, 5)
    fill = np.asarray(jax.jit(match, static_argnums=(1, 2, 3))(book_of(orders), 2, 5, 8))
    assert fill[1, 1] == 2 and fill[0, 1] == EMPTY


def test_match_equals_loop_reference_on_random_books():
    rng = np.random.default_rng(0)
    n_books, n, k, r, p = 300, 10, 3, 3, 4
    open_frac = rng.uniform(0.2, 1.0, (n_books, 1, 1))
    level = np.where(rng.uniform(size=(n_books, n, k)) < open_frac, rng.integers(0, p, (n_books, n, k)), EMPTY)
    fields = dict(level=level, resource=rng.integers(0, r, level.shape), side=rng.integers(0, 2, level.shape),
                  time=rng.integers(0, 3, level.shape),
                  rank=np.stack([rng.permutation(n * k).reshape(n, k) for _ in range(n_books)]))
    book = OrderBook(**{f: jnp.asarray(v, jnp.int32) for f, v in fields.items()})
    fills = np.asarray(jax.jit(jax.vmap(lambda b: match(b, r, p, 32)))(book))
    traded = 0
    for b in range(n_books):
        want = reference_match(*(fields[f][b] for f in ("level", "resource", "side", "time", "rank")), r)
        np.testing.assert_array_equal(fills[b].ravel(), want, err_msg=f"book {b}")
        traded += (want >= 0).sum()
    assert traded > 1000  # the books really trade


def test_arrival_ranks_are_a_fresh_random_permutation():
    r = np.asarray(jax.jit(arrival_ranks, static_argnums=1)(jax.random.key(1), 1000))
    assert len(set(r.tolist())) == 1000 and r.min() >= 0 and r.max() < 1024
    # five citizens (3 bits): distinct ranks, each citizen first with probability 1/5
    ranks = np.asarray(jax.jit(jax.vmap(lambda k: arrival_ranks(k, 5)))(jax.random.split(jax.random.key(0), 2000)))
    assert all(len(set(row)) == 5 for row in ranks.tolist()) and ranks.max() < 8
    first = np.bincount(ranks.argmin(-1), minlength=5) / 2000
    np.testing.assert_allclose(first, 0.2, atol=0.04)
    # and the ordering of a pair is a coin flip
    assert 0.45 < np.mean(ranks[:, 0] < ranks[:, 1]) < 0.55


# ------------------------------------------------------------------ conservation
def _check_accounting(env, roll):
    before, mask, acts, after, ts = roll
    tot = lambda s: (s.coin.sum(-1) + escrow(s.book.level, s.book.resource, s.book.side)[0].sum(-1) + s.treasury)
    goods = lambda s: s.goods.sum(-2) + escrow(s.book.level, s.book.resource, s.book.side)[1].sum(-2)
    info = ts.info
    np.testing.assert_array_equal(tot(after) - tot(before), info["coin_crafted"])
    np.testing.assert_array_equal(goods(after) - goods(before), info["gathered"] - info["consumed"])
    np.testing.assert_array_equal(info["tax_revenue"] + before.treasury, N * info["rebate"] + after.treasury)
    assert np.all(after.goods >= 0) and np.all(after.treasury >= 0) and np.all(after.treasury < N)
    # the escrow the env keeps equals what its open orders lock
    e_coin, e_goods = escrow(after.book.level, after.book.resource, after.book.side)
    np.testing.assert_array_equal(after.escrow_coin, e_coin)
    np.testing.assert_array_equal(after.escrow_goods, e_goods)
    total = after.coin + escrow(after.book.level, after.book.resource, after.book.side)[0]
    assert np.all(total >= 0), "total coin went negative"
    # only a tax day can create (or deepen) a debt in inventory: orders are paid from coin at hand
    no_tax = (after.t % PERIOD != 0)[:, None]
    assert np.all((after.coin >= np.minimum(before.coin, 0)) | ~no_tax)
    # escrow never exceeds what was placed: every open slot is a valid order
    opened = after.book.level >= 0
    assert np.all(after.book.level[opened] < P) and np.all(after.book.resource[opened] < R)
    # the resting book is uncrossed: best bid < best ask per resource
    lv = np.where(opened, after.book.level, -1)
    for q in range(R):
        is_q = opened & (after.book.resource == q)
        best_bid = np.where(is_q & (after.book.side == BID), lv, -1).max((-2, -1))
        best_ask = np.where(is_q & (after.book.side == ASK), lv, P).min((-2, -1))
        assert np.all(best_bid < best_ask)


def test_accounting_holds_under_random_legal_play(env, legal_rollout):
    _check_accounting(env, legal_rollout)
    info = legal_rollout[4].info
    assert legal_rollout[3].volume.sum() > 0
    assert info["coin_crafted"].sum() > 0 and info["tax_revenue"].sum() > 0


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1),
       citizen=hnp.arrays(np.int32, (T, N), elements=st.integers(-2, 2 + R + 2 * R * P + 1)),
       government=hnp.arrays(np.int32, (T, len(BRACKETS)), elements=st.integers(-1, 11)))
def test_coin_and_goods_are_conserved_by_any_action_sequence(env, run, state0, seed, citizen, government):
    roll = run(jax.random.key(seed), state0, citizen, government, True)
    _check_accounting(env, roll)


# ------------------------------------------------------------------ masks and illegal actions
def test_masks_match_the_rules_and_never_allow_unaffordable_orders(env, params, legal_rollout, illegal_rollout):
    for roll in (legal_rollout, illegal_rollout):
        before, mask, acts, after, ts = roll
        for t in range(T):
            b = before.book
            want = reference_mask(before.coin[t], before.goods[t], b.level[t], b.resource[t], b.side[t], 1)
            np.testing.assert_array_equal(mask[t], want, err_msg=f"step {t}")
        # no bid is ever allowed above the coin in inventory
        bids = mask[..., 2 + R:].reshape(T, N, R, 2, P)[:, :, :, 0]
        assert not np.any(bids & (before.coin[:, :, None, None] < np.asarray(PRICES)))


def test_illegal_actions_are_counted_no_ops(env, params, illegal_rollout, legal_rollout):
    before, mask, acts, after, ts = illegal_rollout
    a = acts["citizen"]
    in_range = (a >= 0) & (a < env.layout.n)
    legal = in_range & np.take_along_axis(mask, np.clip(a, 0, env.layout.n - 1)[..., None], -1)[..., 0]
    assert (~legal).sum() > 50
    np.testing.assert_array_equal(ts.info["num_illegal"], (~legal).sum(-1))
    bad_gov = (acts["government"] < 0) | (acts["government"] >= env.L)
    np.testing.assert_array_equal(ts.info["illegal_action"], (~legal).any(-1) | bad_gov.any((-1, -2)))
    # labour: nothing for no-ops and illegal actions, the action's cost otherwise
    cost = np.zeros(env.layout.n, np.float32)
    cost[1:1 + R], cost[1 + R], cost[2 + R:] = 1.0, 1.0, 0.25
    want = np.where(legal, cost[np.clip(a, 0, env.layout.n - 1)], 0.0)
    np.testing.assert_allclose(after.labour - before.labour, want, atol=1e-5)
    assert not legal_rollout[4].info["illegal_action"].any()


# ------------------------------------------------------------------ gather and craft
def test_gather_and_craft_yields(env, legal_rollout):
    before, mask, acts, after, ts = legal_rollout
    a = acts["citizen"]
    for q in range(R):
        g = a == 1 + q
        got = (after.goods[..., q] - before.goods[..., q])[g]
        # no other action of a gatherer touches its goods except fills of its own bids
        skill = np.broadcast_to(before.gather_skill[..., q], a.shape)[g]
        assert np.all((got >= np.floor(skill)) & (got <= np.floor(skill) + 1 + K))
    assert (a == 1 + R).any() and ts.info["coin_crafted"].sum() > 0


def test_craft_recipe_uses_the_two_largest_inventories():
    goods = jnp.array([[5, 0, 2, 2], [1, 1, 1, 1], [0, 3, 0, 0], [2, 2, 9, 0]])
    can, use = jax.jit(rules.craft_inputs)(goods, 2)
    np.testing.assert_array_equal(can, [True, False, False, True])
    np.testing.assert_array_equal(use, [[1, 0, 1, 0], [1, 1, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0]])


def test_craft_step(env, params, step, state0):
    s = state0.replace(goods=np.array([[2, 1]] * N, np.int32), t=np.int32(1))
    acts = noop(env)
    acts["citizen"][5] = env.layout.craft
    new, ts = step(jax.random.key(0), s, acts)
    np.testing.assert_array_equal(new.goods[5], [1, 0])
    assert new.coin[5] - s.coin[5] == np.floor(np.float32(20.0) * s.craft_skill[5]) == ts.info["coin_crafted"]


# ------------------------------------------------------------------ rewards and the government
def test_rewards_are_utility_and_welfare_changes(env, params, legal_rollout):
    before, mask, acts, after, ts = legal_rollout
    eta, kappa = float(params.eta), float(params.labour_weight)
    total = lambda s: s.coin + escrow(s.book.level, s.book.resource, s.book.side)[0]
    u = lambda s: (np.maximum(total(s), 0).astype(np.float64) ** (1 - eta) - 1) / (1 - eta) - kappa * s.labour
    np.testing.assert_allclose(ts.reward["citizen"], u(after) - u(before), rtol=1e-4, atol=1e-3)
    c = total(after).astype(np.float32)
    swf = (1 - np.asarray(jax.jit(gini)(c))) * c.mean(-1)
    np.testing.assert_allclose(after.swf, swf, rtol=1e-5)
    np.testing.assert_allclose(ts.reward["government"][:, 0], after.swf - before.swf, rtol=1e-4, atol=1e-4)


def test_global_obs_is_the_government_view(env, legal_rollout):
    ts = legal_rollout[4]
    assert ts.info["global_obs"].shape == (T,) + env.global_obs_shape
    np.testing.assert_array_equal(ts.info["global_obs"], ts.obs["government"][:, 0])


def test_government_sets_rates_at_period_starts_only(env, legal_rollout):
    before, mask, acts, after, ts = legal_rollout
    starts = before.t % PERIOD == 0
    np.testing.assert_array_equal(ts.active["government"][:, 0], after.t % PERIOD == 0)
    want = np.where(starts[:, None], acts["government"][:, 0] / (env.L - 1), before.tax_rates)
    np.testing.assert_allclose(after.tax_rates, want, rtol=1e-6)
    assert np.all(ts.info["tax_revenue"][(after.t % PERIOD) != 0] == 0)


# ------------------------------------------------------------------ hand-built steps
def noop(env):
    return {"citizen": np.zeros(N, np.int32), "government": np.zeros((1, env.B), np.int32)}


def with_orders(state, orders, t):
    """Place resting orders (citizen, slot, resource, side, level, time) into ``state``,
    moving their escrow out of the inventories, and set the clock to ``t``."""
    book = {f: np.array(getattr(state.book, f)) for f in ("level", "resource", "side", "time", "rank")}
    coin, goods = np.array(state.coin), np.array(state.goods)
    for n, (i, s, q, sd, lv, tt) in enumerate(orders):
        for f, v in zip(("resource", "side", "level", "time", "rank"), (q, sd, lv, tt, n)):
            book[f][i, s] = v
        if sd == BID:
            coin[i] -= PRICES[lv]
        else:
            goods[i, q] -= 1
    e_coin, e_goods = escrow(book["level"], book["resource"], book["side"])
    return state.replace(book=OrderBook(**book), coin=coin, goods=goods, escrow_coin=e_coin.astype(np.int32),
                         escrow_goods=e_goods.astype(np.int32), t=np.int32(t))


def test_escrow_settlement_of_a_new_bid(env, step, state0):
    s = state0.replace(goods=np.full((N, R), 2, np.int32))
    s = with_orders(s, [(1, 0, 0, ASK, 1, 0), (0, 0, 0, ASK, 3, 0)], t=1)
    acts = noop(env)
    acts["citizen"][4] = env.layout.order(0, BID, 2)  # bid 3 coin; best ask 2 coin
    new, ts = step(jax.random.key(0), s, acts)
    assert new.coin[4] == 15 - 3 + 1 and new.goods[4, 0] == 3  # pays the resting ask's price
    assert new.coin[1] == 15 + 2 and not (new.book.level[1] >= 0).any()
    assert new.book.level[0, 0] == 3 and new.coin[0] == 15  # the 5-coin ask still rests
    np.testing.assert_array_equal(new.volume, [1, 0])
    np.testing.assert_allclose(new.mean_price, [2.0, 0.0])
    # what everybody sees: best bid (none) and ask (5 of 5) of resource 0, its depth, the trade
    pub = ts.obs["citizen"][0, 7 + 5 * R:]
    B = len(BRACKETS)
    best_bid, best_ask = pub[B + 2:B + 2 + R], pub[B + 2 + R:B + 2 + 2 * R]
    depth = pub[B + 2 + 2 * R:B + 2 + 2 * R + 2 * R * P].reshape(2, R, P) * N
    np.testing.assert_allclose(best_bid, [0, 0])
    np.testing.assert_allclose(best_ask, [1.0, 0])
    np.testing.assert_allclose(depth[ASK, 0], [0, 0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(depth.sum(), 1, rtol=1e-6)
    np.testing.assert_allclose(pub[-2 * R:], [1 / N, 0, 2 / 5, 0], rtol=1e-6)
    # citizen 0's own view: no coin in escrow, one unit of resource 0 (goods / 10)
    np.testing.assert_allclose(ts.obs["citizen"][0, [1, 7 + R]], [0.0, 0.1], rtol=1e-6)



def test_two_new_orders_trade_at_the_price_of_the_earlier_arrival(env, step, state0):
    s = state0.replace(goods=np.full((N, R), 2, np.int32), t=np.int32(1))
    acts = noop(env)
    acts["citizen"][2] = env.layout.order(1, BID, 3)  # bid 5
    acts["citizen"][3] = env.layout.order(1, ASK, 0)  # ask 1
    prices = set()
    for seed in range(40):
        new, _ = step(jax.random.key(seed), s, acts)
        assert new.coin[2] + new.coin[3] == 30 and new.goods[2, 1] == 3 and new.goods[3, 1] == 1
        prices.add(int(new.coin[3] - 15))
    assert prices == {1, 5}  # arrival order is random, either may come first


def test_orders_expire_after_duration_rounds_and_return_escrow(env, step, state0):
    s = state0.replace(goods=np.full((N, R), 1, np.int32), t=np.int32(1))
    acts = noop(env)
    acts["citizen"][6] = env.layout.order(0, ASK, P - 1)
    s, _ = step(jax.random.key(0), s, acts)
    assert s.goods[6, 0] == 0 and (s.book.level[6] >= 0).sum() == 1
    for r in range(1, DURATION):
        assert (s.book.level[6] >= 0).sum() == 1, f"expired after {r} rounds"
        s, _ = step(jax.random.key(r), s, noop(env))
    assert (s.book.level[6] >= 0).sum() == 0 and s.goods[6, 0] == 1


def test_tax_day_brackets_rebates_and_treasury(env, step, state0):
    rates = np.array([0.1, 0.3, 0.55], np.float32)
    income = np.array([0, 5, 37, 100, 401, -10, 1000, 55])
    start = np.array([15, 0, 3, 40, 7, 30, 15, 100])
    coin = start + income
    s = state0.replace(coin=coin.astype(np.int32), period_start_coin=start.astype(np.int32),
                       tax_rates=rates, treasury=np.int32(5), t=np.int32(PERIOD - 1))
    acts = noop(env)
    acts["government"][:] = 10  # not a period start: ignored
    new, ts = step(jax.random.key(0), s, acts)
    tax = np.array([np.floor(reference_tax(z, BRACKETS, rates)) for z in income], np.int64)
    pool = tax.sum() + 5
    assert ts.info["tax_revenue"] == tax.sum() and ts.info["rebate"] == pool // N
    np.testing.assert_array_equal(new.coin, coin - tax + pool // N)
    assert new.treasury == pool % N
    np.testing.assert_array_equal(new.period_start_coin, new.coin)
    np.testing.assert_allclose(new.tax_rates, rates)
    # coin locked in bids: citizens 0-3 earned 15, all in escrow. The tax (2 each) is
    # collected in full, the rebate is 13 // 8 = 1: inventory goes to -1, total coin stays >= 0
    s2 = with_orders(s.replace(period_start_coin=np.zeros(N, np.int32)),
                     [(i, k, 0, BID, P - 1, PERIOD - 1) for i in range(4) for k in range(K)], t=PERIOD - 1)
    s2 = s2.replace(coin=np.zeros(N, np.int32))
    new2, ts2 = step(jax.random.key(0), s2, noop(env))
    assert ts2.info["tax_revenue"] == 8 and ts2.info["rebate"] == 1 and new2.treasury == 5
    np.testing.assert_array_equal(new2.coin, [-1] * 4 + [1] * 4)
    np.testing.assert_array_equal(new2.coin + escrow(new2.book.level, new2.book.resource, new2.book.side)[0],
                                  [14] * 4 + [1] * 4)
    # meanwhile bids are masked for the indebted citizens
    mask = ts2.action_mask["citizen"].reshape(N, -1)[:, 2 + R:].reshape(N, R, 2, P)
    assert not mask[:4, :, 0].any()


# ------------------------------------------------------------------ bad arguments
@pytest.mark.parametrize("kwargs, match_", [
    (dict(num_citizens=1), "num_citizens"), (dict(num_resources=1), "num_resources"),
    (dict(max_orders=0), "max_orders"), (dict(rate_levels=1), "rate_levels"), (dict(horizon=0), "horizon"),
    (dict(prices=(3, 2)), "prices"), (dict(prices=(0, 1)), "prices"), (dict(brackets=(5.0, 10.0)), "bracket"),
    (dict(brackets=(0.0, 10.0, 10.0)), "bracket"), (dict(order_duration=0), "order_duration"),
    (dict(num_citizens=2**20, order_duration=200), "order_duration"),
])
def test_bad_constructor_arguments_raise(kwargs, match_):
    with pytest.raises(ValueError, match=match_):
        Market(**kwargs)


@pytest.mark.parametrize("field, value", [
    ("prices", [1, 1, 2, 3]), ("prices", [1, 2, 3]), ("bracket_cutoffs", [0.0, 100.0, 10.0]),
    ("bracket_cutoffs", [1.0, 10.0, 100.0]), ("tax_period", 0), ("horizon", -1), ("order_duration", 0),
    ("starting_coin", -1), ("craft_units", 0), ("gather_labour", -0.1), ("labour_weight", np.nan),
    ("eta", 1.0), ("eta", -0.1), ("max_skill", 0.0), ("skill_sd", -1.0),
])
def test_bad_params_raise_naming_the_field(env, params, field, value):
    dtype = jnp.asarray(getattr(params, field)).dtype
    bad = params.replace(**{field: jnp.asarray(value, dtype)})
    with pytest.raises(ValueError, match=field):
        env.validate_params(bad)
