"""Arithmetic that gives the same bytes on every x86-64 CPU with AVX2, Intel or AMD.

`import course_utils` pins the math libraries' code paths (session.py). Under those pins
an Intel Xeon and an AMD EPYC computed the course's forward passes and gradients alike,
except for three things, each found operation by operation
(../shared/tools/op_hashes.py, and tools/as_amd.py, which makes MKL take its AMD paths
on an Intel machine):

- **The square root in the AdamW update.** torch's float32 ``sqrt`` goes through MKL's
  vector math, which on an AMD EPYC is not correctly rounded (about 16 % of results
  differ in the last bit); on the Xeon it is. ``AdamW`` is torch's update, operation for
  operation, with NumPy's square root, which IEEE 754 makes correctly rounded
  everywhere. It gives the Xeon's bytes from torch's own AdamW, so nothing trained there
  changes.
- **float32 products of some shapes.** MKL sums a 193- to 256-term product in one run on
  the Xeon and in two halves on an AMD; odd lengths up to 383 and results with under 4
  rows or 12 columns also take vendor-specific paths. ``linear`` and ``matmul`` send
  those shapes through MKL calls that both vendors compute alike, arranged so that the
  result is the Xeon's, bit for bit (``_product``).
- **float64 products.** MKL's double-precision kernels differ by vendor at every shape
  tried. The probes' and lesson 13's float64 products go through exact.py's
  ``exact_matmul`` instead.
"""

from __future__ import annotations

import numpy as np
import torch

from . import _validate, exact
from ._deprecation import moved

# Moved in 0.12 to exact.py, the float64 products' own module.
__getattr__ = moved(__name__, {name: getattr(exact, name)
                               for name in ("exact_matmul", "grid_split", "on_grid")},
                    since="0.12")


def correctly_rounded_sqrt(x: torch.Tensor) -> torch.Tensor:
    """The square root of a float32 or float64 CPU tensor x, correctly rounded (NumPy's:
    the processor's IEEE square-root instruction). A new contiguous tensor like x."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in (torch.float32, torch.float64) or x.device.type != "cpu":
        raise TypeError(f"x must be a float32 or float64 CPU tensor, got {x.dtype} on "
                        f"{x.device}")
    return torch.from_numpy(np.sqrt(x.detach().contiguous().numpy()))


def _checked_params(params) -> list:
    """``params`` as a list: float32 leaf tensors, or groups (dicts with "params")."""
    not_a_list = isinstance(params, (torch.Tensor, str, bytes, dict))
    if not_a_list or not hasattr(params, "__iter__"):
        raise TypeError(f"params must be an iterable of tensors or of parameter groups "
                        f"(dicts), got {type(params).__name__}")
    params = list(params)
    if not params:
        raise ValueError("params must hold at least one tensor")
    for item in params:
        tensors = item.get("params") if isinstance(item, dict) else [item]
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        if not isinstance(tensors, (list, tuple)) or not tensors:
            raise TypeError("params: each parameter group must be a dict whose "
                            "'params' is a list of tensors")
        for tensor in tensors:
            if not isinstance(tensor, torch.Tensor):
                name = type(tensor).__name__
                raise TypeError(f"params must hold tensors, got {name}")
            if tensor.dtype != torch.float32 or tensor.is_sparse or not tensor.is_leaf:
                kind = f"{'non-leaf ' if not tensor.is_leaf else ''}{tensor.dtype}"
                raise TypeError(f"params must hold dense float32 leaf tensors "
                                f"(weights), got a {kind} tensor")
    return params


class AdamW(torch.optim.Optimizer):
    """AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019)
    as ``torch.optim.AdamW`` computes it, operation for operation, but with a correctly
    rounded square root (see the module docstring): the same bytes on Intel and AMD.

    Per parameter p with gradient g, at step t:
    p ← p·(1 − lr·weight_decay); m ← m + (g − m)(1 − β₁); v ← β₂v + (1 − β₂)g²;
    p ← p − lr/(1 − β₁ᵗ) · m / (√v / √(1 − β₂ᵗ) + eps).
    Parameter groups, a scheduler's ``lr`` and ``zero_grad`` work as in torch. params:
    float32 leaf tensors or parameter groups; lr at most 1 and weight_decay · lr below 1
    (the limits ``train`` sets).
    """

    def __init__(self, params, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2):
        lr = _validate.real(lr, "lr", positive=True)
        eps = _validate.real(eps, "eps", positive=True)
        weight_decay = _validate.real(weight_decay, "weight_decay")
        if weight_decay < 0:
            raise ValueError(f"weight_decay must be 0 or more, got {weight_decay}")
        if lr > 1:
            raise ValueError(f"lr must be at most 1 (AdamW moves every weight by about "
                             f"lr per step), got {lr}")
        if weight_decay * lr >= 1:
            raise ValueError(f"weight_decay · lr must be below 1 (each step shrinks "
                             f"the weights by that share), got {weight_decay} · {lr}")
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"betas must be a pair (beta1, beta2), got {betas!r}")
        for i, beta in enumerate(betas):
            beta = _validate.real(beta, f"betas[{i}]")
            if not 0 <= beta < 1:
                raise ValueError(f"betas[{i}] must be in [0, 1), got {beta}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)
        super().__init__(_checked_params(params), defaults)

    @torch.no_grad()
    def step(self, closure=None):
        """One update of each parameter with a gradient; closure()'s loss, if any."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            by_step: dict[int, list] = {}  # every parameter of a model shares its step
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse or p.grad.dtype != torch.float32:
                    raise TypeError("params: AdamW takes dense float32 gradients only")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    for name in ("exp_avg", "exp_avg_sq"):
                        state[name] = torch.zeros_like(
                            p, memory_format=torch.preserve_format)
                state["step"] += 1
                by_step.setdefault(state["step"], []).append(p)
            for step, params in by_step.items():
                self._update(params, group, step)
        return loss

    def _update(self, params: list, group: dict, step: int) -> None:
        """The update of ``params`` (all at ``step``), each operation on every tensor at
        once (torch's _foreach_ operations: per element the same arithmetic as the
        one-tensor methods, with one Python call instead of one per tensor)."""
        lr, (beta1, beta2) = group["lr"], group["betas"]
        eps, decay = group["eps"], group["weight_decay"]
        grads = [p.grad for p in params]
        exp_avgs = [self.state[p]["exp_avg"] for p in params]
        exp_avg_sqs = [self.state[p]["exp_avg_sq"] for p in params]
        if decay != 0:
            torch._foreach_mul_(params, 1 - lr * decay)
        torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
        step_size = lr / (1 - beta1 ** float(step))
        # one correctly rounded square root for all the tensors, cut back into their shapes
        flat = correctly_rounded_sqrt(torch.cat([v.reshape(-1) for v in exp_avg_sqs]))
        roots = [r.view(v.shape) for r, v in
                 zip(flat.split([v.numel() for v in exp_avg_sqs]), exp_avg_sqs)]
        denominators = torch._foreach_div(roots, (1 - beta2 ** float(step)) ** 0.5)
        torch._foreach_add_(denominators, eps)
        torch._foreach_addcdiv_(params, exp_avgs, denominators, value=-step_size)

    # torch.optim.Optimizer wraps these so that torch's compiler leaves them alone, and
    # the wrapper imports that compiler on its first call (0.7 s of every lesson that
    # trains). The course never compiles: AdamW calls torch's methods themselves.
    add_param_group = torch.optim.Optimizer.add_param_group.__wrapped__
    zero_grad = torch.optim.Optimizer.zero_grad.__wrapped__
    state_dict = torch.optim.Optimizer.state_dict.__wrapped__
    load_state_dict = torch.optim.Optimizer.load_state_dict.__wrapped__


# MKL's float32 products on an Intel and an AMD CPU, from a sweep of [m, k] @ [k, n] in
# every layout: the same bytes when the result has at least SMALL_ROWS rows and
# SMALL_COLUMNS columns and the contraction k is at most ONE_RUN, or even and above 256,
# or above 383. Both sum k ≤ ONE_RUN terms in one run of fused multiply-adds; for
# ONE_RUN < k ≤ 256 the Xeon still sums in one run while an AMD sums two halves and adds
# them; odd k up to 383 and smaller results take a path of each vendor's own.
SMALL_ROWS, SMALL_COLUMNS, ONE_RUN, ONE_RUN_XEON, ODD_UP_TO = 4, 12, 192, 256, 383
# torch computes a batched product with m·k·n below this with its own loop, not MKL: the
# same code, so the same bytes, on every CPU (aten's bmm).
NATIVE_BELOW = 400


def _portable(m: int, k: int, n: int, batched: bool = False) -> bool:
    """True if torch computes an [m, k] @ [k, n] product (one of a batch, if
    ``batched``) with the same bytes on Intel and AMD CPUs."""
    if batched and m * k * n < NATIVE_BELOW:
        return True
    odd_and_long = k % 2 == 1 and ONE_RUN_XEON < k <= ODD_UP_TO
    return (m >= SMALL_ROWS and n >= SMALL_COLUMNS and not ONE_RUN < k <= ONE_RUN_XEON
            and not odd_and_long)


def _product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b ([..., m, k] @ [..., k, n] → [..., m, n], no autograd) by MKL calls of
    portable shapes only, with the bytes the Xeon's MKL gives for a @ b:

    - a result too small is padded with zero rows or columns (MKL's general kernel gives
      the small path's bytes there);
    - an odd contraction of 257 to 383 terms gets one more term, 0·0;
    - a contraction of ONE_RUN < k ≤ 256 terms is summed as one run: the first 128
      terms, then that partial sum carried into a second product as extra terms times an
      identity block, so the run goes on where it stopped (0 + partial·1 + 0 … is the
      partial sum). Each rule keeps the Xeon's bytes: tests/test_reproducible.py
      compares them with a @ b.
    """
    pad = torch.nn.functional.pad
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if _portable(m, k, n, a.ndim > 2 or b.ndim > 2):
        return a @ b
    if ONE_RUN < k <= ONE_RUN_XEON:
        # the first ONE_RUN terms in one run; then the carried sum (width w) and the
        # remaining k - ONE_RUN terms in a second, one run too while w ≤ 2·ONE_RUN - k
        first, width = ONE_RUN, 2 * ONE_RUN - k
        alike = a.ndim == b.ndim <= 3 and a.shape[:-2] == b.shape[:-2]
        parts = []
        for start in range(0, n, width):
            columns = b[..., start:start + width]
            w = columns.shape[-1]
            # [..., m, w + k - first]: the partial sum, then a's remaining terms
            if alike and _portable(m, first, w, a.ndim == 3):  # into place, no copy
                carried = torch.empty(*a.shape[:-1], w + k - first, dtype=a.dtype)
                mm = torch.mm if a.ndim == 2 else torch.bmm
                mm(a[..., :first], columns[..., :first, :], out=carried[..., :w])
            else:
                partial = _product(a[..., :first], columns[..., :first, :])
                carried = torch.empty(*partial.shape[:-1], w + k - first, dtype=a.dtype)
                carried[..., :w] = partial
            carried[..., w:] = a[..., first:]
            # [..., w + k - first, w]: the identity under the carried sum, then the rest
            stacked = torch.empty(*columns.shape[:-2], w + k - first, w, dtype=b.dtype)
            stacked[..., :w, :] = torch.eye(w, dtype=b.dtype)
            stacked[..., w:, :] = columns[..., first:, :]
            parts.append(_product(carried, stacked))
        return parts[0] if len(parts) == 1 else torch.cat(parts, -1)
    if k % 2 == 1 and ONE_RUN_XEON < k <= ODD_UP_TO:
        return _product(pad(a, (0, 1)), pad(b, (0, 0, 0, 1)))
    pad_m, pad_n = max(0, SMALL_ROWS - m), max(0, SMALL_COLUMNS - n)
    return (pad(a, (0, 0, 0, pad_m)) @ pad(b, (0, pad_n)))[..., :m, :n]


class _Linear(torch.autograd.Function):
    """x Wᵀ + b whose forward and backward products are all _product's. ``stacked``:
    every argument has a leading [models] axis (x [M, ..., in], weight [M, out, in],
    bias [M, out]), as torch.func.vmap hands them over when models train side by side
    (its rule below calls this directly, rather than replaying each operation under
    vmap)."""

    @staticmethod
    def forward(x, weight, bias, stacked):
        lead = 1 if stacked else 0
        rows = x.reshape(*x.shape[:lead], -1, x.shape[-1])
        if not stacked and _portable(rows.shape[0], x.shape[-1], weight.shape[0]):
            return torch.nn.functional.linear(x, weight, bias)  # bias fused: faster
        out = _product(rows, weight.transpose(-1, -2))
        if bias is not None:
            out += bias.unsqueeze(-2) if stacked else bias
        return out.reshape(*x.shape[:-1], weight.shape[-2])

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, bias, stacked = inputs
        ctx.save_for_backward(x, weight)
        ctx.has_bias, ctx.stacked = bias is not None, stacked

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        lead = 1 if ctx.stacked else 0
        g = grad.reshape(*grad.shape[:lead], -1, grad.shape[-1])
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = _product(g, weight).reshape(x.shape)
        if ctx.needs_input_grad[1]:
            rows = x.reshape(*x.shape[:lead], -1, x.shape[-1])
            grad_w = _product(g.transpose(-1, -2), rows)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_b = g.sum(lead)
        return grad_x, grad_w, grad_b, None

    @staticmethod
    def vmap(info, in_dims, x, weight, bias, stacked):
        def front(tensor, dim):
            if tensor is None or dim is not None:
                return None if tensor is None else tensor.movedim(dim, 0)
            return tensor.expand(info.batch_size, *tensor.shape)
        x, weight, bias = (front(t, d) for t, d in zip((x, weight, bias), in_dims[:3]))
        return _Linear.apply(x, weight, bias, True), 0


class _Matmul(torch.autograd.Function):
    """a @ b ([..., m, k] @ [..., k, n], batch dims alike), _product both ways."""

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


def linear(x: torch.Tensor, weight: torch.Tensor,
           bias: torch.Tensor | None = None) -> torch.Tensor:
    """``torch.nn.functional.linear`` (x [..., in], weight [out, in], bias [out] → [...,
    out]) with the same bytes on Intel and AMD CPUs: torch's own call where every
    product of the forward and backward pass has a portable shape, else _Linear, whose
    products are _product's (the Xeon's bytes)."""
    if x.dtype != torch.float32:  # float64: torch's own, which differs by vendor
        return torch.nn.functional.linear(x, weight, bias)
    rows = x.numel() // max(x.shape[-1], 1)
    inner, outer = weight.shape[1], weight.shape[0]
    if (_portable(rows, inner, outer) and _portable(rows, outer, inner)
            and _portable(outer, rows, inner)):
        return torch.nn.functional.linear(x, weight, bias)
    return _Linear.apply(x, weight, bias, False)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for [..., m, k] @ [..., k, n] with the same bytes on Intel and AMD CPUs
    (see ``linear``): torch's own product where all three products of forward and
    backward are portable, else _Matmul."""
    if a.dtype != torch.float32:  # float64: torch's own, which differs by vendor
        return a @ b
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batched = a.ndim > 2 or b.ndim > 2
    if all(_portable(*shape, batched) for shape in ((m, k, n), (m, n, k), (k, m, n))):
        return a @ b
    return _Matmul.apply(a, b)


class Linear(torch.nn.Linear):
    """``torch.nn.Linear`` (same parameters, same state_dict) computed by ``linear``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)
