import jax
import pytest

import jaxagents
from jaxagents import Box, Discrete, Env, Role
from jaxagents.core import registry


def test_builtin_ids_listed_and_made():
    ids = jaxagents.list_envs()
    assert {"tic_tac_toe", "prisoners_dilemma", "stag_hunt", "chicken", "matching_pennies", "coordination"} <= set(ids)
    env = jaxagents.make("stag_hunt", horizon=5)
    assert int(env.default_params().horizon) == 5


def test_unknown_id_suggests_close_matches():
    with pytest.raises(ValueError, match="Did you mean: tic_tac_toe"):
        jaxagents.make("tictactoe")
    with pytest.raises(ValueError, match="Registered ids"):
        jaxagents.make("zzzzzz")


def test_unknown_keyword_names_argument_and_allowed():
    with pytest.raises(TypeError, match=r"unknown keyword argument 'horizn' \(did you mean 'horizon'\?\); allowed: game, payoff, horizon"):
        jaxagents.make("prisoners_dilemma", horizn=3)
    with pytest.raises(TypeError, match="allowed: none"):
        jaxagents.make("tic_tac_toe", size=4)


def test_invalid_keyword_values_name_the_argument():
    with pytest.raises(ValueError, match="horizon must be a positive int"):
        jaxagents.make("prisoners_dilemma", horizon=0)
    with pytest.raises(ValueError, match="game must be one of"):
        jaxagents.make("prisoners_dilemma", game="poker")
    with pytest.raises(ValueError, match=r"payoff must have shape \(2, A, A\)"):
        jaxagents.make("prisoners_dilemma", payoff=[[1, 2], [3, 4]])


class _Coin(Env):
    """A one-step game for registry tests."""

    def __init__(self, bias: float = 0.5):
        if not 0 <= bias <= 1:
            raise ValueError(f"bias must be in [0, 1], got {bias}")
        self.roles = {"player": Role(1, Box(0, 1, (1,)), Discrete(2))}

    def reset_env(self, key, params):
        return (), self.make_timestep({"player": jax.numpy.zeros((1, 1))})

    def step_env(self, key, state, actions, params):
        return (), self.make_timestep({"player": jax.numpy.zeros((1, 1))}, terminated=True)


def test_register_custom_env_class_and_string():
    try:
        jaxagents.register("test_coin", _Coin, bias=0.3)
        env = jaxagents.make("test_coin")
        assert isinstance(env, _Coin) and "test_coin" in jaxagents.list_envs()
        with pytest.raises(ValueError, match="already registered"):
            jaxagents.register("test_coin", _Coin)
        jaxagents.register("test_coin", f"{__name__}:_Coin", overwrite=True)
        with pytest.raises(ValueError, match=r"bias must be in \[0, 1\]"):
            jaxagents.make("test_coin", bias=2.0)
    finally:
        registry._REGISTRY.pop("test_coin", None)


def test_register_rejects_bad_entry_points():
    with pytest.raises(ValueError, match="module:Class"):
        jaxagents.register("bad", "no_colon_here")
    with pytest.raises(ValueError, match="non-empty string"):
        jaxagents.register("", _Coin)
