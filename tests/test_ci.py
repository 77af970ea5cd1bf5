""".ci/run: the README's test command, then the slow suite, then the documentation
site, the smoke set on the lowest versions and the README test command on Python 3.12 (.ci/docs, .ci/versions); a
red suite or check fails CI, an empty slow suite (pytest's exit status 5) does not."""

import os
import subprocess

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")


def _read(name):
    with open(os.path.join(ROOT, name)) as f:
        return f.read()


def test_ci_runs_the_readme_test_command_then_the_slow_suite():
    script = _read(".ci/run")
    readme_test = [line for line in _read("README.md").splitlines() if "pytest" in line and line.startswith("python3 -m venv")]
    assert readme_test and readme_test[0] in script
    assert script.index(readme_test[0]) < script.index("pytest -q -m slow")


@pytest.mark.parametrize("fast, slow, docs, versions, expected", [
    (0, 0, 0, 0, 0), (0, 5, 0, 0, 0), (0, 1, 0, 0, 1), (1, 0, 0, 0, 1), (2, 5, 0, 0, 2),
    (0, 0, 1, 0, 1), (0, 0, 0, 1, 1), (0, 5, 1, 1, 1),
])
def test_ci_exit_status(tmp_path, fast, slow, docs, versions, expected):
    """The script run with stubs for the install, pytest and the two extra checks
    (.ci/docs, .ci/versions; exit statuses given): each check fails the run."""
    ci = tmp_path / ".ci"
    ci.mkdir()
    body = _read(".ci/run").replace("rm -rf .venv\n", "").replace("python3 -m venv .venv && .venv/bin/pip install -e \".[test]\" && ", "")
    (ci / "run").write_text(body)
    for name, code in (("docs", docs), ("versions", versions)):
        (ci / name).write_text(f"#!/bin/sh\nexit {code}\n")
        os.chmod(ci / name, 0o755)
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text(f"#!/bin/sh\ncase \"$*\" in *'-m slow'*) exit {slow};; *) exit {fast};; esac\n")
    os.chmod(venv / "python", 0o755)
    assert subprocess.run(["bash", str(ci / "run")], capture_output=True).returncode == expected


# the import name of every reference implementation in the test extra (pyproject.toml)
REFERENCES = {"jaxmarl": "jaxmarl", "open-spiel": "pyspiel", "pgx": "pgx", "lbforaging": "lbforaging",
              "rware": "rware", "overcooked-ai": "overcooked_ai_py.mdp.overcooked_mdp",
              # not a reference itself: jaxmarl's dependency, bounded so that it does not cap jax
              "gymnax": "gymnax.environments.spaces"}
# the rest of the test extra: test tooling, not references
TOOLING = {"pytest", "pytest-xdist", "hypothesis", "nbclient", "nbformat", "ipykernel"}


def _test_extra():
    import re
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extra = tomllib.load(f)["project"]["optional-dependencies"]["test"]
    return [re.split(r"[<>=!~ \[;]", req, maxsplit=1)[0].strip() for req in extra]


def test_every_reference_package_of_the_test_extra_imports():
    """A reference package that failed to install fails here, whatever the parity
    tests' importorskip would make of it (and JAXAGENTS_NO_SKIPS fails those too)."""
    import importlib

    names = _test_extra()
    assert set(names) - TOOLING == set(REFERENCES), "name the import of every reference package in REFERENCES"
    failed = {}
    for dist, module in REFERENCES.items():
        try:
            importlib.import_module(module)
        except Exception as e:  # noqa: BLE001 -- any failure to import is the finding
            failed[dist] = f"{type(e).__name__}: {e}"
    assert not failed, f"reference packages of the test extra that do not import: {failed}"


def test_ci_sets_the_no_skip_rule():
    script = _read(".ci/run")
    assert "export JAXAGENTS_NO_SKIPS=1" in script
    assert script.index("export JAXAGENTS_NO_SKIPS=1") < script.index("pytest -q")


@pytest.mark.parametrize("no_skips, allowed, expected", [(False, False, 0), (True, False, 1), (True, True, 0)])
def test_a_skip_fails_under_the_no_skip_rule(tmp_path, no_skips, allowed, expected):
    """tests/conftest.py's hook, run by a pytest of its own on a test that skips: a
    failure under JAXAGENTS_NO_SKIPS unless the test is on SKIP_ALLOWED; pytest's own
    summary still closes the output."""
    import sys

    conftest = _read("tests/conftest.py")
    if allowed:
        conftest = conftest.replace("SKIP_ALLOWED = {", 'SKIP_ALLOWED = {\n    "test_skips.py::test_skips": "for the test",')
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_skips.py").write_text("import pytest\n\ndef test_skips():\n    pytest.importorskip('no_such_module_x')\n"
                                           "\ndef test_runs():\n    assert True\n")
    env = {k: v for k, v in os.environ.items() if k != "JAXAGENTS_NO_SKIPS"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the hook needs no plugin: 0.5 s a run instead of 2-8 s
    if no_skips:
        env["JAXAGENTS_NO_SKIPS"] = "1"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "test_skips.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == expected, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert ("1 failed, 1 passed" if expected else ("1 passed, 1 skipped" if not no_skips or allowed else "")) in last, last
