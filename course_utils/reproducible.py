"""Arithmetic that gives the same bytes on every x86-64 CPU with AVX2, Intel or AMD.

`import course_utils` pins the math libraries' code paths (session.py), and under those pins an
Intel Xeon and an AMD EPYC compute the course's forward passes and gradients bit for bit alike,
with three exceptions, each measured operation by operation (../shared/tools/op_hashes.py):

- **the square root in the AdamW update.** torch's float32 ``sqrt`` goes through MKL's vector
  math, which on an AMD EPYC is not correctly rounded (about 16 % of results differ in the last
  bit); on the Xeon it is. ``AdamW`` below is torch's update, operation for operation, with the
  square root taken by NumPy, which the IEEE standard makes correctly rounded everywhere. It
  gives the Xeon's bytes from torch's own AdamW, so nothing trained on the Xeon changes.
- **float32 products of certain shapes** (``linear`` below): MKL sums a long product in blocks,
  and for a contraction of 193 to 383 terms the two vendors cut it differently (the Xeon sums
  256 terms in one run, an AMD in two halves); tiny products take a vendor-specific small-matrix
  path. ``linear`` routes those shapes through MKL calls whose shapes both vendors compute the
  same way, and adds them so that the result is the Xeon's, bit for bit.
- **float64 products** (the logistic probe's): MKL's double-precision kernels differ by vendor
  at every shape tried. ``dot64`` and ``mm64`` compute them with no BLAS at all, from elementwise
  products and torch's own sums, whose order depends only on the shapes.
"""

from __future__ import annotations

import numpy as np
import torch

from . import _validate


def correctly_rounded_sqrt(x: torch.Tensor) -> torch.Tensor:
    """The square root of a float32 or float64 CPU tensor, correctly rounded (NumPy's, which is
    the processor's IEEE square-root instruction). A new contiguous tensor of x's shape."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in (torch.float32, torch.float64) or x.device.type != "cpu":
        raise TypeError(f"x must be a float32 or float64 CPU tensor, got {x.dtype} on {x.device}")
    return torch.from_numpy(np.sqrt(x.detach().contiguous().numpy()))


def _checked_params(params) -> list:
    """``params`` as a list: float32 leaf tensors, or parameter groups (dicts with "params")."""
    if isinstance(params, (torch.Tensor, str, bytes, dict)) or not hasattr(params, "__iter__"):
        raise TypeError(f"params must be an iterable of tensors or of parameter groups (dicts), "
                        f"got {type(params).__name__}")
    params = list(params)
    if not params:
        raise ValueError("params must hold at least one tensor")
    for item in params:
        tensors = item.get("params") if isinstance(item, dict) else [item]
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        if not isinstance(tensors, (list, tuple)) or not tensors:
            raise TypeError("params: each parameter group must be a dict whose 'params' is a list "
                            "of tensors")
        for tensor in tensors:
            if not isinstance(tensor, torch.Tensor):
                raise TypeError(f"params must hold tensors, got {type(tensor).__name__}")
            if tensor.dtype != torch.float32 or tensor.is_sparse or not tensor.is_leaf:
                raise TypeError(f"params must hold dense float32 leaf tensors (weights), got a "
                                f"{'non-leaf ' if not tensor.is_leaf else ''}{tensor.dtype} tensor")
    return params


class AdamW(torch.optim.Optimizer):
    """AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019) as
    ``torch.optim.AdamW`` computes it, operation for operation, but with a correctly rounded
    square root (see the module docstring): the same bytes on an Intel and an AMD CPU.

    Per parameter p with gradient g, at step t:
    p ← p·(1 − lr·weight_decay); m ← m + (g − m)(1 − β₁); v ← β₂v + (1 − β₂)g²;
    p ← p − lr/(1 − β₁ᵗ) · m / (√v / √(1 − β₂ᵗ) + eps).
    Parameter groups, ``lr`` changes by a scheduler and ``zero_grad`` work as in torch.
    params: float32 leaf tensors or parameter groups; lr at most 1 and weight_decay · lr below 1
    (the limits ``train`` sets).
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2):
        lr = _validate.real(lr, "lr", positive=True)
        eps = _validate.real(eps, "eps", positive=True)
        weight_decay = _validate.real(weight_decay, "weight_decay")
        if weight_decay < 0:
            raise ValueError(f"weight_decay must be 0 or more, got {weight_decay}")
        if lr > 1:
            raise ValueError(f"lr must be at most 1 (AdamW moves every weight by about lr per step), "
                             f"got {lr}")
        if weight_decay * lr >= 1:
            raise ValueError(f"weight_decay · lr must be below 1 (each step shrinks the weights by "
                             f"that share), got {weight_decay} · {lr}")
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"betas must be a pair (beta1, beta2), got {betas!r}")
        for i, beta in enumerate(betas):
            beta = _validate.real(beta, f"betas[{i}]")
            if not 0 <= beta < 1:
                raise ValueError(f"betas[{i}] must be in [0, 1), got {beta}")
        super().__init__(_checked_params(params),
                         dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure()'s loss, if given."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse or p.grad.dtype != torch.float32:
                    raise TypeError("params: AdamW updates with dense float32 gradients only")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                step, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]
                if decay != 0:
                    p.mul_(1 - lr * decay)
                exp_avg.lerp_(p.grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                step_size = lr / (1 - beta1 ** float(step))
                denominator = (correctly_rounded_sqrt(exp_avg_sq) / (1 - beta2 ** float(step)) ** 0.5).add_(eps)
                p.addcdiv_(exp_avg, denominator, value=-step_size)
        return loss


# MKL's float32 products on an Intel and an AMD CPU (measured with op_hashes.py's lines and a
# sweep of shapes [m, k] @ [k, n] in every layout): the same bytes when the result has at least
# SMALL_ROWS rows and SMALL_COLUMNS columns and the contraction k is at most ONE_RUN or at least
# 258 and even; both sum k ≤ ONE_RUN terms in one sequential run of fused multiply-adds. Below
# those sizes each vendor takes its own small-matrix path, and for ONE_RUN < k ≤ 256 the Xeon
# still sums in one run while an AMD sums two halves and adds them.
SMALL_ROWS, SMALL_COLUMNS, ONE_RUN, SPLIT_UP_TO = 4, 12, 192, 256


# torch computes a batched product ([..., m, k] @ [..., k, n]) with m·k·n below this with its
# own loop, not MKL: the same code, so the same bytes, on every CPU (aten's bmm).
NATIVE_BELOW = 400


def _portable(m: int, k: int, n: int, batched: bool = False) -> bool:
    """True if torch computes an [m, k] @ [k, n] product (one of a batch, if ``batched``) with
    the same bytes on Intel and AMD CPUs."""
    if batched and m * k * n < NATIVE_BELOW:
        return True
    return m >= SMALL_ROWS and n >= SMALL_COLUMNS and not ONE_RUN < k <= SPLIT_UP_TO


def _product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b ([..., m, k] @ [..., k, n], no autograd) computed by MKL calls of portable shapes
    only, with the bytes the Xeon's MKL gives for a @ b: a result too small is padded with zero
    rows or columns (MKL's general kernel gives the small path's bytes there), and a contraction
    of ONE_RUN < k ≤ 256 terms is summed as one run: the first 128 terms, then that partial sum
    carried into a second product as extra terms times an identity matrix, so the run continues
    exactly where it stopped (0 + partial·1 + 0 … is the partial sum, bit for bit)."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if _portable(m, k, n, a.ndim > 2 or b.ndim > 2):
        return a @ b
    if ONE_RUN < k <= SPLIT_UP_TO:
        first, width = 128, 320 - k  # the carried sum plus the rest stay within one run
        parts = []
        for start in range(0, n, width):
            columns = b[..., start:start + width]
            w = columns.shape[-1]
            partial = _product(a[..., :first], columns[..., :first, :])  # [..., m, w]
            eye = torch.eye(w, dtype=b.dtype).expand(*b.shape[:-2], w, w)
            carried = torch.cat([partial, a[..., first:].expand(*partial.shape[:-1], k - first)], -1)
            parts.append(_product(carried, torch.cat([eye, columns[..., first:, :]], -2)))
        return torch.cat(parts, -1)
    pad_m, pad_n = max(0, SMALL_ROWS - m), max(0, SMALL_COLUMNS - n)
    padded_a = torch.nn.functional.pad(a, (0, 0, 0, pad_m))
    return (padded_a @ torch.nn.functional.pad(b, (0, pad_n)))[..., :m, :n]


class _Linear(torch.autograd.Function):
    """x Wᵀ + b whose forward and backward products are all _product's."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, weight, bias):
        rows = x.reshape(-1, x.shape[-1])
        out = _product(rows, weight.t())
        if bias is not None:
            out = out + bias
        return out.reshape(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, bias = inputs
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        g = grad.reshape(-1, grad.shape[-1])
        grad_x = _product(g, weight).reshape(x.shape) if ctx.needs_input_grad[0] else None
        grad_w = None
        if ctx.needs_input_grad[1]:
            grad_w = _product(g.t(), x.reshape(-1, x.shape[-1]))
        grad_b = g.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_x, grad_w, grad_b


class _Matmul(torch.autograd.Function):
    """a @ b ([..., m, k] @ [..., k, n], batch dims alike) with _product forward and backward."""

    generate_vmap_rule = True

    @staticmethod
    def forward(a, b):
        return _product(a, b)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = _product(grad, b.mT) if ctx.needs_input_grad[0] else None
        grad_b = _product(a.mT, grad) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``torch.nn.functional.linear`` (x [..., in] → [..., out]) with the same bytes on Intel
    and AMD CPUs: torch's own call where every product of the forward and backward pass has a
    portable shape, else _Linear, whose products are _product's (the Xeon's bytes)."""
    rows, inner, outer = x.numel() // max(x.shape[-1], 1), weight.shape[1], weight.shape[0]
    if (_portable(rows, inner, outer) and _portable(rows, outer, inner)
            and _portable(outer, rows, inner)):
        return torch.nn.functional.linear(x, weight, bias)
    return _Linear.apply(x, weight, bias)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for [..., m, k] @ [..., k, n] with the same bytes on Intel and AMD CPUs (see
    ``linear``): torch's own product where all three products of forward and backward are
    portable, else _Matmul."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batched = a.ndim > 2 or b.ndim > 2
    if all(_portable(*shape, batched) for shape in ((m, k, n), (m, n, k), (k, m, n))):
        return a @ b
    return _Matmul.apply(a, b)


class Linear(torch.nn.Linear):
    """``torch.nn.Linear`` (same parameters, same state_dict) computed by ``linear``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)
