"""The public surface of ``jaxagents`` and its documentation, defined once for the two
checks that keep it documented: ``tests/test_docstrings.py`` (every public symbol has a
docstring) and ``docs/check_site.py`` (every public name has an entry in the built API
reference).

Public means: the module's dotted name has no component starting with ``_``, and the
symbol's name does not start with ``_``. Only symbols defined in the module they are
found in count (``obj.__module__``), so a re-export is checked once, where it is
defined.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import pkgutil
from types import ModuleType


def public_modules(package: str = "jaxagents") -> list[ModuleType]:
    """Every importable module of ``package`` whose dotted name has no part starting with
    an underscore, the package itself first."""
    root = importlib.import_module(package)
    modules = [root]
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            modules.append(importlib.import_module(info.name))
    return modules


def _is_member(value) -> bool:
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    return inspect.isfunction(value) or isinstance(value, (property, functools.cached_property))


def _is_function(obj) -> bool:
    # jax.jit and functools.wraps wrappers are callables that keep the function in __wrapped__
    return inspect.isfunction(obj) or (callable(obj) and inspect.isfunction(getattr(obj, "__wrapped__", None)))


def defined_symbols(module: ModuleType, exported_only: bool = False) -> dict[str, object]:
    """The classes and functions that ``module`` defines under a public name. With
    ``exported_only``, of those only the names in ``__all__`` where the module has one
    (what the API reference shows: autodoc follows ``__all__``)."""
    names = getattr(module, "__all__", None) if exported_only else None
    found = {}
    for attr, obj in vars(module).items():
        if attr.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if (names is None or attr in names) and (inspect.isclass(obj) or _is_function(obj)):
            found[attr] = obj
    return found


def public_members(cls: type) -> list[str]:
    """The methods and properties that ``cls`` itself defines under a public name."""
    return [name for name, value in vars(cls).items() if not name.startswith("_") and _is_member(value)]


def _auto_class_doc(cls) -> bool:
    """True when ``cls.__doc__`` is missing or what ``dataclasses``/``namedtuple``
    write for an undocumented class (a signature, ``ClassName(field: type, ...)``,
    which documents nothing)."""
    doc = vars(cls).get("__doc__")
    if not doc or not doc.strip():
        return True
    if dataclasses.is_dataclass(cls):
        try:
            auto = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            auto = None
        if doc == auto or (auto is None and doc.startswith(cls.__name__ + "(")):
            return True
    fields = getattr(cls, "_fields", None)
    return issubclass(cls, tuple) and fields is not None and doc == f"{cls.__name__}({', '.join(fields)})"


def _member_doc(cls, name) -> str | None:
    """The docstring of the attribute ``name`` of ``cls``, inherited from the first base
    class along the MRO that documents it when the override has none (for properties
    too, which ``inspect.getdoc`` does not follow)."""
    for base in cls.__mro__:
        value = vars(base).get(name)
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        doc = getattr(value, "__doc__", None) if value is not None else None
        if doc and doc.strip():
            return doc
    return None


def missing_docstrings(modules: list[ModuleType] | None = None) -> list[str]:
    """Dotted paths of the public modules, classes, functions, methods and properties
    among ``modules`` (default: all of ``jaxagents``) that have no docstring."""
    missing = []
    for module in public_modules() if modules is None else modules:
        name = module.__name__
        if not inspect.getdoc(module):
            missing.append(name)
        for attr, obj in defined_symbols(module).items():
            if inspect.isclass(obj):
                if _auto_class_doc(obj):
                    missing.append(f"{name}.{attr}")
                missing += [f"{name}.{attr}.{m}" for m in public_members(obj) if not _member_doc(obj, m)]
            elif not inspect.getdoc(obj):
                missing.append(f"{name}.{attr}")
    return missing
