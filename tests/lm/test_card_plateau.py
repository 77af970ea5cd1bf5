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
