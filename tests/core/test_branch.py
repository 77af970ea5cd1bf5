"""``jaxagents.core.branch``: one branch per vmapped batch, right values either way."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.core.branch import branch, cheap_branches


def _f(pred, x, y, reduce=jnp.any):
    return branch(pred, lambda x, y: x * 2.0 + y, lambda x, y: jnp.zeros_like(x), x, y, reduce=reduce)


X = jnp.arange(6.0).reshape(3, 2)
Y = jnp.ones(2)


def test_unbatched_is_cond():
    np.testing.assert_array_equal(_f(True, X, Y), X * 2 + 1)
    np.testing.assert_array_equal(jax.jit(_f)(False, X, Y), np.zeros_like(X))


def test_vmap_keeps_one_branch(monkeypatch):
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")  # the branching form (GPU selects)
    vf = jax.vmap(_f, (0, 0, None))
    jaxpr = str(jax.make_jaxpr(vf)(jnp.array([False, True, False]), X, Y))
    assert "cond" in jaxpr and "select_n" not in jaxpr  # a plain lax.cond would be a select here
    # any: some row needs the expensive side -> every row gets it
    np.testing.assert_array_equal(vf(jnp.array([False, True, False]), X, Y), X * 2 + 1)
    np.testing.assert_array_equal(vf(jnp.zeros(3, bool), X, Y), np.zeros_like(X))


def test_reduce_all_and_nested_vmap():
    va = jax.vmap(lambda p, x: _f(p, x, Y, reduce=jnp.all))
    np.testing.assert_array_equal(va(jnp.array([True, False, True]), X), np.zeros_like(X))
    np.testing.assert_array_equal(va(jnp.ones(3, bool), X), X * 2 + 1)
    nested = jax.jit(jax.vmap(jax.vmap(_f, (0, 0, None)), (0, 0, None)))
    pred = jnp.array([[False, False], [False, False]])
    x = jnp.ones((2, 2, 2))
    np.testing.assert_array_equal(nested(pred, x, Y), np.zeros((2, 2, 2)))
    np.testing.assert_array_equal(nested(pred.at[1, 0].set(True), x, Y), np.full((2, 2, 2), 3.0))


def test_inside_scan():
    body = lambda c, p: (c, jax.vmap(_f, (0, 0, None))(p, X, Y))  # noqa: E731
    _, out = jax.lax.scan(body, 0, jnp.array([[False] * 3, [True, False, False]]))
    np.testing.assert_array_equal(out[0], np.zeros_like(X))
    np.testing.assert_array_equal(out[1], X * 2 + 1)


def test_select_form_and_gpu_default(monkeypatch):
    """``select=True`` (GPU's default: a branch there costs a device synchronisation)
    computes both sides and picks row by row, with no ``cond`` in the program."""
    sel = lambda p, x, y: branch(p, lambda x, y: x * 2.0 + y, lambda x, y: jnp.zeros_like(x), x, y, select=True)  # noqa: E731
    vf = jax.vmap(sel, (0, 0, None))
    pred = jnp.array([False, True, False])
    assert "cond" not in str(jax.make_jaxpr(vf)(pred, X, Y))
    np.testing.assert_array_equal(vf(pred, X, Y), np.where(np.asarray(pred)[:, None], X * 2 + 1, 0.0))
    np.testing.assert_array_equal(jax.jit(sel)(True, X, Y), X * 2 + 1)
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert cheap_branches()
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not cheap_branches()
    assert "cond" not in str(jax.make_jaxpr(jax.vmap(_f, (0, 0, None)))(pred, X, Y))
