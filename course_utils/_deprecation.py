"""Names that moved to another module: still importable from the old one for a release, with a
DeprecationWarning that names the new place (teachers may have handed out code that imports them)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable


def moved(old_module: str, names: dict[str, object], *, since: str) -> Callable[[str], object]:
    """A module-level ``__getattr__`` for ``old_module`` that hands out ``names`` with a
    DeprecationWarning naming where each now lives: a function's or class's ``__module__``; for a
    constant, give the pair (value, new module's name). Anything else raises AttributeError."""

    def __getattr__(name: str) -> object:
        if name in names:
            value = names[name]
            if callable(value):
                new_module = value.__module__
            else:
                value, new_module = value
            package = sys.modules.get("course_utils")
            also = ", or from course_utils" if package is not None and hasattr(package, name) else ""
            warnings.warn(f"{old_module}.{name} moved to {new_module}.{name} in course_utils {since}: import it "
                          f"from there{also}", DeprecationWarning, stacklevel=2)
            return value
        raise AttributeError(f"module {old_module!r} has no attribute {name!r}")

    return __getattr__
