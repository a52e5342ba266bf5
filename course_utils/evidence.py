"""The evidence record: what a trained section rests on, computed once, printed free.

A lesson trains its models at one budget on seeds 0-2 (or 0-5). Two questions stay:
would twice the steps change the result (the course's 2x rule), and do further seeds
agree? Answering them live would double a lesson's time, so ``python -m tools.evidence``
(``make evidence``) trains those runs once, with the lesson's own recipe, and writes
``zoo/evidence.json``; the claims tests re-run them and require the same numbers. A
lesson ends each trained section with

    print(how_we_know("05-amplitude", measured={"A = 1": {"test accuracy": [...]}, ...},
                      baselines={"chance 1/16": 1 / 16}))

which prints the budget, the baselines, the 2x table (mean of seeds 0-2 at the budget
and at twice it, the change, and the verdict against the record's tolerance), the
further seeds if the record holds them, and whether the lesson's own runs are the
record's (``measured``: the lesson's per-seed values at the budget, compared with the
record's to 3 decimals).

A section of the record (JSON) looks like

    {"what": "test accuracy on fresh 16-token sequences", "budget": "120 steps × ...",
     "steps": [120, 240], "seeds": [0, 1, 2], "tolerance": 0.01,
     "rows": {"A = 1": {"test accuracy": {"budget": [s0, s1, s2],
                                          "double": [s0, s1, s2]}}},
     "further": {"seeds": [3, 4, 5], "rows": {"rope H=4": {"n = 16": [s3, s4, s5]}}}}

where "further" may also say how its seeds were trained ("trained": "side by side").
"""

from __future__ import annotations

import functools
import json
import textwrap
from pathlib import Path

from . import _validate

RECORD = Path(__file__).resolve().parent / "zoo" / "evidence.json"
AGREE = 5e-4  # the lesson's runs are the record's if every value agrees to 3 decimals
WIDTH = 88  # the lessons' printed lines


@functools.lru_cache(maxsize=2)
def _parsed(path: Path, modified: int) -> dict:
    record = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(record, dict) or not isinstance(record.get("sections"), dict):
        raise ValueError(
            f"{path} is not an evidence record (an object with 'sections')"
        )
    return record


def evidence_record() -> dict:
    """The whole record: {"format", "made_with", "sections": {key: section}}."""
    if not RECORD.is_file():
        raise FileNotFoundError(
            f"the evidence record {RECORD} is missing: reinstall "
            "course_utils, or re-make it with `make evidence`"
        )
    return _parsed(RECORD, RECORD.stat().st_mtime_ns)


def evidence(key: str) -> dict:
    """One section of the record, e.g. evidence("10-length")."""
    sections = evidence_record()["sections"]
    return sections[_validate.choice(key, "key", tuple(sections))]


def _wrapped(text: str) -> list[str]:
    """One labelled line, wrapped to the lessons' 88 columns."""
    return textwrap.wrap(text, WIDTH, subsequent_indent=" " * 8, break_on_hyphens=False)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _span(seeds: list[int]) -> str:
    return (
        f"{seeds[0]}–{seeds[-1]}"
        if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2
        else ", ".join(map(str, seeds))
    )


def _doubled_lines(section: dict) -> list[str]:
    """The 2x table; ``steps`` null means each row names its own budget. A section with
    one column names it in the question, not on every row."""
    steps, tolerance, rows = section["steps"], section["tolerance"], section["rows"]
    short, long = steps if steps else ("budget", "2×")
    asked = (
        f"does {long} steps instead of {short}"
        if steps
        else "does twice each row's steps"
    )
    columns = list(dict.fromkeys(c for row in rows.values() for c in row))
    single = len(columns) == 1
    width = max(len(row) for row in rows) + 1
    column_width = 0 if single else max(len(c) for c in columns) + 1
    lines = [
        f"2× rule: {asked} move the mean of seeds {_span(section['seeds'])}",
        f"by at most {tolerance:g}? ({section['what']})",
        " " * (width + column_width) + f"{short:>7}{long:>7}{'change':>8}  "
        f"converged  {long}{' steps' if steps else ''}, per seed",
    ]
    for row, values_by_column in rows.items():
        for column, values in values_by_column.items():
            before, after = _mean(values["budget"]), _mean(values["double"])
            verdict = "yes" if abs(after - before) <= tolerance else "no"
            seeds = " ".join(f"{v:.2f}" for v in values["double"])
            label = "" if single else column
            lines.append(
                f"{row:<{width}}{label:>{column_width}}{before:>7.3f}"
                f"{after:>7.3f}{after - before:>+8.3f}  {verdict:<9}  {seeds}"
            )
    return lines


def _shown(value) -> str:
    """A float to 2 decimals, a count as it is, None (never reached) as "never"."""
    if value is None:
        return "never"
    return str(value) if isinstance(value, int) else f"{value:.2f}"


def _further_lines(further: dict) -> list[str]:
    seeds, rows = further["seeds"], further["rows"]
    columns = list(dict.fromkeys(c for row in rows.values() for c in row))
    cells = {
        row: [" ".join(_shown(v) for v in values.get(c, [])) for c in columns]
        for row, values in rows.items()
    }
    width = max(len(row) for row in rows) + 1
    widths = [
        max(len(c), *(len(cells[row][i]) for row in rows)) + 2
        for i, c in enumerate(columns)
    ]
    how = f", trained {further['trained']}" if further.get("trained") else ""
    lines = [
        f"seeds {_span(seeds)}, at the budget{how} (the lesson trains "
        f"{_span(further.get('lesson_seeds', [0, 1, 2]))}):",
        " " * width + "".join(f"{c:>{w}}" for c, w in zip(columns, widths)),
    ]
    for row in rows:
        lines.append(
            f"{row:<{width}}" + "".join(f"{c:>{w}}" for c, w in zip(cells[row], widths))
        )
    return lines


def _values(values, name: str) -> list[float]:
    """A list or tuple of real numbers (one per seed), as floats."""
    if not isinstance(values, (list, tuple)) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    ):
        raise TypeError(
            f"{name} must be a list of numbers, one per seed, got {values!r}"
        )
    return [float(v) for v in values]


def _agreement(section: dict, measured: dict) -> str:
    shape = "a dict {row: {column: [one value per seed]}}"
    if not isinstance(measured, dict):
        raise TypeError(f"measured must be {shape}, got {type(measured).__name__}")
    pairs = []
    for row, columns in measured.items():
        if not isinstance(columns, dict):
            raise TypeError(
                f"measured[{row!r}] must be {{column: [values]}}, got "
                f"{type(columns).__name__}"
            )
        for column, values in columns.items():
            if row not in section["rows"] or column not in section["rows"][row]:
                raise ValueError(
                    f"measured: the record has no row {row!r} with column {column!r}"
                )
            values = _values(values, f"measured[{row!r}][{column!r}]")
            recorded = section["rows"][row][column]["budget"]
            if len(values) != len(recorded):
                raise ValueError(
                    f"measured[{row!r}][{column!r}]: {len(values)} values, "
                    f"the record has {len(recorded)} (seeds "
                    f"{_span(section['seeds'])})"
                )
            pairs.extend(zip(values, recorded))
    if not pairs:
        raise ValueError(
            "measured holds no values: give the lesson's own per-seed values"
        )
    same = all(abs(a - b) <= AGREE for a, b in pairs)
    runs = f"{section['steps'][0]}-step runs" if section["steps"] else "runs"
    return (
        f"this lesson's {runs} are the record's ({len(pairs)} values, to 3 "
        f"decimals): {'yes' if same else 'NO'}"
    )


def how_we_know(
    key: str, *, measured: dict | None = None, baselines: dict[str, float] | None = None
) -> str:
    """The footer of a trained section: budget, baselines, 2x rule, further seeds.

    ``measured`` ({row: {column: [one value per seed]}}: the lesson's own values at the
    budget) adds a line saying whether they are the record's; ``baselines``
    ({name: value}) are printed as given (numbers to 3 significant digits)."""
    section = evidence(key)
    if baselines is not None and (
        not isinstance(baselines, dict)
        or not all(
            isinstance(v, (str, int, float)) and not isinstance(v, bool)
            for v in baselines.values()
        )
    ):
        raise TypeError(
            f"baselines must be a dict {{name: number or text}}, got {baselines!r}"
        )
    lines = ["How we know", *_wrapped(f"budget: {section['budget']}")]
    if baselines:
        shown = [
            f"{name} {value:.3g}"
            if isinstance(value, (int, float))
            else f"{name} {value}"
            for name, value in baselines.items()
        ]
        lines += _wrapped("baselines: " + " · ".join(shown))
    if section.get("rows"):
        lines += _doubled_lines(section)
    if section.get("further"):
        lines += _further_lines(section["further"])
    if measured is not None:
        lines.append(_agreement(section, measured))
    return "\n".join(lines)
