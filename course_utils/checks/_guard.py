"""No shortcuts: while a check runs an answer, the course's own code is switched off.

Every lesson imports the course's implementation of what its exercises ask for
(``sinusoidal_encoding`` beside the exercise that asks for it), so a one-line answer
that calls it would score. While ``call`` runs an answer, every function of the course's
lesson modules (all of ``course_utils`` but the infrastructure in ``INFRASTRUCTURE``)
raises instead of computing: its code object is swapped for a stand-in and put back
afterwards. Because the function object itself changes, no alias, default argument,
closure or other course function that calls it can reach the real one. An exercise that
hands the learner a course function as a tool (lesson 11's decode step rotates with
``rope_rotate``) names it in ``allow``: that one runs, with the whole course switched
back on while it does.

The checks still import nothing from the rest of the package: the modules are found in
``sys.modules`` (already imported by the lesson), and only switched off, never called.
"""

from __future__ import annotations

import contextlib
import sys
import types

# Modules an answer may use: they compute no exercise's answer (argument checks, the
# session, display and figures, the float32/float64 arithmetic every model runs on, the
# model family, the training loop, data and the zoo).
INFRASTRUCTURE = frozenset(
    {
        "_validate",
        "_deprecation",
        "session",
        "display",
        "plots",
        "widgets",
        "reproducible",
        "models",
        "vit",
        "input_codes",
        "training",
        "tasks",
        "corpus",
        "digits",
        "zoo",
        "checks",
    }
)
# The message a stand-in raises with; ``call`` turns it into the learner's one line.
MARKER = "course shortcut: "
# The name under which an allowed function's module holds the guard's way back in.
_HOOK = "__course_guard_hook__"


def _stand_in(*args, **kwargs):
    """What a switched-off course function runs: it raises, naming itself."""
    raise RuntimeError(
        "course shortcut: " + __import__("sys")._getframe(0).f_code.co_qualname
    )


def _allowed(*args, **kwargs):
    """What an allowed course function runs: the guard's hook, which runs the real one.
    """
    return __course_guard_hook__(
        __import__("sys")._getframe(0).f_code.co_qualname, args, kwargs
    )


def _innermost(function):
    """The function a decorator (functools.wraps, torch.no_grad) finally calls."""
    seen = set()
    while hasattr(function, "__wrapped__") and id(function) not in seen:
        seen.add(id(function))
        function = function.__wrapped__
    return function


def _course_functions(allow: frozenset) -> list[types.FunctionType]:
    """Every plain function (module level or a class's method) of the loaded lesson
    modules of the course (less the modules in ``allow``), decorators looked through,
    each once."""
    found = {}
    for name, module in list(sys.modules.items()):
        parts = name.split(".")
        if parts[0] != "course_utils" or len(parts) < 2 or module is None:
            continue
        if parts[1] in INFRASTRUCTURE or parts[1] in allow:
            continue
        values = list(vars(module).values())
        for value in list(values):
            if isinstance(value, type) and value.__module__ == name:
                values.extend(vars(value).values())
        for value in values:
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            function = _innermost(value)
            if (
                isinstance(function, types.FunctionType)
                and function.__module__ == name
                and not function.__code__.co_freevars
            ):
                found[id(function)] = function
    return list(found.values())


@contextlib.contextmanager
def course_switched_off(allow=()):
    """Within the block, the course's lesson functions raise RuntimeError(MARKER +
    name), except those named in ``allow`` (their __name__), which run with the course
    on."""
    swapped, hooked = [], []

    def switch(on: bool) -> None:
        for function, code, stand_in in swapped:
            function.__code__ = code if on else stand_in

    def hook_for(functions: dict):
        def run(qualname, args, kwargs):
            switch(True)
            try:
                return functions[qualname](*args, **kwargs)
            finally:
                switch(False)

        return run

    try:
        allowed: dict[int, dict] = {}
        for function in _course_functions(frozenset()):
            if function.__name__ in allow:
                stand_in = _allowed.__code__
                allowed.setdefault(id(function.__globals__), {})[
                    function.__qualname__
                ] = function
                if _HOOK not in function.__globals__:
                    hooked.append(function.__globals__)
            else:
                stand_in = _stand_in.__code__
            stand_in = stand_in.replace(
                co_name=function.__name__, co_qualname=function.__qualname__
            )
            swapped.append((function, function.__code__, stand_in))
        for namespace in hooked:
            namespace[_HOOK] = hook_for(allowed[id(namespace)])
        switch(False)
        yield
    finally:
        switch(True)
        for namespace in hooked:
            namespace.pop(_HOOK, None)


def shortcut_in(exc: BaseException) -> str | None:
    """The course function an answer called while switched off, or None."""
    text = str(exc) if isinstance(exc, RuntimeError) else ""
    return text[len(MARKER) :] if text.startswith(MARKER) else None
