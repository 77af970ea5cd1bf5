"""Shared test set-up: CPU only, quieter JAX, and cheaper compiles.

The suite is dominated by XLA compile time on 2 CPU cores. Turning XLA's backend
optimisations off cuts the CPU time of compiling by about a quarter, and the tests
run small programs, so they lose nothing by it. Benchmarks never run under this flag.
"""

import importlib.util
import os
import sys

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_TEST_FLAG = "--xla_backend_optimization_level=0"
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _TEST_FLAG).strip()


# Property tests draw the same examples on every run (CI must not go red by chance);
# set HYPOTHESIS_PROFILE=explore to search new examples locally.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# The longest test files run first. CI runs `-n 2 --dist loadfile --no-loadscope-reorder`:
# xdist hands whole files to the two workers in collection order (by default it would
# order them by their number of tests, which put the notebooks, ~3 minutes in 6 tests,
# last, running alone while the other worker idled). Longest first balances the two
# workers. Only the order changes; every test still runs.
_LONG_FIRST = ("test_notebooks.py", "test_conformance.py", "learners/test_runner.py", "learners/test_ppo.py",
               "test_faults.py", "population/test_multihost_run.py", "economy/test_econgym_tasks.py")


@pytest.hookimpl(tryfirst=True)  # before -m selects
def pytest_collection_modifyitems(session, config, items):
    # Three tiers: the default suite (10 minutes), `-m slow` (CI's second suite) and
    # `-m heavy` (the rest). A test combining a heavy parameter with a slow one (stacked
    # parametrize) is heavy only, so that `-m slow` keeps to its budget.
    for item in items:
        if item.get_closest_marker("heavy") is not None:
            item.own_markers[:] = [m for m in item.own_markers if m.name != "slow"]

    def rank(item):
        path = item.nodeid.split("::")[0]
        for i, name in enumerate(_LONG_FIRST):
            if path.endswith(name):
                return i
        return len(_LONG_FIRST)

    items.sort(key=rank)  # stable: the order within each file and among the rest is kept


# No quiet skips in CI. `.ci/run` sets JAXAGENTS_NO_SKIPS=1: a test that skips there
# fails instead (a reference package that did not install would otherwise turn ~45
# parity tests into skips and leave CI green), unless it is on this short list of
# skips that depend on the machine, not on the project. Each entry: the test's node id
# (a prefix) and why it may skip.
SKIP_ALLOWED = {
    "tests/test_bad_inputs.py::test_missing_log_package_before_any_directory":
        "checks the error for a missing TensorBoard writer: cannot run where one is installed",
}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and os.environ.get("JAXAGENTS_NO_SKIPS")) or hasattr(report, "wasxfail"):
        return
    if any(item.nodeid.startswith(allowed) for allowed in SKIP_ALLOWED):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (f"skipped ({reason}), and JAXAGENTS_NO_SKIPS forbids skips outside SKIP_ALLOWED "
                       f"(tests/conftest.py): install what it needs (the test extra) or fix the test")


# Scripts under experiments/ are not a package: tests load one by path.
_EXPERIMENTS = os.path.join(os.path.dirname(__file__), "..", "experiments")


@pytest.fixture(scope="session")
def experiment_script():
    """``experiment_script("estimators")`` -> experiments/estimators.py as a module
    named ``estimators_script`` (registered in ``sys.modules``, where dataclasses look their
    module up; a script parses its arguments only under ``__main__``)."""

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"{name}_script", os.path.join(_EXPERIMENTS, f"{name}.py"))
        sys.modules[spec.name] = mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load


@pytest.fixture(scope="session")
def user_env():
    """``os.environ`` without the suite's compile flag: for a subprocess that runs a long
    program as a user would (the README's default run trains for about a minute with
    XLA's optimisations, over three minutes without them)."""
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if f != _TEST_FLAG)
    return {**os.environ, "XLA_FLAGS": flags}
