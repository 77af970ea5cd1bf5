"""Hanabi against OpenSpiel's ``hanabi`` (which wraps the Hanabi Learning Environment).

Playouts are recorded in one jitted, vmapped ``lax.scan`` per player count and replayed
in pyspiel on the host with the same cards: legal moves, the player to move, rewards,
termination step, scores and every player's observation vector at every step. Half the
games use a fixed deck (``reset_from_deck``), half are dealt at random by the env; the
order in which the env dealt those is read back from the recorded hands.

The moves come from a "cheating" policy of random strength (uniform over legal moves at
strength 0; at strength 1 it plays playable cards, discards dead ones and otherwise
reveals), so that games end in all three ways: last life lost, deck exhausted, 25 points.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents_environments.games.hanabi import STANDARD_DECK, Hanabi, HanabiState

STEPS = 80  # the longest recorded 2-player game took 74 moves
GAMES = {2: 500, 3: 100, 4: 60, 5: 60}  # the slow test plays many more
SLOW_GAMES = {2: 6000, 3: 1500, 4: 1500, 5: 1500}


def _policy(env, key, state, ts, strength):
    """The mover's action: softmax over legal moves of strength * 12 * preference."""
    H = env.hand_size
    cp = state.current_player
    hand = state.hands[cp]
    rank = hand % 5
    top = state.fireworks[jnp.clip(hand // 5, 0, 4)]
    playable = (hand >= 0) & (top == rank)
    dead = (hand >= 0) & (rank < top)
    pref = jnp.concatenate([
        jnp.where(dead, 0.6, 0.3), jnp.where(playable, 1.0, 0.0), jnp.full(env.num_actions - 2 * H, 0.4)
    ])
    mask = ts.action_mask["player"][cp]
    return jax.random.categorical(key, jnp.where(mask, strength * 12.0 * pref, -jnp.inf)).astype(jnp.int32)


def record(env, n_games, seed=0):
    """Host numpy arrays of ``n_games`` playouts of ``STEPS`` moves (games stay finished)."""
    P = env.num_players

    def one(key, strength, fixed):
        k_deck, k_deal, k_play = jax.random.split(key, 3)
        deck = jax.random.permutation(k_deck, jnp.asarray(STANDARD_DECK))
        start = jax.tree_util.tree_map(
            lambda a, b: jnp.where(fixed, a, b), env.reset_from_deck(deck), env.reset(k_deal)
        )

        def body(carry, k):
            state, ts = carry
            k_act, k_step = jax.random.split(k)
            a = _policy(env, k_act, state, ts, strength)
            state, ts = env.step(k_step, state, {"player": jnp.full((P,), a)})
            return (state, ts), (a, _view(state, ts))

        _, (actions, after) = jax.lax.scan(body, start, jax.random.split(k_play, STEPS))
        return deck, _view(*start), actions, after

    keys = jax.random.split(jax.random.key(seed), n_games)
    strength = jnp.linspace(0.0, 1.0, n_games) ** 0.5
    fixed = jnp.arange(n_games) % 2 == 0
    deck, first, actions, after = jax.device_get(jax.jit(jax.vmap(one))(keys, strength, fixed))
    # before[t] is the time step the t-th move was chosen from
    before = {k: np.concatenate([first[k][:, None], after[k][:, :-1]], 1) for k in first}
    return dict(deck=deck, fixed=np.asarray(fixed), actions=actions, before=before, after=after)


def _view(state, ts):
    """What the replay needs from one time step; observations bit-packed."""
    return dict(
        obs=jnp.packbits(ts.obs["player"] > 0, axis=-1),
        mask=ts.action_mask["player"],
        active=ts.active["player"],
        reward=ts.reward["player"],
        terminated=ts.terminated,
        score=ts.info["score"],
        illegal=ts.info["illegal_action"],
        hands=state.hands,
        deck_top=state.deck_top,
        life_tokens=state.life_tokens,
    )


def dealing_order(rec, g, hand_size):
    """The cards in the order the env dealt them in game ``g``: the initial hands, then
    each card that entered a last slot when the deck shrank."""
    first = rec["before"]["hands"][g, 0]
    order = list(first.reshape(-1))
    tops = np.concatenate([[first.size], rec["after"]["deck_top"][g]])
    for t in np.nonzero(np.diff(tops))[0]:
        mover = np.argmax(rec["before"]["active"][g, t])
        order.append(rec["after"]["hands"][g, t, mover, hand_size - 1])
    return np.asarray(order)


def _diff(ours, ref, where):
    ours, ref = np.asarray(ours, np.float32), np.asarray(ref, np.float32)
    bad = np.nonzero(ours != ref)[0] if ours.shape == ref.shape else "shapes differ"
    return f"{where}: ours {ours.shape} != OpenSpiel {ref.shape} at {bad}"


def replay(env, rec, games):
    """Replay ``games`` in OpenSpiel and compare everything. Returns end-reason counts.

    Each game's records are turned into Python lists first and compared with plain
    ``==`` (not ``np.testing``): the replay is the slow part of this module."""
    pyspiel = pytest.importorskip("pyspiel")
    P, H, D = env.num_players, env.hand_size, env.observation_size
    game = pyspiel.load_game("hanabi", {"players": P})
    before, after = rec["before"], rec["after"]
    ends = {"lives": 0, "deck": 0, "25": 0, "unfinished": 0}
    for g in games:
        order = dealing_order(rec, g, H)
        if rec["fixed"][g]:
            np.testing.assert_array_equal(order, rec["deck"][g, : len(order)])
        assert np.all(np.bincount(order, minlength=25) <= np.bincount(STANDARD_DECK)), "a card was dealt twice"
        term = after["terminated"][g]
        n = int(np.argmax(term)) + 1 if term.any() else STEPS  # moves until the end
        # a finished game stays finished and pays nothing
        assert term[n - 1 :].all() and not after["reward"][g, n:].any() and not after["illegal"][g].any()
        active = before["active"][g, :n]
        assert (active.sum(-1) == 1).all()
        mover = active.argmax(-1)
        legal = [np.flatnonzero(m).tolist() for m in before["mask"][g, np.arange(n), mover]]
        obs = np.unpackbits(before["obs"][g, :n], axis=-1, count=D).astype(float).tolist()  # [n][P][D]
        final = np.unpackbits(after["obs"][g, n - 1], axis=-1, count=D).astype(float).tolist()
        rewards, ended = after["reward"][g, :n].tolist(), term[:n].tolist()
        actions, mover = rec["actions"][g, :n].tolist(), mover.tolist()
        cards = iter(order)
        s = game.new_initial_state()
        for t in range(n):
            while s.is_chance_node():
                s.apply_action(int(next(cards)))
            where = f"{P} players, game {g}, move {t}"
            assert not s.is_terminal() and s.current_player() == mover[t], where
            assert s.legal_actions() == legal[t], (where, s.legal_actions(), legal[t])
            for q in range(P):
                ref = s.observation_tensor(q)
                assert obs[t][q] == ref, _diff(obs[t][q], ref, f"{where}, seat {q}")
            s.apply_action(actions[t])
            assert rewards[t] == s.rewards(), (where, rewards[t], s.rewards())
            assert ended[t] == s.is_terminal(), where
        if not s.is_terminal():
            ends["unfinished"] += 1
            continue
        for q in range(P):
            ref = s.observation_tensor(q)
            assert final[q] == ref, _diff(final[q], ref, f"{P} players, game {g}, final, seat {q}")
        assert after["score"][g, n - 1] == s.returns()[0]
        assert np.sum(after["reward"][g], 0).tolist() == s.returns()
        lives = after["life_tokens"][g, n - 1]
        ends["lives" if lives == 0 else "25" if s.returns()[0] == 25 else "deck"] += 1
    return ends


# one compile per player count (10-25 s each): 2 players by default, 3, 4 and 5 with `pytest -m slow`
@pytest.fixture(scope="module", params=[n if n == 2 else pytest.param(n, marks=pytest.mark.slow) for n in sorted(GAMES)])
def playouts(request):
    env = Hanabi(request.param)
    return env, record(env, GAMES[request.param])


def test_playouts_match_openspiel(playouts):
    env, rec = playouts
    ends = replay(env, rec, range(len(rec["actions"])))
    n = len(rec["actions"])
    # every way of ending is exercised, and almost every game ended within STEPS
    assert min(ends["lives"], ends["deck"], ends["25"]) >= n // 20, ends
    assert ends["unfinished"] <= n // 100, ends


@pytest.mark.heavy
@pytest.mark.parametrize("num_players", sorted(SLOW_GAMES))
def test_many_playouts_match_openspiel(num_players):
    env = Hanabi(num_players)
    rec = record(env, SLOW_GAMES[num_players], seed=1)
    replay(env, rec, range(len(rec["actions"])))


def test_action_names_match_openspiel():
    pyspiel = pytest.importorskip("pyspiel")
    for P in range(2, 6):
        env = Hanabi(P)
        game = pyspiel.load_game("hanabi", {"players": P})
        state = game.new_initial_state()
        while state.is_chance_node():
            state.apply_action(state.chance_outcomes()[0][0])
        assert game.num_distinct_actions() == env.num_actions
        assert [state.action_to_string(a) for a in range(env.num_actions)] == env.action_names
        assert game.observation_tensor_shape() == [env.observation_size]
        assert env.roles["player"].num_agents == P


@pytest.fixture(scope="module")
def two():
    """A 2-player env with its step and fixed-deck reset compiled once."""
    env = Hanabi(2)
    return env, jax.jit(env.step), jax.jit(env.reset_from_deck)


def test_last_life_ends_the_game_on_that_step(two):
    """JaxMARL's port (issue #179) ended the game one step late; HLE ends it at once."""
    pyspiel = pytest.importorskip("pyspiel")
    env, step, reset_from_deck = two
    # sorted deck: player 0 holds R1 R1 R1 R2 R2, player 1 R3 R3 R4 R4 R5
    deck = STANDARD_DECK
    state, ts = reset_from_deck(deck)
    s = pyspiel.load_game("hanabi", {"players": 2}).new_initial_state()
    for card in deck[:10]:
        s.apply_action(int(card))
    play0 = 5  # "(Play 0)"
    rewards = []
    for t in range(4):  # R1 scores; then R3, R1, R3 are misplays: the 3rd loses the last life
        assert not ts.terminated
        state, ts = step(jax.random.key(t), state, {"player": jnp.array([play0, play0])})
        s.apply_action(play0)
        rewards.append(float(ts.reward["player"][0]))
        assert rewards[-1] == s.rewards()[0]
        assert bool(ts.terminated) == s.is_terminal()
        while s.is_chance_node():
            s.apply_action(int(deck[int(state.deck_top) - 1]))
    assert rewards == [1.0, 0.0, 0.0, -1.0]
    assert bool(ts.terminated) and int(state.life_tokens) == 0 and float(ts.info["score"]) == 0
    assert not ts.active["player"].any() and ts.action_mask["player"].all()
    # stepping a finished game changes nothing and pays nothing
    again, ts2 = step(jax.random.key(9), state, {"player": jnp.array([play0, play0])})
    jax.tree_util.tree_map(np.testing.assert_array_equal, again, state)
    assert not ts2.reward["player"].any() and bool(ts2.terminated)


def test_illegal_moves_lose_the_game(two):
    env, step, reset_from_deck = two
    state, ts = reset_from_deck(STANDARD_DECK)
    state, ts = step(jax.random.key(0), state, {"player": jnp.array([5, 0])})  # R1 scores
    assert float(ts.reward["player"][0]) == 1.0
    # player 1 discards with 8 information tokens: masked, hence illegal
    assert not ts.action_mask["player"][1, 0]
    after, ts2 = step(jax.random.key(1), state, {"player": jnp.array([0, 0])})
    assert bool(ts2.terminated) and bool(ts2.info["illegal_action"])
    assert float(ts2.reward["player"][1]) == -1.0 and float(ts2.info["score"]) == 0
    assert int(after.life_tokens) == 0
    for bad in (-1, env.num_actions):  # out of range
        _, ts3 = step(jax.random.key(2), state, {"player": jnp.array([0, bad])})
        assert bool(ts3.terminated) and bool(ts3.info["illegal_action"])
    # the inactive player's action is ignored, whatever it is
    _, ts4 = step(jax.random.key(3), state, {"player": jnp.array([-7, 6])})
    assert not ts4.terminated and not ts4.info["illegal_action"]


def test_random_deals_are_uniform_and_conserve_cards():
    env = Hanabi(2)
    n = 10000

    def deal(key):
        state, ts = env.reset(key)
        first = state.hands
        # then a few random moves, drawing more cards
        def body(carry, k):
            s, ts = carry
            s, ts = env.step(k, s, jaxagents.random_actions(env, k, ts))
            return (s, ts), None
        (state, _), _ = jax.lax.scan(body, (state, ts), jax.random.split(key, 6))
        return state, first

    states, first = jax.device_get(jax.jit(jax.vmap(deal))(jax.random.split(jax.random.key(5), n)))
    # conservation: hands + discards + fireworks + deck = the standard deck, in every game
    counts = np.stack([np.bincount(h[h >= 0], minlength=25) for h in states.hands.reshape(n, -1)])
    counts += states.discards + np.diff(states.deck_below, prepend=0, axis=1)
    played = np.arange(5)[None, None, :] < states.fireworks[:, :, None]  # [n, colour, rank]
    counts += played.reshape(n, 25)
    np.testing.assert_array_equal(counts, np.broadcast_to(np.bincount(STANDARD_DECK), (n, 25)))
    # every position of the initial deal is uniform over the 50 cards (chi-square, 24 dof)
    expected = n * np.bincount(STANDARD_DECK) / 50
    for slot in [(0, 0), (1, 4)]:
        seen = np.bincount(first[:, slot[0], slot[1]], minlength=25)
        assert np.sum((seen - expected) ** 2 / expected) < 60  # p < 1e-4 under uniformity


def test_constructor_and_deck_validation():
    for bad in (1, 6, 2.0, True, "2"):
        with pytest.raises(ValueError, match="num_players"):
            Hanabi(bad)
    env = Hanabi(3)
    assert env.hand_size == 5 and Hanabi(4).hand_size == 4
    with pytest.raises(ValueError, match="deck"):
        env.reset_from_deck(np.arange(50))
    assert isinstance(jax.eval_shape(env.reset, jax.random.key(0))[0], HanabiState)
