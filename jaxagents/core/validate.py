"""Argument checks shared by configs, wrappers and environments.

Every check raises a one-line ``ValueError`` that names the argument, what is
allowed and what was given, and returns the value converted to the plain Python
type (so ``np.int64(4)`` passes as ``4``, and a bool never passes as a number).
Use these instead of writing ``isinstance(v, int) and v >= 1`` again.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Iterable

_TRUE = ("true", "yes", "on", "1", "y", "t")
_FALSE = ("false", "no", "off", "0", "n", "f")


def _bounds(low, high, low_open: bool = False, high_open: bool = False) -> str:
    f = lambda x: f"{x:g}" if isinstance(x, float) else str(x)  # noqa: E731
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{f(low)}, {f(high)}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {f(low)}"
    if high is not None:
        return f"{'<' if high_open else '<='} {f(high)}"
    return ""


def is_int(value: Any) -> bool:
    """An integer (Python or NumPy), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None, none_ok: bool = False) -> int | None:
    """``value`` as an ``int`` within ``[low, high]`` (either bound optional)."""
    if value is None and none_ok:
        return None
    bounds = _bounds(low, high)
    allowed = "a positive int" if (low, high) == (1, None) else "an int" + (f" {bounds}" if bounds else "")
    if none_ok:
        allowed = f"None or {allowed}"
    if not is_int(value):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        raise ValueError(f"{name} must be {allowed}, got {v!r}")
    return v


def check_positive_int(name: str, value: Any, *, none_ok: bool = False) -> int | None:
    """``value`` as an ``int >= 1``."""
    return check_int(name, value, low=1, none_ok=none_ok)


def check_float(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    none_ok: bool = False,
) -> float | None:
    """``value`` as a finite ``float`` within the bounds (``*_open``: strict)."""
    if value is None and none_ok:
        return None
    bounds = _bounds(low, high, low_open, high_open)
    allowed = "a finite number" + (f" {bounds}" if bounds else "")
    if none_ok:
        allowed = f"None or {allowed}"
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    v = float(value)
    bad = not math.isfinite(v)
    bad |= low is not None and (v <= low if low_open else v < low)
    bad |= high is not None and (v >= high if high_open else v > high)
    if bad:
        raise ValueError(f"{name} must be {allowed}, got {v!r}")
    return v


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a ``bool``: a bool, a 0/1 integer, or one of the usual spellings
    (``true/false``, ``yes/no``, ``on/off``, ``1/0``, any case) -- what a shell gives."""
    if isinstance(value, bool):
        return value
    if is_int(value) and int(value) in (0, 1):
        return bool(value)
    if isinstance(value, str):
        s = value.strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
    raise ValueError(f"{name} must be True or False (or true/false, yes/no, on/off, 1/0), got {value!r}")


def check_choice(name: str, value: Any, allowed: Iterable) -> Any:
    """``value`` if it is one of ``allowed``."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value
