"""Every public module, function, class, method and property of ``jaxagents`` has a
docstring.

Public means: the module's dotted name has no component starting with ``_``, and the
symbol's name does not start with ``_``. Only symbols defined in the module they are
found in are checked (``obj.__module__``), so a re-export is checked once, where it is
defined. A method's docstring may be inherited from the method it overrides (as
``inspect.getdoc`` does); a class needs its own: ``dataclasses`` writes a signature,
``ClassName(field: type, ...)``, into an undocumented dataclass's ``__doc__``, which
documents nothing and counts as missing.
"""

import dataclasses
import functools
import importlib
import inspect
import pkgutil

import jaxagents


def _public_modules():
    yield jaxagents
    for info in pkgutil.walk_packages(jaxagents.__path__, "jaxagents."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        yield importlib.import_module(info.name)


def _auto_class_doc(cls) -> bool:
    """True when ``cls.__doc__`` is missing or what ``dataclasses``/``namedtuple``
    write for an undocumented class."""
    doc = cls.__doc__
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


def _member_doc(cls, name, value) -> str | None:
    """The docstring of the attribute ``name`` of ``cls``, inherited from a base class
    when the override has none (for properties too, which ``inspect.getdoc`` does not
    follow)."""
    if isinstance(value, (property, functools.cached_property)):
        if value.__doc__:
            return value.__doc__
        for base in cls.__mro__[1:]:
            if name in vars(base):
                doc = inspect.getdoc(vars(base)[name])
                if doc:
                    return doc
        return None
    return inspect.getdoc(getattr(cls, name))


def _is_member(value) -> bool:
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    return inspect.isfunction(value) or isinstance(value, (property, functools.cached_property))


def _is_function(obj) -> bool:
    # jax.jit and functools.wraps wrappers are callables that keep the function in __wrapped__
    return inspect.isfunction(obj) or (callable(obj) and inspect.isfunction(getattr(obj, "__wrapped__", None)))


def missing_docstrings() -> list[str]:
    """Dotted paths of the public symbols of ``jaxagents`` without a docstring."""
    missing = []
    for module in _public_modules():
        name = module.__name__
        if not inspect.getdoc(module):
            missing.append(name)
        for attr, obj in vars(module).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != name:
                continue
            if inspect.isclass(obj):
                if _auto_class_doc(obj):
                    missing.append(f"{name}.{attr}")
                for member, value in vars(obj).items():
                    if not member.startswith("_") and _is_member(value) and not _member_doc(obj, member, value):
                        missing.append(f"{name}.{attr}.{member}")
            elif _is_function(obj) and not inspect.getdoc(obj):
                missing.append(f"{name}.{attr}")
    return missing


def test_public_api_has_docstrings():
    missing = missing_docstrings()
    assert not missing, f"{len(missing)} public symbols of jaxagents have no docstring:\n" + "\n".join(missing)
