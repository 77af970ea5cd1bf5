"""RWARE's collision resolution, vectorised: which forward moves succeed.

The reference (``rware`` 2.0.0, ``Warehouse.step``) builds a directed graph on cells
with one edge per agent, from its cell to its target cell (a self-loop when it does
not move), and resolves each weakly connected component:

* a component with a cycle (each cell has at most one out-edge, so at most one cycle):
  the agents on the cycle move, unless it has length 2 (two agents swapping: nobody
  in the component moves); a self-loop is an agent standing still, so the agents queued
  behind it stay too;
* a component without a cycle is a tree whose root is a free cell: the agents on the
  longest path into the root move, the others stay.

The reference breaks ties between equally long branches by the order networkx lists
a node's predecessors, which follows CPython's iteration order of sets of cell tuples
(deterministic but arbitrary; about 4 in 10 ties go to the higher agent index).
Here ties go to the highest ``rank`` (the env passes ``n - 1 - agent_index``, so the
lower index wins, or a random permutation).

Agents are the nodes of a functional graph ``nxt`` (the agent on one's target cell,
itself when standing still, ``ROOT = n`` for a free target). Everything is
``ceil(log2(n + 1))`` rounds of pointer doubling, each O(n) gathers and scatters:
where a chain ends (root or cycle), which agents lie on cycles, each agent's depth
below its root and the height of the longest chain behind it (max over descendants,
aggregated along the doubled jumps), and whether every agent from it to the root is
its target's best claimant. No loop over agents or cells.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def resolve_moves(pos: jax.Array, target: jax.Array, rank: jax.Array, num_cells: int) -> jax.Array:
    """Which agents end on their target.

    Args:
        pos: ``i32[n]`` distinct cells of the agents.
        target: ``i32[n]`` requested cells (``pos`` for agents that stay).
        rank: ``i32[n]`` a permutation of ``0 .. n-1``: ties go to the higher rank.
        num_cells: number of cells (``pos``/``target`` are in ``[0, num_cells)``).

    Returns:
        ``bool[n]``: the agent ends on ``target`` (always True for agents that stay).
    """
    n = pos.shape[0]
    root = n
    idx = jnp.arange(n, dtype=jnp.int32)
    agent_at = jnp.full(num_cells, -1, jnp.int32).at[pos].set(idx)
    moving = target != pos
    occupant = agent_at[target]
    nxt = jnp.where(~moving, idx, jnp.where(occupant >= 0, occupant, root))
    nxt = jnp.concatenate([nxt, jnp.array([root], jnp.int32)])  # the root points to itself
    levels = max(1, math.ceil(math.log2(n + 1)))  # 2**levels > every chain length

    # Doubled jumps J_k = nxt^(2^k), and the depth (edges to the root) along the way.
    jumps = [nxt]
    depth = jnp.concatenate([jnp.ones(n, jnp.int32), jnp.zeros(1, jnp.int32)])
    for _ in range(levels):
        j = jumps[-1]
        depth = depth + depth[j]
        jumps.append(j[j])
    end = jumps[-1]  # nxt^(2^levels): the root, or a node on the cycle of the component
    in_tree = end[:n] == root
    on_cycle = jnp.zeros(n + 1, bool).at[end].set(True)[:n] & ~in_tree
    swap = on_cycle & moving & (nxt[nxt[:n]] == idx)

    # Height of the longest chain behind each tree agent: max depth of its descendants
    # minus its own depth, descendants gathered along the doubled jumps.
    deep = jnp.where(in_tree, depth[:n], -1)
    deep = jnp.concatenate([deep, jnp.zeros(1, jnp.int32)])
    for j in jumps[:-1]:
        deep = jnp.maximum(deep, jax.ops.segment_max(deep[:n], j[:n], num_segments=n + 1))
    height = deep[:n] - depth[:n]

    # The best claimant of each target cell: longest chain behind it, then rank.
    score = jnp.where(in_tree & moving, height * n + rank, -1)
    best = jnp.full(num_cells, -1, jnp.int32).at[target].max(score)
    chosen = jnp.concatenate([(score >= 0) & (best[target] == score), jnp.ones(1, bool)])
    # Committed iff every agent from here to the root is its target's best claimant.
    ok = chosen
    for j in jumps[:-1]:
        ok = ok & ok[j]
    return jnp.where(in_tree, ok[:n], on_cycle & ~swap) | ~moving
