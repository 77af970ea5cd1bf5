"""Base class of wrappers that are themselves environments."""

from __future__ import annotations

from jaxagents.core.env import Env


class Wrapper(Env):
    """Delegates everything to ``env``; subclasses override what they change.

    Attribute lookups that the wrapper does not define fall through to the wrapped
    environment, so ``wrapped.horizon`` works when the inner env has a ``horizon``.

    The capabilities (``scripted_policies``, ``exact_evaluation``, ``global_obs``,
    ``render``) are forwarded through three translations that a subclass overrides
    when it changes the formats: ``inner_state`` (its state -> the wrapped env's),
    ``outer_actions`` (the wrapped env's ``{role: action}`` -> its own roles) and
    ``inner_policies`` (policies on its observations -> policies on the wrapped
    env's observations, ``{role: logits_fn}``).
    """

    def __init__(self, env: Env):
        if not isinstance(env, Env):
            raise TypeError(f"{type(self).__name__} wraps a jaxagents Env, got {type(env).__name__}")
        self.env = env
        self.roles = env.roles

    def __getattr__(self, name):
        if name == "env":  # not yet set: avoid infinite recursion during unpickling
            raise AttributeError(name)
        return getattr(self.env, name)

    @property
    def unwrapped(self) -> Env:
        """The innermost environment, below every ``Wrapper``."""
        env = self.env
        while isinstance(env, Wrapper):
            env = env.env
        return env

    @property
    def name(self) -> str:
        """``WrapperClass<inner name>``."""
        return f"{type(self).__name__}<{self.env.name}>"

    def default_params(self):
        """The wrapped env's ``default_params()``."""
        return self.env.default_params()

    def check_params(self, params):
        self.env.check_params(params)

    def reset_env(self, key, params):
        """The wrapped env's ``reset`` (its own defaulting and checks included)."""
        return self.env.reset(key, params)

    def step_env(self, key, state, actions, params):
        """The wrapped env's ``step`` (its own action checks included)."""
        return self.env.step(key, state, actions, params)

    def global_obs(self, state, params=None):
        return self.env.global_obs(self.inner_state(state), params)

    def render(self, state, params=None):
        return self.env.render(self.inner_state(state), params)

    # ------------------------------------------------ translations for the capabilities
    def inner_state(self, state):
        """This wrapper's state -> the wrapped env's state (identity by default)."""
        return state

    def outer_actions(self, actions: dict) -> dict:
        """The wrapped env's ``{role: action[n, ...]}`` -> this wrapper's roles (by
        default: the roles this wrapper still exposes)."""
        return {r: a for r, a in actions.items() if r in self.roles}

    def inner_policies(self, policies: dict) -> dict:
        """``{role: logits_fn}`` on this wrapper's observations -> the same policies
        on the wrapped env's observations (identity by default)."""
        return policies

    def scripted_policies(self) -> dict:
        def lift(fn):
            return lambda state, key: self.outer_actions(fn(self.inner_state(state), key))

        return {name: lift(fn) for name, fn in self.env.scripted_policies().items()}

    def exact_evaluation(self, params=None):
        inner = self.env.exact_evaluation(params)
        if inner is None:
            return None
        return lambda policies, weights=None: inner(self.inner_policies(policies), weights)
