"""Independent float64 references for the economy tests, written from the spec
(shared by the taxation and policy tests through the ``ref`` fixture)."""

from types import SimpleNamespace

import numpy as np
import pytest


def tax_reference(z, rates, cutoffs):
    """The spec: T(z) = sum_b tau_b * clip(z - c_b, 0, c_{b+1} - c_b), float64 loops."""
    z = np.asarray(z, np.float64)
    out = np.zeros_like(z)
    for b in range(len(cutoffs)):
        width = (cutoffs[b + 1] - cutoffs[b]) if b + 1 < len(cutoffs) else np.inf
        out += rates[b] * np.clip(z - cutoffs[b], 0, width)
    return out


def utility_reference(post, hours, kind, unit=1000.0, c=0.0005, delta=3.5, eta=0.23, kappa=0.21):
    """Quasi-linear ``post/unit - (c/unit) l^delta`` or isoelastic utility, float64."""
    post, hours = np.asarray(post, np.float64), np.asarray(hours, np.float64)
    if kind == "quasi_linear":
        return post / unit - c / unit * hours**delta
    x = np.maximum(post / unit, 1e-6)
    return (x ** (1 - eta) - 1) / (1 - eta) - kappa * hours


@pytest.fixture(scope="session")
def ref():
    return SimpleNamespace(tax=tax_reference, utility=utility_reference)
