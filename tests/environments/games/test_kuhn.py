"""Kuhn poker against OpenSpiel's ``kuhn_poker``: every deal x every betting sequence,
and random multi-hand playouts recorded in one jitted, vmapped scan and replayed in
OpenSpiel hand by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents_environments.games.kuhn import DEALS, HISTORIES, ROLES, KuhnParams, KuhnPoker

SEQUENCES = ("pp", "pbp", "pbb", "bp", "bb")  # every complete hand
HANDS = 5  # SPIRAL's multi-hand variant
GAMES = 1000
NAMES = KuhnPoker.infostate_names()


@pytest.fixture(scope="module")
def env():
    return KuhnPoker()


@pytest.fixture(scope="module")
def play_script(env):
    """``play_script(deals, scripts)``: play fixed action scripts (both roles submit the
    same action; only the mover's counts) from fixed deals, in one compiled program
    (inputs padded to 30 games x 4 steps so every test reuses it). Returns (states
    before, steps before, steps after)."""

    def play(deal, script):
        state, ts = env.reset_from_deal(deal)

        def body(carry, a):
            state, ts = carry
            new, nts = env.step(jax.random.key(0), state, {r: a[None] for r in ROLES})
            return (new, nts), (state, ts, nts)

        return jax.lax.scan(body, (state, ts), script)[1]

    compiled = jax.jit(jax.vmap(play))

    def run(deals, scripts):
        deals, scripts = np.asarray(deals, np.int32), np.asarray(scripts, np.int32)
        n, t = scripts.shape
        pad_d = np.zeros((30, 2), np.int32) + [0, 1]
        pad_s = np.zeros((30, 4), np.int32)
        pad_d[:n], pad_s[:n, :t] = deals, scripts
        out = jax.device_get(compiled(pad_d, pad_s))
        return jax.tree_util.tree_map(lambda x: x[:n, :t], out)

    return run


@pytest.fixture(scope="module")
def exhaustive(play_script):
    """Every deal x every complete betting sequence, plus one ignored extra step."""
    deals, scripts, names = [], [], []
    for d in DEALS:
        for seq in SEQUENCES:
            acts = [0 if c == "p" else 1 for c in seq]
            deals.append(d)
            scripts.append(acts + [0] * (4 - len(acts)))
            names.append(seq)
    return np.asarray(deals), np.asarray(scripts, np.int32), names, play_script(deals, scripts)


def test_every_deal_and_sequence_matches_openspiel(exhaustive):
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("kuhn_poker")
    deals, scripts, seqs, (states, before, after) = exhaustive
    for g, (deal, seq) in enumerate(zip(deals, seqs)):
        s = game.new_initial_state()
        s.apply_action(int(deal[0]))
        s.apply_action(int(deal[1]))
        for t in range(scripts.shape[1]):
            if s.is_terminal():
                # a finished game stays finished, pays nothing and nobody is active
                assert after.terminated[g, t] and before.terminated[g, t]
                assert after.reward["player_0"][g, t, 0] == 0 == after.reward["player_1"][g, t, 0]
                assert not before.active["player_0"][g, t, 0] and not before.active["player_1"][g, t, 0]
                continue
            player = s.current_player()
            for p, role in enumerate(ROLES):
                assert before.active[role][g, t, 0] == (p == player)
                np.testing.assert_array_equal(before.obs[role][g, t, 0], s.information_state_tensor(p))
                assert before.action_mask[role][g, t, 0].all()  # both actions always legal
                assert s.legal_actions() == [0, 1]
                ident = before.info["infostate_id"][g, t, p]
                if p == player:
                    assert NAMES[ident] == s.information_state_string(p)
                else:
                    assert ident == -1
            s.apply_action(int(scripts[g, t]))
            returns = s.returns() if s.is_terminal() else [0.0, 0.0]
            for p, role in enumerate(ROLES):
                assert after.reward[role][g, t, 0] == returns[p]
                # the terminal observation too equals OpenSpiel's
                np.testing.assert_array_equal(after.obs[role][g, t, 0], s.information_state_tensor(p))
            assert after.terminated[g, t] == s.is_terminal()
            assert not after.truncated[g, t]
        assert s.is_terminal() and HISTORIES[states.node[g, -1]] == seq


def test_payoff_table(exhaustive):
    """The net chips of the rules table, for player 0 with the higher and the lower card."""
    deals, _, seqs, (_, _, after) = exhaustive
    total = after.reward["player_0"][..., 0].sum(1)
    expected = {"pp": 1, "pbp": -1, "pbb": 2, "bp": 1, "bb": 2}
    for deal, seq, r in zip(deals, seqs, total):
        sign = 1 if deal[0] > deal[1] else -1
        want = expected[seq] * (sign if seq in ("pp", "pbb", "bb") else 1)
        assert r == want
    np.testing.assert_array_equal(total, -after.reward["player_1"][..., 0].sum(1))


@pytest.fixture(scope="module")
def multi_hand():
    """GAMES random episodes of HANDS hands (up to 3 actions per hand)."""
    env = KuhnPoker(num_hands=HANDS)

    def play(key):
        k0, k1 = jax.random.split(key)
        state, ts = env.reset(k0)

        def body(carry, k):
            state, ts = carry
            acts = jaxagents.random_actions(env, k, ts)
            new, nts = env.step(k, state, acts)
            mover = jnp.where(ts.active["player_0"][0], acts["player_0"][0], acts["player_1"][0])
            return (new, nts), (state, ts, mover, nts)

        return jax.lax.scan(body, (state, ts), jax.random.split(k1, 3 * HANDS + 1))[1]

    return jax.device_get(jax.jit(jax.vmap(play))(jax.random.split(jax.random.key(0), GAMES)))


def test_multi_hand_playouts_match_openspiel(multi_hand):
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("kuhn_poker")
    states, before, moves, after = multi_hand
    steps = moves.shape[1]
    for g in range(GAMES):
        s, hands_done, total = None, 0, np.zeros(2)
        for t in range(steps):
            if before.terminated[g, t]:
                assert after.terminated[g, t] and after.reward["player_0"][g, t, 0] == 0
                continue
            hand = before.info["hand"][g, t]
            assert hand == hands_done
            seats = [(r + hand) % 2 for r in range(2)]  # player_0 opens the even hands
            if s is None:
                s = game.new_initial_state()
                s.apply_action(int(states.cards[g, t, 0]))
                s.apply_action(int(states.cards[g, t, 1]))
            mover = s.current_player()
            for r, role in enumerate(ROLES):
                assert before.active[role][g, t, 0] == (seats[r] == mover)
                np.testing.assert_array_equal(before.obs[role][g, t, 0], s.information_state_tensor(seats[r]))
                ident = before.info["infostate_id"][g, t, r]
                if seats[r] == mover:
                    assert NAMES[ident] == s.information_state_string(mover)
                else:
                    assert ident == -1
            s.apply_action(int(moves[g, t]))
            returns = s.returns() if s.is_terminal() else [0.0, 0.0]
            for r, role in enumerate(ROLES):
                assert after.reward[role][g, t, 0] == returns[seats[r]]
                total[r] += after.reward[role][g, t, 0]
            if s.is_terminal():
                s, hands_done = None, hands_done + 1
            assert after.terminated[g, t] == (hands_done == HANDS)
        assert hands_done == HANDS and total.sum() == 0
    assert not after.info["illegal_action"].any()


def test_multi_hand_deals_are_uniform_and_vary(multi_hand):
    states, before, _, _ = multi_hand
    first = before.info["hand"] == 0
    for hand in (0, HANDS - 1):
        rows = (before.info["hand"] == hand) & ~before.terminated
        t = rows.argmax(1)  # first step of that hand in each game
        cards = states.cards[np.arange(GAMES), t]
        counts = np.bincount(cards[:, 0] * 3 + cards[:, 1], minlength=9)[[1, 2, 3, 5, 6, 7]]
        assert counts.min() > GAMES / 6 * 0.75 and counts.max() < GAMES / 6 * 1.25
    # later hands are not copies of the first one
    last = states.cards[np.arange(GAMES), ((before.info["hand"] == HANDS - 1) & ~before.terminated).argmax(1)]
    assert np.mean(np.all(last == states.cards[:, 0], -1)) < 0.3
    assert first[:, 0].all()


def test_out_of_range_actions_are_passes(play_script):
    """Any action but 0/1 is played as Pass (a check, or a fold facing a bet) and flagged."""
    deal = np.array([[2, 0]] * 3)
    scripts = np.array([[7, 0, 0], [1, -1, 0], [0, 0, 0]], np.int32)  # ~pp, b + fold, pp
    states, before, after = play_script(deal, scripts)
    np.testing.assert_array_equal(after.reward["player_0"][0], after.reward["player_0"][2])
    assert after.info["illegal_action"][0, 0] and not after.info["illegal_action"][2].any()
    assert after.info["illegal_action"][1, 1] and after.terminated[1, 1]
    assert after.reward["player_0"][1, 1, 0] == 1  # player 1 folded to the bet
    # the step after the end is ignored, whatever the action
    assert not after.info["illegal_action"][1, 2] and after.reward["player_0"][1, 2, 0] == 0


def test_constructor_and_params_are_validated(env):
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="num_hands"):
            KuhnPoker(num_hands=bad)
    with pytest.raises(ValueError, match="num_hands"):
        env.validate_params(KuhnParams(num_hands=jnp.asarray(0, jnp.int32)))


def test_num_hands_is_a_vmappable_param(env):
    """A batch of envs with 1, 2 and 3 hands: the episode ends after that many hands."""
    params = KuhnParams(num_hands=jnp.array([1, 2, 3], jnp.int32))

    def episode_length(p, key):
        state, ts = env.reset(key, p)

        def body(carry, k):
            state, ts = carry
            state, nts = env.step(k, state, {r: jnp.array([0]) for r in ROLES}, p)  # always pass
            return (state, nts), nts.terminated

        done = jax.lax.scan(body, (state, ts), jax.random.split(key, 8))[1]
        return jnp.argmax(done) + 1

    lengths = jax.jit(jax.vmap(episode_length))(params, jax.random.split(jax.random.key(0), 3))
    np.testing.assert_array_equal(lengths, [2, 4, 6])  # pass-pass: 2 steps per hand
