"""Leduc hold'em against OpenSpiel's ``leduc_poker``: random playouts from every deal,
recorded in one jitted, vmapped scan and replayed in OpenSpiel on the host."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents_environments.games.leduc import DEALS, ROLES, LeducPoker

GAMES = 2400  # 20 random playouts from each of the 120 deals
STEPS = 9  # the longest game has 8 actions; the extra step checks that a finished game stays put
NAMES = LeducPoker.infostate_names()


@pytest.fixture(scope="module")
def env():
    return LeducPoker()


@pytest.fixture(scope="module")
def playouts(env):
    def play(deal, key):
        state, ts = env.reset_from_deal(deal)

        def body(carry, k):
            state, ts = carry
            acts = jaxagents.random_actions(env, k, ts)
            new, nts = env.step(k, state, acts)
            mover = jnp.where(ts.active["player_0"][0], acts["player_0"][0], acts["player_1"][0])
            return (new, nts), (ts, mover, nts)

        return jax.lax.scan(body, (state, ts), jax.random.split(key, STEPS))[1]

    deals = DEALS[np.arange(GAMES) % len(DEALS)]
    keys = jax.random.split(jax.random.key(0), GAMES)
    return deals, jax.device_get(jax.jit(jax.vmap(play))(jnp.asarray(deals), keys))


def test_random_playouts_match_openspiel(playouts):
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("leduc_poker")
    deals, (before, moves, after) = playouts
    for g in range(GAMES):
        s = game.new_initial_state()
        s.apply_action(int(deals[g, 0]))
        s.apply_action(int(deals[g, 1]))
        for t in range(STEPS):
            if s.is_terminal():
                assert before.terminated[g, t] and after.terminated[g, t]
                assert after.reward["player_0"][g, t, 0] == 0 == after.reward["player_1"][g, t, 0]
                assert not after.info["illegal_action"][g, t]
                continue
            if s.is_chance_node():  # round 1 is over: our env dealt the public card up front
                s.apply_action(int(deals[g, 2]))
            mover = s.current_player()
            legal = np.zeros(3, bool)
            legal[s.legal_actions()] = True
            for p, role in enumerate(ROLES):
                assert before.active[role][g, t, 0] == (p == mover)
                np.testing.assert_array_equal(before.action_mask[role][g, t, 0], legal)
                np.testing.assert_array_equal(before.obs[role][g, t, 0], s.information_state_tensor(p))
                ident = before.info["infostate_id"][g, t, p]
                if p == mover:
                    assert NAMES[ident] == s.information_state_string(p)
                else:
                    assert ident == -1
            s.apply_action(int(moves[g, t]))
            returns = s.returns() if s.is_terminal() else [0.0, 0.0]
            for p, role in enumerate(ROLES):
                assert after.reward[role][g, t, 0] == returns[p]
                if s.is_terminal():
                    np.testing.assert_array_equal(after.obs[role][g, t, 0], s.information_state_tensor(p))
            assert after.terminated[g, t] == s.is_terminal() and not after.truncated[g, t]
        assert s.is_terminal()
    assert not after.info["illegal_action"].any()


def test_playouts_cover_the_game(playouts):
    """Random play reaches both rounds, folds and showdowns, capped raises, ties."""
    deals, (before, moves, after) = playouts
    ends = after.terminated & ~before.terminated
    final = after.reward["player_0"][..., 0][ends]
    assert set(np.unique(np.abs(final))) >= {0, 1, 3, 5, 7, 9, 11, 13}  # ties and every pot size
    ids = before.info["infostate_id"].max(-1)[~before.terminated]
    assert len(np.unique(ids)) > 700  # of 936 decision information states
    assert np.any(before.action_mask["player_0"][..., 2] == False)  # the raise cap binds  # noqa: E712


def test_reset_deals_are_uniform(env):
    states, _ = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(1), 24000))
    cards = np.asarray(states.cards)
    assert np.all((cards[:, 0] != cards[:, 1]) & (cards[:, 0] != cards[:, 2]) & (cards[:, 1] != cards[:, 2]))
    counts = np.bincount(cards @ np.array([36, 6, 1]), minlength=216)[DEALS @ np.array([36, 6, 1])]
    assert counts.min() > 140 and counts.max() < 260  # 200 expected per deal


@pytest.fixture(scope="module")
def play_script(env):
    """Scripted games from fixed deals (both roles submit the same action)."""

    def play(deal, script):
        state, ts = env.reset_from_deal(deal)

        def body(carry, a):
            state, ts = carry
            new, nts = env.step(jax.random.key(0), state, {r: a[None] for r in ROLES})
            return (new, nts), (new, nts)

        return jax.lax.scan(body, (state, ts), script)[1]

    return jax.jit(jax.vmap(play))


def test_illegal_actions_are_calls(play_script):
    """Folding with nothing to call, raising past the cap and out-of-range actions are
    played as Call and flagged; everything else about the game is unchanged."""
    deal = np.array([[4, 0, 1]] * 4, np.int32)  # player 0: K, player 1: J, public J
    scripts = np.array(
        [
            [0, 1, 1, 1, 1, 1],  # fold with no bet (-> check), then checks to a showdown
            [1, 1, 1, 1, 1, 1],  # the same, legally
            [2, 2, 2, 1, 7, -3],  # a third raise (-> call); out of range in round 2 (-> checks)
            [2, 2, 1, 1, 1, 1],  # the same, legally
        ],
        np.int32,
    )
    states, ts = jax.device_get(play_script(jnp.asarray(deal), jnp.asarray(scripts)))
    for bad, good in ((0, 1), (2, 3)):
        for leaf in jax.tree_util.tree_leaves(states):
            np.testing.assert_array_equal(leaf[bad], leaf[good])
        np.testing.assert_array_equal(ts.reward["player_0"][bad], ts.reward["player_0"][good])
    np.testing.assert_array_equal(ts.info["illegal_action"][0], [1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(ts.info["illegal_action"][2], [0, 0, 1, 0, 1, 0])  # the game ended at step 5
    assert not ts.info["illegal_action"][[1, 3]].any()
    # player 1 pairs the public jack: it wins the antes (1) and, after rrc, the raises (1 + 2 + 2)
    assert ts.reward["player_0"][0].sum() == -1 and ts.reward["player_0"][3].sum() == -5
    assert ts.terminated[0, 3] and ts.terminated[3, 4] and ts.terminated[2, 4]


def test_fold_after_a_raise_pays_the_folder_contribution(play_script):
    # four copies so that the compiled script player is reused
    deal = jnp.asarray([[0, 5, 2]] * 4, jnp.int32)
    states, ts = jax.device_get(play_script(deal, jnp.asarray([[1, 2, 2, 0, 1, 1]] * 4, jnp.int32)))
    # check, raise (p1: 3 in), re-raise (p0: 5 in), p1 folds and loses its 3
    assert ts.terminated[0, 3] and ts.reward["player_0"][0, 3, 0] == 3 and ts.reward["player_1"][0, 3, 0] == -3
    assert ts.reward["player_0"][0, 4:].sum() == 0  # a finished game pays nothing more
