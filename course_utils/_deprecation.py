"""Names that moved to another module: still importable from the old one for a release, with a
DeprecationWarning that names the new place (teachers may have handed out code that imports them)."""

from __future__ import annotations

import warnings
from collections.abc import Callable


def moved(old_module: str, names: dict[str, object], *, since: str, home: str = "course_utils"
          ) -> Callable[[str], object]:
    """A module-level ``__getattr__`` for ``old_module`` that hands out ``names`` with a
    DeprecationWarning naming where each now lives (its ``__module__``; ``home`` for constants),
    and raises AttributeError for anything else."""

    def __getattr__(name: str) -> object:
        if name in names:
            value = names[name]
            new_module = getattr(value, "__module__", None) if callable(value) else home
            warnings.warn(f"{old_module}.{name} moved to {new_module}.{name} in course_utils {since}: import it "
                          f"from there, or from course_utils", DeprecationWarning, stacklevel=2)
            return value
        raise AttributeError(f"module {old_module!r} has no attribute {name!r}")

    return __getattr__
