import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jaxagents import Box, Discrete, MultiDiscrete


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 50), batch=st.lists(st.integers(1, 4), max_size=2), seed=st.integers(0, 2**31 - 1))
def test_discrete_sample_is_contained(n, batch, seed):
    s = Discrete(n)
    x = s.sample(jax.random.key(seed), batch)
    assert x.shape == tuple(batch) and x.dtype == jnp.int32
    assert bool(s.contains(x, batch))
    assert not s.contains(x + n, batch)


def test_contains_checks_shape_and_dtype_statically():
    s = Discrete(3)
    assert s.contains(jnp.int32(2)) and not s.contains(jnp.int32(3))
    assert s.contains(jnp.float32(1)) is False  # wrong dtype
    assert s.contains(jnp.zeros((2,), jnp.int32)) is False  # wrong shape
    assert s.check(jnp.zeros((2,), jnp.int32)) == "expected shape (), got (2,)"
    b = Box(0.0, 1.0, (2, 3))
    assert b.contains(jnp.full((2, 3), 0.5))
    assert b.contains(jnp.full((2, 3), 1.5)) == False  # noqa: E712 (traced bool)
    assert b.contains(jnp.full((3, 2), 0.5)) is False
    assert "dtype" in b.check(jnp.zeros((2, 3), jnp.int32))


def test_multidiscrete_and_box_sampling():
    m = MultiDiscrete([2, 5, 7])
    x = m.sample(jax.random.key(0), (1000,))
    assert x.shape == (1000, 3) and m.contains(x, (1000,))
    np.testing.assert_array_equal(np.asarray(x).max(0), [1, 4, 6])
    b = Box(np.array([-1.0, 0.0]), np.array([1.0, np.inf]), (2,))
    y = b.sample(jax.random.key(1), (500,))
    assert y.shape == (500, 2) and bool(b.contains(y, (500,)))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Discrete(0), "positive"),
        (lambda: Discrete(2.5), "positive"),
        (lambda: MultiDiscrete([]), "non-empty"),
        (lambda: MultiDiscrete([3, 0]), "positive"),
        (lambda: Box(1.0, 0.0, (2,)), "low must be <= high"),
        (lambda: Box(np.zeros(3), 1.0, (2,)), "broadcast"),
    ],
)
def test_bad_spaces_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_space_equality():
    assert Discrete(3) == Discrete(3) != Discrete(4)
    assert Box(0, 1, (2,)) == Box(0.0, 1.0, (2,)) != Box(0, 2, (2,))
    assert MultiDiscrete([2, 3]) == MultiDiscrete([2, 3])
