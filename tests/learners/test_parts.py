"""The partner-part interface (``jaxagents.learners.partners.part``): the loops run the
parts in the list's order, each seeing the new states and notes of those before it;
self-play's config builds its parts in that order, one per ``SelfPlayExtra`` field."""

import jax
import jax.numpy as jnp
import pytest
from flax import struct

import jaxagents
from jaxagents.learners.partners import part as P
from jaxagents.learners.policy_gradient.selfplay import ROLE, SelfPlayConfig, SelfPlayExtra, merge, partner_parts
from jaxagents.learners.skeleton.agents import Agents


@struct.dataclass
class Extra:
    count: jax.Array | None = None
    seen: jax.Array | None = None
    unused: jax.Array | None = None


class Counter(P.Part):
    field = "count"

    def init(self, params, key):
        return params["w"]

    def after_update(self, state, ctx):
        ctx.notes[self.field] = ctx.update
        return state + 1.0, {"count/value": state + 1.0}

    def evaluate(self, state, exact):
        return exact(state, "eval/count/")


class Reader(P.Part):
    """Reads the counter's new state and note: only right if it runs after it."""

    field = "seen"

    def init(self, params, key):
        return jnp.zeros(())

    def after_update(self, state, ctx):
        return ctx.new["count"] * 10.0 + ctx.notes["count"] + ctx.before.count, {}


def test_parts_update_in_order_and_evaluate():
    parts = [Counter(), Reader()]
    P.check(parts, Extra)
    extra = P.init(parts, Extra, {"w": jnp.float32(2.0)}, jax.random.key(0))
    assert float(extra.count) == 2.0 and float(extra.seen) == 0.0 and extra.unused is None
    for update in (1, 2):
        before = extra
        extra, metrics = P.after_update(parts, extra, {"w": None}, jnp.int32(update), traj=None)
        assert float(extra.count) == float(before.count) + 1.0 == float(metrics["count/value"])
        assert float(extra.seen) == float(extra.count) * 10.0 + update + float(before.count)
    exact = lambda params, prefix, weights=None: {prefix + "value": params}  # noqa: E731
    assert P.evaluate(parts, extra, exact) == {"eval/count/value": extra.count}
    with pytest.raises(KeyError):  # the reader before the counter: its input is not there yet
        P.after_update(parts[::-1], extra, {}, jnp.int32(3), traj=None)
    with pytest.raises(ValueError, match="distinct fields of Extra"):
        P.check([Counter(), Counter()], Extra)
    with pytest.raises(ValueError, match="distinct fields of SelfPlayExtra"):
        P.check([Counter()], SelfPlayExtra)


def test_selfplay_builds_one_part_per_field_in_update_order():
    env = merge(jaxagents.make("kuhn_poker"))
    cfg = SelfPlayConfig(pool_size=2, pool_every=1, average_decay=0.5, average_policy={},
                         league=dict(self_play=0.2, pfsp=0.5, latest=0.15, exploiter={"share": 0.15}))
    agents = Agents(env, cfg.ppo.network)
    parts = partner_parts(cfg, agents, env.roles[ROLE].num_agents)
    assert [p.field for p in parts] == ["pool", "league", "exploiter", "average", "distilled"]
    assert all(isinstance(p, P.Part) for p in parts)
    P.check(parts, SelfPlayExtra)
    extra = jax.eval_shape(lambda k: P.init(parts, SelfPlayExtra, agents.init(k)[ROLE], k), jax.random.key(0))
    assert all(getattr(extra, p.field) is not None for p in parts)
    assert partner_parts(SelfPlayConfig(), agents, 2) == []
