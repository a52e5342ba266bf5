"""The package's structure: the floors its docstring draws hold for every import in the code.

A module imports only modules on its own floor or below; no circle; no package import inside a
function (the usual way to hide a circle); checks/ imports nothing from the rest of the package.
"""

import ast
import re

import pytest

import course_utils
from conftest import ROOT

PACKAGE = ROOT / "course_utils"


def _floors() -> dict[str, int]:
    """{module: floor} from the table in course_utils/__init__.py's docstring."""
    floors, floor = {}, None
    for line in course_utils.__doc__.splitlines():
        match = re.match(r"^ {4}floor (\d+) {2}(.*)$", line)
        if match:
            floor, names = int(match.group(1)), match.group(2)
        elif floor is not None and re.match(r"^ {13}\S", line):
            names = line  # a continued list of names
        else:
            floor = None if not line.startswith(" " * 13) else floor
            continue
        for name in re.split(r"\s{2,}", names.strip())[0].split(","):
            if name.strip():
                floors[name.strip()] = floor
    return floors


def _module(path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1]) if parts[-1] == "__init__" and len(parts) > 1 else ".".join(parts)


def _imports(path) -> list[tuple[str, bool, int]]:
    """(imported package module, inside a function?, line) for every import of the package."""
    module = _module(path)
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    if path.name == "__init__.py" and path.parent == PACKAGE:
        package = []
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[:len(package) - (child.level - 1)] if child.level > 1 else package
                    target = ".".join([*base, *(child.module.split(".") if child.module else [])])
                    if child.module is None:  # from . import x, y
                        targets = [".".join([*base, alias.name]) for alias in child.names]
                    else:
                        targets = [target]
                elif child.module and child.module.split(".")[0] == "course_utils":
                    targets = [child.module.split(".", 1)[1] if "." in child.module else "__init__"]
                else:
                    targets = []
                found.extend((t, inner, child.lineno) for t in targets)
            elif isinstance(child, ast.Import):
                found.extend((alias.name.split(".", 1)[1] if "." in alias.name else "__init__", inner, child.lineno)
                             for alias in child.names if alias.name.split(".")[0] == "course_utils")
            visit(child, inner)

    visit(ast.parse(path.read_text()), False)
    return [(target or "__init__", inner, line) for target, inner, line in found]


def _graph() -> dict[str, list[tuple[str, bool, int]]]:
    return {_module(path): _imports(path) for path in sorted(PACKAGE.rglob("*.py"))}


def _floor(module: str, floors: dict[str, int]) -> int | None:
    name = module.split(".")[0] if module.split(".")[0] in ("widgets",) else module
    return floors.get(name)


def test_the_docstring_gives_every_module_a_floor():
    floors = _floors()
    modules = {m for m in _graph() if not m.startswith("checks")}
    missing = sorted(m for m in modules if _floor(m, floors) is None)
    assert not missing, f"add these modules to the floor table in course_utils/__init__.py: {missing}"
    assert floors["_validate"] == 1 and floors["models"] > floors["rope"] > floors["_validate"]


def test_every_import_runs_down_or_across():
    floors, upward = _floors(), []
    for module, imports in _graph().items():
        if module.startswith("checks"):
            continue
        for target, _, line in imports:
            if _floor(target, floors) > _floor(module, floors):
                upward.append(f"{module}.py:{line} imports {target} (floor {_floor(target, floors)} above "
                              f"{_floor(module, floors)})")
    assert not upward, "imports that run back up:\n" + "\n".join(upward)


def test_no_package_import_hides_inside_a_function():
    hidden = [f"{module}.py:{line} imports {target} inside a function"
              for module, imports in _graph().items() for target, inner, line in imports if inner]
    assert not hidden, "\n".join(hidden)


def test_no_circle():
    graph = {module: sorted({target for target, _, _ in imports if target != module})
             for module, imports in _graph().items()}
    state, path = {}, []

    def visit(module):
        state[module] = "open"
        path.append(module)
        for target in graph.get(module, []):
            if state.get(target) == "open":
                cycle = path[path.index(target):] + [target]
                pytest.fail("a circle of imports: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        path.pop()
        state[module] = "done"

    for module in graph:
        if module not in state:
            visit(module)


def test_checks_import_nothing_from_the_rest_of_the_package():
    leaks = [f"{module}.py:{line} imports {target}" for module, imports in _graph().items()
             if module.startswith("checks") for target, _, line in imports if not target.startswith("checks")]
    assert not leaks, "homework checks must keep independent references:\n" + "\n".join(leaks)


def test_no_module_is_over_450_lines():
    long = {str(path.relative_to(ROOT)): n for path in PACKAGE.rglob("*.py")
            if (n := len(path.read_text().splitlines())) > 450}
    assert not long, f"split these modules (one concept each, under ~450 lines): {long}"


def test_the_check_catches_an_upward_import(tmp_path, monkeypatch):
    """The test above can fail: a floor-2 module that imported models would be named."""
    floors = _floors()
    assert _floor("models", floors) > _floor("rope", floors)
    fake = {"rope": [("models", False, 1)], "models": []}
    monkeypatch.setattr(__import__(__name__), "_graph", lambda: fake)
    with pytest.raises(AssertionError, match="rope.py:1 imports models"):
        test_every_import_runs_down_or_across()


@pytest.mark.parametrize("old, name, new", [
    ("attention_positions", "alibi_bias", "biases"), ("attention_positions", "alibi_slopes", "biases"),
    ("attention_positions", "RelativeBias", "biases"), ("attention_positions", "rope_rotate", "rope"),
    ("vision", "rope_rotate_2d", "grid_codes"), ("vision", "RESIZE_MODES", "grid_codes"),
    ("models", "LearnedPosition", "input_codes"), ("models", "SinusoidalPosition", "input_codes"),
    ("reproducible", "exact_matmul", "exact"), ("reproducible", "on_grid", "exact"),
    ("reproducible", "grid_split", "exact"),
])
def test_a_moved_name_still_imports_from_its_old_module_with_a_warning(old, name, new):
    """Names that 0.2 moved down a floor stay importable where they were, for a release, and the
    warning says where they live now (CHANGELOG.md lists every move)."""
    import importlib

    old_module, new_module = (importlib.import_module(f"course_utils.{m}") for m in (old, new))
    with pytest.warns(DeprecationWarning, match=rf"course_utils\.{old}\.{name} moved to course_utils\.{new}\.{name}"):
        value = getattr(old_module, name)
    assert value is getattr(new_module, name)
    with pytest.raises(AttributeError):
        getattr(old_module, "no_such_name")
