import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents_environments.games.negotiation import Negotiation


@pytest.fixture(scope="module")
def env():
    return Negotiation()


@pytest.fixture(scope="module")
def step(env):
    return jax.jit(env.step)


def offer(env, give_res, a, b):
    q = env.max_quantity
    return give_res * q * q + (a - 1) * q + (b - 1)


def play(env, step, moves):
    state, ts = env.reset(jax.random.key(0))
    out = []
    for t, m in enumerate(moves):
        acts = {"player_0": jnp.array([m]), "player_1": jnp.array([m])}
        state, ts = step(jax.random.key(t), state, acts)
        out.append(ts)
    return state, out


def test_action_encoding(env):
    assert env.roles["player_0"].action_space.n == 52
    assert env.describe_action(offer(env, 0, 3, 2)) == "offer: give 3 Wood for 2 Gold"
    assert env.describe_action(offer(env, 1, 5, 1)) == "offer: give 5 Gold for 1 Wood"
    assert env.describe_action(env.accept) == "accept" and env.describe_action(env.deny) == "deny"


def test_accepted_trade_and_outcome(env, step):
    # player 0 gives 4 Wood (worth 5 each to it) for 2 Gold (worth 15 each): +10 for it;
    # player 1 gains 4*15 - 2*5 = +50. Then everybody denies until the end: player 1 wins.
    moves = [offer(env, 0, 4, 2), env.accept] + [env.deny] * 8
    state, ts = play(env, step, moves)
    np.testing.assert_array_equal(state.inventory, [[6, 12], [14, 8]])
    np.testing.assert_allclose(ts[-1].info["gain"], [10.0, 50.0])
    assert [bool(t.terminated) for t in ts] == [False] * 9 + [True]
    assert float(ts[-1].reward["player_0"][0]) == -1 and float(ts[-1].reward["player_1"][0]) == 1
    assert all(float(t.reward["player_0"][0]) == 0 for t in ts[:-1])
    # money (resources) is conserved by trades
    np.testing.assert_array_equal(state.inventory.sum(0), [20, 20])


def test_new_offer_replaces_pending_and_deny_withdraws(env, step):
    moves = [offer(env, 0, 1, 1), offer(env, 1, 2, 3)]
    state, ts = play(env, step, moves)
    assert int(state.offerer) == 1
    np.testing.assert_array_equal(state.offer, [[0, 2], [3, 0]])
    # player 0 may now accept (it holds 3 Wood), and player 1 may not accept its own offer
    assert bool(ts[-1].action_mask["player_0"][0, env.accept])
    assert not bool(ts[-1].action_mask["player_1"][0, env.accept])
    state, ts = play(env, step, moves + [env.deny])
    assert int(state.offerer) == -1 and not bool(ts[-1].action_mask["player_1"][0, env.accept])


def test_masks_and_illegal_moves(env, step):
    state, ts = env.reset(jax.random.key(0))
    mask = np.asarray(ts.action_mask["player_0"][0])
    assert not mask[env.accept] and mask[env.deny] and mask[: env.num_offers].all()  # holds 10 >= 5
    # accepting with no offer pending loses at once
    state, ts = play(env, step, [env.accept])
    assert bool(ts[-1].terminated) and bool(ts[-1].info["illegal_action"])
    assert float(ts[-1].reward["player_0"][0]) == -1 and float(ts[-1].reward["player_1"][0]) == 1
    # out of range loses too
    state, ts = play(env, step, [env.deny, 999])
    assert float(ts[-1].reward["player_1"][0]) == -1 and bool(ts[-1].terminated)


def test_cannot_offer_more_than_held(env, step):
    params = env.default_params().replace(start=jnp.array([[2, 10], [10, 10]], jnp.int32))
    state, ts = env.reset(jax.random.key(0), params)
    mask = np.asarray(ts.action_mask["player_0"][0])
    assert mask[offer(env, 0, 2, 1)] and not mask[offer(env, 0, 3, 1)]
    state, ts = env.step(jax.random.key(0), state, {"player_0": jnp.array([offer(env, 0, 3, 1)]),
                                                    "player_1": jnp.array([0])}, params)
    assert bool(ts.info["illegal_action"]) and bool(ts.terminated)


def test_equal_gains_draw_and_params_checked(env, step):
    state, ts = play(env, step, [env.deny] * 10)
    assert bool(ts[-1].terminated) and float(ts[-1].reward["player_0"][0]) == 0
    with pytest.raises(ValueError, match="params.num_turns must be >= 1"):
        env.validate_params(env.default_params().replace(num_turns=jnp.int32(0)))
    with pytest.raises(ValueError, match="params.values"):
        env.validate_params(env.default_params().replace(values=-jnp.ones((2, 2))))
    with pytest.raises(ValueError, match="max_quantity must be a positive int"):
        jaxagents.make("negotiation", max_quantity=0)
