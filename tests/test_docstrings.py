"""Every public module, function, class, method and property of ``jaxagents`` has a
docstring (the rules: ``jaxagents._public``), so the API reference has something to
say for each of them.

A method's docstring may be inherited from the method it overrides; a class needs its
own: ``dataclasses`` writes a signature, ``ClassName(field: type, ...)``, into an
undocumented dataclass's ``__doc__``, which documents nothing and counts as missing.
"""

import types

import flax.struct

from jaxagents._public import missing_docstrings


def test_public_api_has_docstrings():
    missing = missing_docstrings()
    assert not missing, f"{len(missing)} public symbols of jaxagents have no docstring:\n" + "\n".join(missing)


def test_the_check_finds_what_has_no_docstring():
    module = types.ModuleType("scratch", "A module with a docstring.")

    def documented():
        """Documented."""

    def bare():
        pass

    class Base:
        """A class."""

        def step(self):
            """Steps."""

        @property
        def size(self):
            """A size."""

    class Child(Base):
        """Overrides ``step`` and ``size`` and inherits their docstrings; ``run`` has none."""

        def step(self):
            pass

        @property
        def size(self):
            return 1

        def run(self):
            pass

    @flax.struct.dataclass
    class State:
        x: int

    for obj in (documented, bare, Base, Child, State):
        obj.__module__ = "scratch"
        setattr(module, obj.__name__, obj)
    module._private = bare  # not public
    assert missing_docstrings([module]) == ["scratch.bare", "scratch.Child.run", "scratch.State"]
    assert missing_docstrings([types.ModuleType("bare_module")]) == ["bare_module"]
