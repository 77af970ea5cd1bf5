"""Base class of wrappers that are themselves environments."""

from __future__ import annotations

from jaxagents.core.env import Env


class Wrapper(Env):
    """Delegates everything to ``env``; subclasses override what they change.

    Attribute lookups that the wrapper does not define fall through to the wrapped
    environment, so ``wrapped.horizon`` works when the inner env has a ``horizon``.
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
        env = self.env
        while isinstance(env, Wrapper):
            env = env.env
        return env

    @property
    def name(self) -> str:
        return f"{type(self).__name__}<{self.env.name}>"

    def default_params(self):
        return self.env.default_params()

    def check_params(self, params):
        self.env.check_params(params)

    def reset_env(self, key, params):
        return self.env.reset(key, params)

    def step_env(self, key, state, actions, params):
        return self.env.step(key, state, actions, params)

    def global_obs(self, state, params=None):
        return self.env.global_obs(state, params)

    def render(self, state, params=None):
        return self.env.render(state, params)
