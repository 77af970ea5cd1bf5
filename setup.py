"""Which packages install, and under which import names.

The folders ``environments/`` and ``baselines/`` install as the import names
``jaxagents_environments`` and ``jaxagents_baselines``: as plain ``environments`` and
``baselines`` they would shadow, or be shadowed by, packages researchers already
have (OpenAI's ``baselines`` imports as ``baselines``). Everything else about the
project is in ``pyproject.toml``.
"""

from setuptools import find_packages, setup

RENAMED = {"environments": "jaxagents_environments", "baselines": "jaxagents_baselines"}


def packages() -> list[str]:
    out = find_packages(include=["jaxagents", "jaxagents.*"])
    for folder, name in RENAMED.items():
        out += [name + p[len(folder):] for p in find_packages(include=[folder, folder + ".*"])]
    return out


setup(
    packages=packages(),
    package_dir={name: folder for folder, name in RENAMED.items()},
    package_data={"jaxagents_baselines": ["configs/*.yaml", "configs/econ/*.yaml"],
                  "jaxagents_environments": ["economy/econgym/data/*.npz"]},
)
