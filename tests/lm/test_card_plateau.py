"""experiments/lm_card_plateau.py: its differentiable strategy table is the exact
evaluator's, its card-dependent target, its transcripts and its running averages are
what they claim."""

import jax
import numpy as np
import pytest

from jaxagents.lm.evaluate import make_exact_evaluator
from jaxagents.lm.generate import Sampling
from jaxagents.lm.model import init_params

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def probe(experiment_script):
    script = experiment_script("lm_card_plateau")
    return script, script.kuhn_rows()


def test_the_probe_strategy_is_the_exact_evaluators(probe):
    script, (policy, exact, turns, rows_s, rows_a) = probe
    params = init_params(policy.cfg, jax.random.PRNGKey(3))
    table, entropy = jax.jit(lambda p: script.strategy(p, policy, exact, turns, rows_s, rows_a))(params)
    evaluator = make_exact_evaluator(policy.cfg, script.kuhn(), policy.tables[0], sampling=Sampling(4),
                                     exact=exact, prompt_len=320)
    np.testing.assert_allclose(np.asarray(table), np.asarray(evaluator(params)["table"]), atol=1e-5)
    np.testing.assert_allclose(np.asarray(table).sum(1), 1.0, atol=1e-5)
    assert float(entropy) > 0


def test_the_target_is_aggressive_with_the_king_only(probe):
    script, (_, exact, _, rows_s, rows_a) = probe
    target = script.card_target(exact, rows_s, rows_a)
    card = np.array([int(n[0]) for n in exact.names])[rows_s]
    assert target.sum() == len(exact.names)  # one target move per information state
    assert np.all(rows_a[target & (card == 2)] == 1) and np.all(rows_a[target & (card < 2)] == 0)


def test_every_transcript_ends_with_the_showdown_or_a_fold(probe):
    script, (policy, exact, *_) = probe
    ids, length = script.transcripts(script.kuhn(), policy, exact)
    assert ids.shape[0] == 2 * 6 * 5  # two seats, six deals, five betting sequences
    texts = [policy.tokenizer.decode(ids[i, : length[i]].tolist()) for i in range(ids.shape[0])]
    showdowns = sum("Showdown" in t for t in texts)
    assert showdowns == 2 * 6 * 3  # check-check, check-bet-call, bet-call reach a showdown
    assert all("Your card is" in t for t in texts)


def test_the_running_averages_are_the_mean_parameters_and_the_mixture(probe):
    from jaxagents.evaluation.exploitability import mixture_policy

    script, (_, exact, *_) = probe
    tree, rng = exact.tree, np.random.default_rng(0)
    legal = exact.moves >= 0
    tables = [np.where(legal, rng.uniform(0.05, 1.0, legal.shape), 0.0) for _ in range(3)]
    tables = [t / t.sum(1, keepdims=True) for t in tables]
    params = [{"w": np.full(2, float(k))} for k in range(3)]
    avg = (params[0], np.zeros(legal.shape), np.zeros(legal.shape[0]))
    for n, (p, t) in enumerate(zip(params, tables), start=1):
        avg = script.accumulate(tree, avg, p, t, n)
    np.testing.assert_allclose(np.asarray(avg[0]["w"]), 1.0, atol=1e-6)  # mean of 0, 1, 2
    np.testing.assert_allclose(np.asarray(script.average_strategy(tree, avg)),
                               np.asarray(mixture_policy(tree, np.stack(tables))), atol=1e-5)
    # weighted by own reach: not the plain mean of the tables where an earlier own move leads
    assert not np.allclose(np.asarray(script.average_strategy(tree, avg)), np.mean(tables, 0), atol=1e-3)


def test_the_magnet_term_is_the_kl_summed_over_information_states(probe):
    script, (_, exact, *_) = probe
    tree, rng = exact.tree, np.random.default_rng(1)
    legal = exact.moves >= 0
    pi, rho = (np.where(legal, rng.uniform(0.05, 1.0, legal.shape), 0.0) for _ in range(2))
    pi, rho = pi / pi.sum(1, keepdims=True), rho / rho.sum(1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.nansum(np.where(legal, pi * np.log(pi / rho), 0.0))
    assert expected > 0
    np.testing.assert_allclose(float(script.magnet_kl(tree, pi, rho)), expected, rtol=1e-5)
    assert abs(float(script.magnet_kl(tree, pi, pi))) < 1e-6
    # a table with mass on an illegal move is read as the evaluator reads it (renormalised)
    noisy = np.where(legal, pi, 0.3)
    np.testing.assert_allclose(float(script.magnet_kl(tree, noisy, rho)), expected, rtol=1e-5)
    # the gradient reaches the strategy, never the magnet
    g_pi, g_rho = jax.grad(lambda a, b: script.magnet_kl(tree, a, b), argnums=(0, 1))(pi, rho)
    assert np.abs(np.asarray(g_pi)).sum() > 0 and np.all(np.asarray(g_rho) == 0)


def test_the_sampled_gradient_estimates_the_exact_one(probe):
    import jax.numpy as jnp

    from jaxagents.evaluation.exploitability import normalize_policy, policy_value

    script, (_, exact, *_) = probe
    tree, legal = exact.tree, jnp.asarray(exact.moves >= 0)
    owner = jnp.asarray(np.asarray(tree.infostate_player))
    logits = jnp.asarray(np.random.default_rng(2).normal(size=legal.shape), jnp.float32)
    sigma_of = jax.jit(lambda z: normalize_policy(tree, jnp.where(legal, jax.nn.softmax(jnp.where(legal, z, -1e9)), 0)))

    def exact_value(z):  # each seat's value, the other seat's strategy held fixed
        t = sigma_of(z)
        return sum(policy_value(tree, jnp.where((owner == i)[:, None], t, jax.lax.stop_gradient(t)))[i]
                   for i in range(2))

    sigma = sigma_of(logits)
    visits, payoff = script.sample_visits(tree, sigma, jax.random.PRNGKey(0), 200_000)
    # every game deals two distinct cards and ends at a terminal with a zero-sum payoff
    assert np.all(np.asarray(payoff).sum(1) == 0) and np.all(np.asarray(visits).sum((1, 2)) >= 2)
    np.testing.assert_allclose(float(np.asarray(payoff)[:, 0].mean()), float(policy_value(tree, sigma)[0]), atol=0.02)
    for baseline in ("none", "mean"):
        weight = script.sampled_weights(tree, visits, payoff, baseline)
        sampled = jax.grad(lambda z: jnp.sum(jnp.where(weight != 0, weight * jnp.log(sigma_of(z)), 0.0)))(logits)
        want = jax.grad(exact_value)(logits)
        assert float(jnp.abs(want).max()) > 0.05
        np.testing.assert_allclose(np.asarray(sampled), np.asarray(want), atol=0.02)


def test_grouped_games_share_their_deal_and_their_baseline(probe):
    script, (_, exact, *_) = probe
    tree = exact.tree
    legal = np.asarray(exact.moves >= 0)
    sigma = np.where(legal, 1.0, 0.0) / legal.sum(1, keepdims=True)
    visits, payoff = script.sample_visits(tree, sigma, jax.random.PRNGKey(0), 4000, group=8)
    # the first mover's information state names the deal: equal within a group, varied across groups
    first = np.asarray(visits)[:, np.asarray(tree.infostate[np.asarray(tree.parent) < 0])].sum(-1).argmax(1)
    assert np.all(first.reshape(-1, 8) == first.reshape(-1, 8)[:, :1]) and len(set(first)) == 3
    weight = script.sampled_weights(tree, visits, payoff, "group", 8)
    assert np.isfinite(np.asarray(weight)).all() and np.abs(np.asarray(weight)).sum() > 0
    # a group whose games all paid the same gets no push at all
    same = np.broadcast_to(np.asarray(payoff)[:8][:1], (8, 2))
    assert np.all(np.asarray(script.sampled_weights(tree, visits[:8], same, "group", 8)) == 0)
