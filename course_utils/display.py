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
