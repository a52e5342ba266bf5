"""Printing numbers in lessons: rounded, so stored outputs are stable and readable."""

from __future__ import annotations

import numbers

import numpy as np
import torch

from . import _validate


def rounded(values, decimals: int = 4):
    """``values`` (a tensor, array, number or nested list) as Python floats rounded to ``decimals``.

    A tensor [n] becomes a list of n floats, [n, m] a list of lists, a 0-d tensor or a number a
    float. -0.0 is printed as 0.0.
    """
    decimals = _validate.integer(decimals, "decimals", minimum=0)
    if decimals > 8:
        raise ValueError(f"decimals must be at most 8 (float32 holds about 7 digits), got {decimals}")
    if isinstance(values, torch.Tensor):
        if values.is_complex() or values.dtype == torch.bool:
            raise TypeError(f"values must hold real numbers, got dtype {values.dtype}")
        array = values.detach().cpu().to(torch.float64).numpy()
    elif isinstance(values, bool):
        raise TypeError("values must be numbers, got a bool")
    elif isinstance(values, np.ndarray) and values.dtype.kind not in "iuf":
        raise TypeError(f"values must hold real numbers, got an array of dtype {values.dtype}")
    elif isinstance(values, (numbers.Real, np.ndarray, list, tuple)):
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError("values must be numbers or a (nested) list of numbers") from None
    else:
        raise TypeError(f"values must be a tensor, an array, a number or a list, got {type(values).__name__}")
    result = np.round(array, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0
    return result.tolist() if result.ndim else float(result)


def magnitude(value, *, rounding: float = 1e-12) -> str:
    """A difference or error as text: ``"< 1e-12"`` (the bound ``rounding``) when it is below
    it, else its size to two digits, e.g. ``"2.4e+00"``.

    A quantity that is zero up to rounding prints as that bound, never as digits: round-off's
    digits depend on the order in which the math library summed, which differs between CPUs.
    Use rounding=1e-12 for float64 work and about 1e-5 for float32 logits.
    """
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"value must be one number, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"value must be a real number, got {type(value).__name__}")
    rounding = _validate.real(rounding, "rounding", positive=True)
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"value must be finite (a size of a difference), got {value}")
    return f"< {rounding:.0e}" if abs(value) < rounding else f"{value:.1e}"


def seed_table(results, *, decimals: int = 3, row_label: str = "") -> str:
    """A trained result on several seeds, as text: one row per key of ``results``, one column per
    key of its inner mapping, each cell "mean (min–max)" over the seeds.

    results: {row: {column: [value for each seed]}}, e.g. {"rope": {"length 16": [0.98, 1.0, 0.99]}}.
    Every cell needs the same number of seeds (at least one), except a row whose cells all hold one
    value: a baseline without seeds (bigram counts, chance), shown as that value alone. The text
    fits 88 columns or raises ValueError, so a lesson's table never needs a horizontal scroll bar.
    """
    decimals = _validate.integer(decimals, "decimals", minimum=0, maximum=6)
    if not isinstance(row_label, str):
        raise TypeError(f"row_label must be a string, got {type(row_label).__name__}")
    if not isinstance(results, dict) or not results:
        raise TypeError("results must be a non-empty dict {row: {column: [one value per seed]}}")
    columns = None
    cells: dict[str, list[str]] = {}
    n_seeds = None  # of the rows with seeds; a row of single values is a baseline
    for row, inner in results.items():
        if not isinstance(inner, dict) or not inner:
            raise TypeError(f"results[{row!r}] must be a non-empty dict {{column: [one value per seed]}}")
        if columns is None:
            columns = list(inner)
        elif set(inner) != set(columns):
            raise ValueError(f"results[{row!r}] has columns {list(inner)}, the first row has {columns}")
        cells[str(row)] = []
        row_values = []
        for column in columns:
            values = np.asarray(rounded(inner[column], 8), dtype=np.float64).ravel()
            if values.size == 0 or not np.isfinite(values).all():
                raise ValueError(f"results[{row!r}][{column!r}] must hold finite numbers, one per seed")
            if row_values and values.size != row_values[0].size:
                raise ValueError(f"results[{row!r}][{column!r}] has {values.size} seeds, the row's first cell "
                                 f"{row_values[0].size}")
            row_values.append(values)
        if row_values[0].size > 1:
            if n_seeds is None:
                n_seeds = row_values[0].size
            elif row_values[0].size != n_seeds:
                raise ValueError(f"results[{row!r}] has {row_values[0].size} seeds per cell, other rows {n_seeds}")
        for values in row_values:
            mean = f"{values.mean():.{decimals}f}"
            cells[str(row)].append(mean if values.size == 1
                                   else f"{mean} ({values.min():.{decimals}f}–{values.max():.{decimals}f})")
    first = max([len(row_label), *(len(row) for row in cells)])
    width = max([len(c) for row in cells.values() for c in row] + [len(str(c)) for c in columns]) + 2
    lines = [f"{row_label:<{first}}" + "".join(f"{str(c):>{width}}" for c in columns)]
    lines += [f"{row:<{first}}" + "".join(f"{c:>{width}}" for c in row_cells) for row, row_cells in cells.items()]
    if max(len(line) for line in lines) > 88:
        raise ValueError("the table is wider than 88 columns: use fewer columns, shorter names or fewer decimals")
    return "\n".join(lines)


def per_seed_table(rows, seeds, *, title: str = "", columns=None, decimals=3, signed=()) -> str:
    """Each seed's own numbers side by side, as text: one row per key of ``rows``, one column per
    seed (or, with ``columns``, a group of sub-columns per seed), the seeds named in the header.

    rows: {row: {seed: value}}, or with ``columns`` {row: {seed: [value per sub-column]}}; a value
    is a number, a string printed as it is (a range such as "0.60-0.63"), or None for an empty
    cell. seeds: the seeds to show, in order (every row needs each). columns: the sub-columns'
    names, or None. decimals: one number, or one per sub-column. signed: the rows whose numbers
    carry their sign (differences); -0.0 prints as +0.000. Where seed_table summarises seeds as
    "mean (min–max)", this shows every seed, for results a lesson reads seed by seed. Returns the
    text, at most 88 columns wide (wider raises ValueError).
    """
    if not isinstance(title, str):
        raise TypeError(f"title must be a string, got {type(title).__name__}")
    if not isinstance(rows, dict) or not rows:
        raise TypeError("rows must be a non-empty dict {row: {seed: value}}")
    if not isinstance(seeds, (list, tuple)) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise TypeError(f"seeds must be a non-empty list of whole numbers, got {seeds!r:.60}")
    if columns is not None and (not isinstance(columns, (list, tuple)) or not columns
                                or not all(isinstance(c, str) for c in columns)):
        raise TypeError(f"columns must be a non-empty list of names or None, got {columns!r:.60}")
    if not isinstance(signed, (list, tuple, set, frozenset, dict)) or not all(
            isinstance(name, str) for name in signed):
        raise TypeError(f"signed must be a list of row names, got {signed!r:.60}")
    signed = set(signed)
    if unknown := signed - set(rows):
        raise ValueError(f"signed names rows that are not in rows: {sorted(map(str, unknown))}")
    n_sub = 1 if columns is None else len(columns)
    if isinstance(decimals, (list, tuple)):
        if len(decimals) != n_sub:
            raise ValueError(f"decimals holds {len(decimals)} numbers for {n_sub} sub-columns")
        decimals = [_validate.integer(d, "decimals", minimum=0, maximum=6) for d in decimals]
    else:
        decimals = [_validate.integer(decimals, "decimals", minimum=0, maximum=6)] * n_sub

    def cell(row, value, decimals: int) -> str:
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        if isinstance(value, (list, tuple)):
            raise TypeError(f"rows[{row!r}] holds a list: name its sub-columns with columns")
        if isinstance(value, bool) or not isinstance(value, (numbers.Real, torch.Tensor, np.floating)):
            raise TypeError(f"rows[{row!r}] holds a {type(value).__name__}; cells are numbers, strings or None")
        if isinstance(value, torch.Tensor) and value.numel() != 1:
            raise TypeError(f"rows[{row!r}] holds a tensor of shape {tuple(value.shape)}; a cell is one number")
        number = float(value)
        if not np.isfinite(number):
            raise ValueError(f"rows[{row!r}] holds {number}; cells must be finite")
        return f"{round(number, decimals) + 0.0:{'+' if row in signed else ''}.{decimals}f}"

    cells = {}
    for row, by_seed in rows.items():
        if not isinstance(by_seed, dict):
            raise TypeError(f"rows[{row!r}] must be a dict {{seed: value}}")
        if missing := [s for s in seeds if s not in by_seed]:
            raise ValueError(f"rows[{row!r}] has no value for seeds {missing}")
        cells[str(row)] = []
        for s in seeds:
            values = by_seed[s] if columns is not None else [by_seed[s]]
            if not isinstance(values, (list, tuple)) or len(values) != n_sub:
                raise ValueError(f"rows[{row!r}][{s}] must hold {n_sub} values, one per name in columns "
                                 f"{columns}")
            cells[str(row)] += [cell(row, v, d) for v, d in zip(values, decimals)]
    # each sub-column as wide as its widest entry, plus two spaces before a seed's group, one inside
    widths = [max([len(row_cells[i + j * n_sub]) for row_cells in cells.values() for j in range(len(seeds))]
                  + [len(columns[i]) if columns else 0]) + (2 if i == 0 else 1) for i in range(n_sub)]
    label = max(len(f"seed {s}") for s in seeds) + 2  # a seed's group is at least as wide as its name
    widths[0] += max(0, label - sum(widths))
    widths *= len(seeds)
    first = max([len(title), *(len(row) for row in cells)])
    lines = [f"{title:<{first}}" + "".join(f"{'seed ' + str(s):>{sum(widths[:n_sub])}}" for s in seeds)]
    if columns is not None:
        lines.append(" " * first + "".join(f"{c:>{w}}" for c, w in zip(list(columns) * len(seeds), widths)))
    lines += [f"{row:<{first}}" + "".join(f"{c:>{w}}" for c, w in zip(row_cells, widths))
              for row, row_cells in cells.items()]
    lines = [line.rstrip() for line in lines]
    if max(len(line) for line in lines) > 88:
        raise ValueError("the table is wider than 88 columns: use fewer seeds or columns, shorter names or "
                         "fewer decimals")
    return "\n".join(lines)


def claims_table(claims, *, title: str) -> str:
    """Whether each claim a lesson makes holds, seed by seed, as text: one row per claim, one
    column per seed, "yes" where it holds and "NO" where it does not. Lessons show their further
    seeds (3-5) this way: each line is a sentence of the prose with the threshold it uses.

    claims: {seed: {claim: bool}}, seeds as whole numbers, every seed naming the same claims in
    the same order. title: the header's words before the seed numbers. Returns the text;
    wider than 88 columns raises ValueError.
    """
    if not isinstance(title, str):
        raise TypeError(f"title must be a string, got {type(title).__name__}")
    if not isinstance(claims, dict) or not claims:
        raise TypeError("claims must be a non-empty dict {seed: {claim: bool}}")
    seeds = list(claims)
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise TypeError(f"claims' keys must be seeds (whole numbers), got {seeds!r:.60}")
    first = claims[seeds[0]]
    if not isinstance(first, dict) or not first:
        raise TypeError("claims[seed] must be a non-empty dict {claim: bool}")
    for s in seeds:
        if not isinstance(claims[s], dict) or list(claims[s]) != list(first):
            raise ValueError(f"claims[{s}] must name the same claims, in the same order, as "
                             f"claims[{seeds[0]}]")
        for claim, holds in claims[s].items():
            if not isinstance(claim, str):
                raise TypeError(f"claims[{s}] has a claim that is not a string: {claim!r:.40}")
            if not isinstance(holds, (bool, np.bool_)):
                raise TypeError(f"claims[{s}][{claim!r}] must be True or False, got "
                                f"{type(holds).__name__}")
    width = max([len(title), *(len(claim) for claim in first)]) + 5
    lines = [f"{title:{width}s}" + "".join(f"{s:>5d}" for s in seeds)]
    lines += [f"{claim:{width}s}" + "".join(f"{'yes' if claims[s][claim] else 'NO':>5s}"
                                            for s in seeds) for claim in first]
    if max(len(line) for line in lines) > 88:
        raise ValueError("the table is wider than 88 columns: use shorter claims or fewer seeds")
    return "\n".join(lines)


def range_means(curves, ranges, *, baselines=None) -> dict:
    """Curves by position averaged over ranges of positions, ready for ``seed_table``.

    curves: {row: [curve [n] for each seed]} (e.g. loss_by_position per seed); ranges: {column:
    (a, b)}, the positions a .. b − 1 of each curve; baselines: {row: curve [n]}, rows without
    seeds (bigram counts) added last. Returns {row: {column: [mean over a .. b − 1, per seed]}}
    (each mean in the curve's own dtype).
    """
    if not isinstance(ranges, dict) or not ranges:
        raise TypeError(f"ranges must be a non-empty dict {{column: (first, stop)}}, got {ranges!r:.60}")
    if not isinstance(curves, dict) or not curves:
        raise TypeError(f"curves must be a non-empty dict {{row: [curve per seed]}}, got {curves!r:.60}")
    if baselines is not None and not isinstance(baselines, dict):
        raise TypeError(f"baselines must be a dict {{row: curve}} or None, got {type(baselines).__name__}")
    for row, curve in (baselines or {}).items():
        if not isinstance(curve, torch.Tensor) or curve.dim() != 1:
            raise TypeError(f"baselines[{row!r}] must be one 1-D curve, got {type(curve).__name__}")
    rows = {row: list(per_seed) if isinstance(per_seed, (list, tuple)) else per_seed
            for row, per_seed in curves.items()}
    rows.update({row: [curve] for row, curve in (baselines or {}).items()})
    table = {}
    for row, per_seed in rows.items():
        if not isinstance(per_seed, list) or not per_seed or not all(
                isinstance(c, torch.Tensor) and c.dim() == 1 for c in per_seed):
            raise TypeError(f"curves[{row!r}] must be a list of 1-D curves, one per seed")
        table[row] = {}
        for column, span in ranges.items():
            if not isinstance(span, tuple) or len(span) != 2:
                raise TypeError(f"ranges[{column!r}] must be a pair (first, stop), got {span!r}")
            a = _validate.integer(span[0], f"ranges[{column!r}][0]", minimum=0)
            b = _validate.integer(span[1], f"ranges[{column!r}][1]", minimum=a + 1)
            if any(c.shape[0] < b for c in per_seed):
                raise ValueError(f"ranges[{column!r}] = {span} reaches past curves[{row!r}] "
                                 f"(length {min(c.shape[0] for c in per_seed)})")
            table[row][column] = [c[a:b].mean().item() for c in per_seed]
    return table
