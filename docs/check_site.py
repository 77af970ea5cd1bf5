"""Check a built site: every public module, function, class and method of ``jaxagents``
has an entry in the API reference, and every registered environment id has its page in
the environment reference, as ``docs/environments/generate.py`` writes it today.

    sphinx-build -W --keep-going -b html docs docs/_build/html && python docs/check_site.py

Sphinx's ``-W`` already fails on a broken reference or a docstring that does not parse;
this catches what it cannot see: a public name that no page documents (a module left
out of the autosummary tree, a class excluded by a wrong ``__all__``).
"""

import argparse
import inspect
import os
import sys

from sphinx.util.inventory import InventoryFile

from jaxagents._public import defined_symbols, public_members, public_modules


def expected_entries() -> set[str]:
    """Dotted names the API reference must hold."""
    names = set()
    for module in public_modules():
        names.add(module.__name__)
        for name, obj in defined_symbols(module, exported_only=True).items():
            names.add(f"{module.__name__}.{name}")
            if inspect.isclass(obj):
                names.update(f"{module.__name__}.{name}.{attr}" for attr in public_members(obj))
    return names


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", default=os.path.join(os.path.dirname(__file__), "_build", "html"),
                        help="the built site (default: docs/_build/html)")
    args = parser.parse_args(argv)
    with open(os.path.join(args.html, "objects.inv"), "rb") as f:
        inventory = InventoryFile.load(f, "", os.path.join)
    documented = {name for kind, entries in inventory.items() if kind.startswith("py:") for name in entries}
    missing = sorted(expected_entries() - documented)
    for name in missing:
        print(f"not in the API reference: {name}", file=sys.stderr)
    print(f"{len(expected_entries()) - len(missing)} of {len(expected_entries())} public names documented")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "environments"))
    import generate

    envs_ok = generate.main(["--check"]) == 0  # a registered id without its page, or a stale page
    return 1 if missing or not envs_ok else 0


if __name__ == "__main__":
    sys.exit(main())
