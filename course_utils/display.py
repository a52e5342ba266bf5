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
