"""Simple negotiation (the SPIRAL game), with a discrete offer set.

Rules. Two players trade two resources, Wood (0) and Gold (1). Both start with 10
of each. Unit values are private and opposite: player 0 values Wood 5 and Gold 15,
player 1 values Wood 15 and Gold 5 (``params.values``). Players alternate turns,
player 0 first, for ``num_turns`` turns in all (10). On its turn a player either

* makes an offer "I give ``a`` of X, you give me ``b`` of Y" (X != Y,
  ``1 <= a, b <= max_quantity``); a new offer replaces (implicitly denies) a pending
  one;
* accepts the pending offer addressed to it: the resources change hands at once; or
* denies: the pending offer (if any) is withdrawn; with no pending offer this is a pass.

When the turns are over, each player's gain is the change in the value of its own
inventory at its own prices. The larger gain wins (+1 / -1); equal gains draw (0).

Actions (``Discrete(2 * max_quantity**2 + 2)``):
``0 .. 2 Q^2 - 1`` offers, index ``x * Q^2 + (a - 1) * Q + (b - 1)`` where ``x`` is the
resource given (the one received is the other); ``2 Q^2`` = accept; ``2 Q^2 + 1`` = deny.

Invalid moves: offering more than you hold, accepting when no offer is addressed to
you, or accepting an offer you cannot pay for. They are masked in ``action_mask``; an
invalid move taken anyway (or an out-of-range action) loses the game at once for the
player who made it (-1, opponent +1, terminated) and sets ``info["illegal_action"]``.

Roles ``player_0`` and ``player_1`` (one agent each; values differ). Observation,
``f32[15]`` from the observer's side: own inventory / 20 (2), opponent inventory / 20
(2), own unit values / 20 (2), pending-offer flag, "pending offer is mine" flag, the
pending offer's give/receive quantities per resource / Q (4: what the offerer gives of
Wood, Gold; what it asks of Wood, Gold), turn fraction, "my turn" flag, a constant 1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core import Box, Discrete, Env, Role
from jaxagents.core.validate import check_positive_int

ROLES = ("player_0", "player_1")
WOOD, GOLD = 0, 1


@struct.dataclass
class NegotiationParams:
    """Sweepable settings of ``Negotiation``.

    Attributes:
        values: ``f32[2, 2]`` each player's private value of one unit of each resource,
            ``[player, resource]`` (resources Wood, Gold); finite, >= 0.
        start: ``i32[2, 2]`` each player's inventory at reset, ``[player, resource]``;
            >= 0.
        num_turns: ``i32[]`` turns in the game, both players' together (player 0 moves
            on even turns); >= 1.
    """

    values: jax.Array
    start: jax.Array
    num_turns: jax.Array


@struct.dataclass
class NegotiationState:
    """``inventory``: ``i32[2, 2]`` [player, resource]; ``offer``: ``i32[2, 2]`` the
    pending offer as [what the offerer gives, what it asks] x resource; ``offerer``:
    ``i32[]`` -1 if no offer is pending; ``turn``: ``i32[]`` turns taken; ``done``."""

    inventory: jax.Array
    offer: jax.Array
    offerer: jax.Array
    turn: jax.Array
    done: jax.Array


class Negotiation(Env):
    """SPIRAL's simple negotiation (see the module docstring).

    Args:
        max_quantity: the largest quantity of one resource in an offer (``Q``), >= 1.
        num_turns: default total turns (a param), >= 1.
    """

    def __init__(self, max_quantity: int = 5, num_turns: int = 10):
        self.max_quantity = q = check_positive_int("max_quantity", max_quantity)
        self._num_turns = check_positive_int("num_turns", num_turns)
        self.num_offers = 2 * q * q
        self.accept, self.deny = self.num_offers, self.num_offers + 1
        obs = Box(0.0, np.inf, (15,), jnp.float32)
        self.roles = {r: Role(1, obs, Discrete(self.num_offers + 2)) for r in ROLES}
        # offer index -> (give vector, receive vector), each i32[2] over resources
        idx = np.arange(self.num_offers)
        x, a, b = idx // (q * q), (idx // q) % q + 1, idx % q + 1
        give = np.zeros((self.num_offers, 2), np.int32)
        recv = np.zeros((self.num_offers, 2), np.int32)
        give[idx, x], recv[idx, 1 - x] = a, b
        self._give, self._recv = jnp.asarray(give), jnp.asarray(recv)

    def default_params(self) -> NegotiationParams:
        return NegotiationParams(
            values=jnp.array([[5.0, 15.0], [15.0, 5.0]], jnp.float32),
            start=jnp.full((2, 2), 10, jnp.int32),
            num_turns=jnp.int32(self._num_turns),
        )

    def check_params(self, params: NegotiationParams) -> None:
        if params.values.shape != (2, 2) or np.any(params.values < 0) or not np.isfinite(params.values).all():
            raise ValueError("params.values must be a finite, non-negative (2, 2) array [player, resource]")
        if params.start.shape != (2, 2) or np.any(params.start < 0):
            raise ValueError("params.start must be a non-negative (2, 2) integer array [player, resource]")
        if np.any(params.num_turns < 1):
            raise ValueError(f"params.num_turns must be >= 1, got {params.num_turns}")

    # ------------------------------------------------------------------ dynamics
    def _legal(self, state: NegotiationState, player: jax.Array) -> jax.Array:
        """``bool[A]`` legal actions of ``player`` in ``state``."""
        inv = state.inventory[player]
        offers = jnp.all(self._give <= inv, axis=-1)
        to_me = (state.offerer >= 0) & (state.offerer != player)
        can_pay = jnp.all(state.offer[1] <= inv)  # the acceptor gives what was asked
        return jnp.concatenate([offers, jnp.stack([to_me & can_pay, jnp.bool_(True)])])

    def _timestep(self, state, params, reward, illegal):
        q = self.max_quantity
        mover = state.turn % 2

        def obs_for(p):
            pending = state.offerer >= 0
            return jnp.concatenate(
                [
                    state.inventory[p] / 20.0,
                    state.inventory[1 - p] / 20.0,
                    params.values[p] / 20.0,
                    jnp.stack([pending, pending & (state.offerer == p)]).astype(jnp.float32),
                    state.offer.reshape(-1) / q,
                    jnp.stack([state.turn / params.num_turns, (mover == p) & ~state.done, 1.0]).astype(jnp.float32),
                ]
            ).astype(jnp.float32)[None]

        all_true = jnp.ones(self.num_offers + 2, bool)
        mask = lambda p: jnp.where(state.done, all_true, self._legal(state, jnp.int32(p)))[None]
        return self.make_timestep(
            obs={"player_0": obs_for(0), "player_1": obs_for(1)},
            reward={"player_0": reward[0:1], "player_1": reward[1:2]},
            terminated=state.done,
            action_mask={"player_0": mask(0), "player_1": mask(1)},
            active={"player_0": ((mover == 0) & ~state.done)[None], "player_1": ((mover == 1) & ~state.done)[None]},
            info={"illegal_action": illegal, "gain": self._gains(state, params)},
        )

    def _gains(self, state, params):
        """``f32[2]`` change in each player's inventory value at its own prices."""
        return jnp.sum((state.inventory - params.start) * params.values, axis=-1).astype(jnp.float32)

    def reset_env(self, key, params):
        state = NegotiationState(
            inventory=params.start.astype(jnp.int32),
            offer=jnp.zeros((2, 2), jnp.int32),
            offerer=jnp.int32(-1),
            turn=jnp.int32(0),
            done=jnp.bool_(False),
        )
        return state, self._timestep(state, params, jnp.zeros(2, jnp.float32), jnp.bool_(False))

    def step_env(self, key, state, actions, params):
        p = state.turn % 2
        a = jnp.where(p == 0, actions["player_0"][0], actions["player_1"][0])
        legal_row = self._legal(state, p)
        in_range = (a >= 0) & (a < self.num_offers + 2)
        ok = in_range & legal_row[jnp.clip(a, 0, self.num_offers + 1)]
        playing = ~state.done
        illegal = playing & ~ok
        is_offer = a < self.num_offers
        oi = jnp.clip(a, 0, self.num_offers - 1)

        # accept: the offerer gives offer[0], receives offer[1]; the acceptor the reverse
        accepted = playing & ok & (a == self.accept)
        delta = (state.offer[1] - state.offer[0])  # change for the offerer
        sign = jnp.where(jnp.arange(2) == state.offerer, 1, -1)[:, None]
        inventory = state.inventory + jnp.where(accepted, sign * delta[None, :], 0)

        new_offer = jnp.stack([self._give[oi], self._recv[oi]])
        offering = playing & ok & is_offer
        offer = jnp.where(offering, new_offer, jnp.where(playing & ok, jnp.zeros_like(state.offer), state.offer))
        offerer = jnp.where(offering, p, jnp.where(playing & ok, -1, state.offerer))
        turn = state.turn + playing.astype(jnp.int32)
        over = playing & ok & (turn >= params.num_turns)
        new = NegotiationState(inventory, offer, offerer, turn, state.done | illegal | over)

        gains = self._gains(new, params)
        outcome = jnp.sign(gains[0] - gains[1])  # +1 player 0 wins, -1 player 1 wins
        final = jnp.stack([outcome, -outcome])
        forfeit = jnp.where(jnp.arange(2) == p, -1.0, 1.0)
        reward = jnp.where(illegal, forfeit, jnp.where(over, final, 0.0)).astype(jnp.float32)
        return new, self._timestep(new, params, reward, illegal)

    def describe_action(self, action: int) -> str:
        """Human-readable action, e.g. ``"offer: give 3 Wood for 2 Gold"``."""
        action = int(action)
        if action == self.accept:
            return "accept"
        if action == self.deny:
            return "deny"
        if not 0 <= action < self.num_offers:
            return f"invalid({action})"
        names = ("Wood", "Gold")
        g, r = np.asarray(self._give[action]), np.asarray(self._recv[action])
        x = int(np.argmax(g))
        return f"offer: give {g[x]} {names[x]} for {r[1 - x]} {names[1 - x]}"
