"""Argument checks shared by the public functions.

Each helper raises ``TypeError`` (wrong kind of object) or ``ValueError`` (right kind,
wrong value or shape) with a message that names the argument and says what was expected,
so a learner never sees an IndexError or a shape error from deep inside torch.
"""

from __future__ import annotations

import numbers

import torch

# Refuse sizes that would exhaust memory before anything is allocated.
MAX_ELEMENTS = 50_000_000
# Refuse loop counts (training steps, evaluation batches) that would run for days.
MAX_STEPS = 100_000
# torch.Generator.manual_seed takes an unsigned 64-bit seed.
MAX_SEED = 2**64 - 1

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def integer(value, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as a Python int, refusing bools, floats and anything outside ``minimum`` .. ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, torch.Tensor) and value.ndim == 0 and not value.is_floating_point() \
                and not value.is_complex() and value.dtype != torch.bool:
            value = int(value.item())
        else:
            raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum:,}, got {value:,}")
    return value


def seed(value, name: str = "seed") -> int:
    """A seed for torch.Generator.manual_seed: an integer in 0 .. 2**64 - 1."""
    return integer(value, name, minimum=0, maximum=MAX_SEED)


def steps(value, name: str) -> int:
    """A loop count (training steps, batches): 1 .. MAX_STEPS, so a typo cannot run for days."""
    return integer(value, name, minimum=1, maximum=MAX_STEPS)


def flag(value, name: str) -> bool:
    """True or False, nothing else (not 0/1, not None)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


def d_model(value, name: str = "d_model") -> int:
    """A positive even model width: the sinusoidal code is made of (sin, cos) pairs."""
    value = integer(value, name)
    if value <= 0 or value % 2:
        raise ValueError(f"{name} must be a positive even number (sin/cos pairs), got {value}")
    size_budget(value, name)
    return value


def real(value, name: str, *, positive: bool = False) -> float:
    """A finite real number as a Python float (ints allowed, bools and NaN/inf refused)."""
    if isinstance(value, torch.Tensor) and value.ndim == 0 and value.dtype != torch.bool:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond float's range, e.g. 10**400
        raise ValueError(f"{name} must be finite, got an integer too large for a float") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{name} must be finite, got {value}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


def float_dtype(value, name: str = "dtype") -> torch.dtype:
    """A torch floating-point dtype."""
    if not isinstance(value, torch.dtype):
        raise TypeError(f"{name} must be a torch dtype such as torch.float32, got {value!r}")
    if value not in _FLOAT_DTYPES:
        raise ValueError(f"{name} must be a floating-point dtype (float32, float64, ...), got {value}")
    return value


def choice(value, name: str, options: tuple[str, ...]) -> str:
    """One of a few strings."""
    if not isinstance(value, str) or value not in options:
        allowed = ", ".join(repr(o) for o in options)
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def float_tensor(value, name: str, *, min_dims: int = 1) -> torch.Tensor:
    """A floating-point torch tensor with at least ``min_dims`` dimensions and finite entries."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if not value.is_floating_point():
        raise TypeError(f"{name} must hold floating-point numbers, got dtype {value.dtype}")
    if value.ndim < min_dims:
        raise ValueError(f"{name} must have at least {min_dims} dimension(s), got shape {tuple(value.shape)}")
    if not torch.isfinite(value).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return value


def frequencies(value, name: str = "frequencies") -> torch.Tensor:
    """RoPE's angular frequencies ω_i: a non-empty 1-D float tensor of positive entries, as float64."""
    value = float_tensor(value, name)
    if value.ndim != 1 or value.numel() == 0 or not (value > 0).all():
        raise ValueError(f"{name} must be a 1-D tensor of positive ω_i, got shape {tuple(value.shape)}")
    return value.to(torch.float64)


def matrix(value, name: str) -> torch.Tensor:
    """A 2-D floating-point tensor with finite entries."""
    value = float_tensor(value, name, min_dims=2)
    if value.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {tuple(value.shape)}")
    return value


def size_budget(n_elements: int, what: str) -> None:
    """Refuse an allocation of more than ``MAX_ELEMENTS`` numbers before it happens.

    ``what`` names the tensor and the arguments its size comes from, e.g. "the causal mask [n, n]",
    so the message says which argument to change.
    """
    if n_elements > MAX_ELEMENTS:
        raise ValueError(
            f"{what} would hold {n_elements:,} numbers; this course caps one tensor at "
            f"{MAX_ELEMENTS:,} so a typo cannot exhaust memory"
        )
