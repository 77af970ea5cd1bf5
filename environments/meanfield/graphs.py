"""Fixed-degree random social networks as index arrays ``i32[N, d]``.

Row ``i`` lists the ``d`` agents that agent ``i`` listens to; a neighbourhood average is
then a gather ``x[nbrs]`` and a mean over the last axis: ``O(N d)`` work, no sparse
matrices. All graphs are drawn inside jit from a key (and, for the ring, a traced
rewiring probability), so a batch of environments holds a batch of graphs.

* ``"random"``: every agent listens to ``d`` agents drawn uniformly from the others,
  with replacement (directed, fixed out-degree; ``O(N d)``). Multi-edges have
  probability ``~ d^2 / (2N)`` per agent.
* ``"regular"``: an undirected ``d``-regular multigraph from the configuration model:
  ``N d`` half-edges, shuffled and paired (self-loops and multi-edges possible, a
  fraction ``O(d / N)`` of the edges). ``N d`` must be even. Costs a sort of ``N d``
  keys (about a second at ``N d = 8e6`` on two CPU cores), paid at reset.
* ``"ring"``: Watts-Strogatz: the ``d`` nearest agents on a ring (``d/2`` each side;
  ``d`` even), each link independently replaced with probability ``rewire_prob`` by a
  uniformly drawn other agent (directed rewiring: the listener keeps its degree).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

GRAPHS = ("complete", "random", "regular", "ring")


def check_graph(graph: str, n: int, degree: int) -> None:
    """Constructor-time checks, ``ValueError`` naming the argument."""
    if graph not in GRAPHS:
        raise ValueError(f"graph must be one of {GRAPHS}, got {graph!r}")
    if graph == "complete":
        return
    if not isinstance(degree, (int, np.integer)) or isinstance(degree, bool) or not 1 <= degree <= n - 1:
        raise ValueError(f"degree must be an int in [1, num_agents - 1 = {n - 1}] for graph={graph!r}, got {degree!r}")
    if graph == "regular" and (n * degree) % 2:
        raise ValueError(f"graph='regular' needs num_agents * degree even, got {n} * {degree}")
    if graph == "ring" and degree % 2:
        raise ValueError(f"graph='ring' needs an even degree, got {degree}")


def _others(key, n: int, shape) -> jax.Array:
    """Uniform agent indices relative to ``arange(n)``: never the agent itself."""
    offset = jax.random.randint(key, shape, 1, n, dtype=jnp.int32)
    return (jnp.arange(n, dtype=jnp.int32).reshape((n,) + (1,) * (len(shape) - 1)) + offset) % n


def random_graph(key: jax.Array, n: int, degree: int) -> jax.Array:
    """``i32[n, degree]``: ``degree`` uniform other agents per agent."""
    return _others(key, n, (n, degree))


def regular_graph(key: jax.Array, n: int, degree: int) -> jax.Array:
    """``i32[n, degree]``: configuration-model ``degree``-regular multigraph."""
    stubs = jax.random.permutation(key, jnp.repeat(jnp.arange(n, dtype=jnp.int32), degree))
    partner = stubs.reshape(-1, 2)[:, ::-1].reshape(-1)  # the other end of each half-edge
    order = jnp.argsort(stubs, stable=True)  # half-edges grouped by owner, degree each
    return partner[order].reshape(n, degree)


def ring_graph(key: jax.Array, n: int, degree: int, rewire_prob: jax.Array) -> jax.Array:
    """``i32[n, degree]``: Watts-Strogatz ring lattice with directed rewiring."""
    half = degree // 2
    offsets = jnp.concatenate([-jnp.arange(half, 0, -1), jnp.arange(1, half + 1)]).astype(jnp.int32)
    lattice = (jnp.arange(n, dtype=jnp.int32)[:, None] + offsets) % n
    k1, k2 = jax.random.split(key)
    rewire = jax.random.uniform(k1, (n, degree)) < rewire_prob
    return jnp.where(rewire, _others(k2, n, (n, degree)), lattice)


def make_graph(graph: str, key: jax.Array, n: int, degree: int, rewire_prob) -> jax.Array:
    """``i32[n, degree]`` neighbour lists (``i32[1, 1]``, unused, for ``"complete"``: no
    graph; not zero-sized, because checkpoints cannot hold a zero-size array)."""
    if graph == "complete":
        return jnp.zeros((1, 1), jnp.int32)
    if graph == "random":
        return random_graph(key, n, degree)
    if graph == "regular":
        return regular_graph(key, n, degree)
    return ring_graph(key, n, degree, rewire_prob)
