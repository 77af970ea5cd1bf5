""".ci/run: the README's test command, then the slow suite; a red suite fails CI,
an empty slow suite (pytest's exit status 5) does not."""

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


@pytest.mark.parametrize("fast, slow, expected", [(0, 0, 0), (0, 5, 0), (0, 1, 1), (1, 0, 1), (2, 5, 2)])
def test_ci_exit_status(tmp_path, fast, slow, expected):
    """The script run with a stub for the install and pytest (exit statuses given)."""
    ci = tmp_path / ".ci"
    ci.mkdir()
    body = _read(".ci/run").replace("rm -rf .venv\n", "").replace("python3 -m venv .venv && .venv/bin/pip install -e \".[test]\" && ", "")
    (ci / "run").write_text(body)
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text(f"#!/bin/sh\ncase \"$*\" in *'-m slow'*) exit {slow};; *) exit {fast};; esac\n")
    os.chmod(venv / "python", 0o755)
    assert subprocess.run(["bash", str(ci / "run")], capture_output=True).returncode == expected
