"""The course's vendor-independent arithmetic (course_utils/reproducible.py).

On an Intel CPU it gives torch's own bytes, so nothing trained there changes; its
products use only shapes that MKL computes alike on Intel and AMD CPUs (checked here
under tools/as_amd.py, and on an AMD EPYC by ../shared/tools/op_hashes.py).
"""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from course_utils import AdamW, reproducible
from course_utils.reproducible import Linear, correctly_rounded_sqrt, linear, matmul

# MKL on its Intel paths: an Intel CPU, not under tools/as_amd.py's emulation of an AMD
INTEL = (sys.platform == "linux" and "GenuineIntel" in open("/proc/cpuinfo").read()
         and "course-as-amd" not in os.environ.get("LD_PRELOAD", ""))


def _same(ours: torch.Tensor, theirs: torch.Tensor, atol: float) -> bool:
    """Bit for bit on an Intel CPU (the reference bytes are its MKL's), else close."""
    if INTEL:
        return torch.equal(ours, theirs)
    return torch.allclose(ours, theirs, atol=atol)


def test_correctly_rounded_sqrt_is_the_float64_root_rounded():
    x = torch.rand(100_000, generator=torch.Generator().manual_seed(0)) * 1e-3
    assert torch.equal(correctly_rounded_sqrt(x), x.double().sqrt().float())
    with pytest.raises(TypeError, match="x must be a float32 or float64"):
        correctly_rounded_sqrt(torch.arange(4))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        correctly_rounded_sqrt(np.ones(3))


def _inputs_where_torchs_root_is_correctly_rounded() -> torch.Tensor:
    """A batch x [64, 16]; skips the test on a CPU whose torch sqrt is not correctly
    rounded (an Intel Xeon's is; an AMD EPYC's is not: the point of our AdamW)."""
    x = torch.randn(64, 16, generator=torch.Generator().manual_seed(1))
    if not torch.equal(x.abs().sqrt(), correctly_rounded_sqrt(x.abs())):
        pytest.skip("torch's sqrt is not correctly rounded on this CPU")
    return x


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adamw_gives_torchs_bytes_where_torchs_root_is_correctly_rounded(weight_decay):
    """Ten steps of a small network: torch.optim.AdamW's bytes on a CPU whose torch sqrt
    is correctly rounded (an Intel Xeon's is; an AMD EPYC's is not: the point)."""
    x = _inputs_where_torchs_root_is_correctly_rounded()
    params = []
    for optimiser_class in (torch.optim.AdamW, AdamW):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                  torch.nn.Linear(32, 1))
        optimiser = optimiser_class(net.parameters(), lr=1e-2,
                                    weight_decay=weight_decay)
        for _ in range(10):
            optimiser.zero_grad()
            net(x).pow(2).mean().backward()
            optimiser.step()
        params.append(torch.cat([p.flatten() for p in net.parameters()]))
    assert torch.equal(*params)


def test_adamw_checks_its_arguments():
    p = [torch.nn.Parameter(torch.zeros(2))]
    with pytest.raises(ValueError, match="weight_decay"):
        AdamW(p, weight_decay=-1.0)
    with pytest.raises(ValueError, match=r"betas\[1\]"):
        AdamW(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="lr"):
        AdamW(p, lr=0)
    with pytest.raises(TypeError, match="params must hold dense float32"):
        AdamW([torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))])
    with pytest.raises(ValueError, match="params must hold at least one tensor"):
        AdamW([])


SHAPES = [(m, k, n) for m in (1, 3, 4, 17, 256)
          for k in (1, 16, 128, 192, 193, 255, 256, 258, 259, 383)
          for n in (1, 5, 11, 12, 64, 83)]


@pytest.mark.parametrize("m, k, n", SHAPES)
def test_product_gives_mkls_bytes_for_every_shape(m, k, n):
    """_product calls MKL at portable shapes only, yet equals a @ b bit for bit on an
    Intel CPU: padding and the carried sum reproduce its one-run sums."""
    if not INTEL:
        pytest.skip("the reference bytes are an Intel CPU's MKL")
    g = torch.Generator().manual_seed(m * 1000 + k * 10 + n)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    layouts = ((a, b), (a.t().contiguous().t(), b), (a, b.t().contiguous().t()))
    for left, right in layouts:
        assert torch.equal(reproducible._product(left, right), left @ right)


def test_product_covers_every_contraction_the_vendors_cut_differently():
    """Every k from 180 to 400: the Xeon's bytes (one shape each, to stay quick)."""
    if not INTEL:
        pytest.skip("the reference bytes are an Intel CPU's MKL")
    g = torch.Generator().manual_seed(0)
    for k in range(180, 401):
        a, b = torch.randn(24, k, generator=g), torch.randn(k, 20, generator=g)
        assert torch.equal(reproducible._product(a, b), a @ b), k


def test_portable_shapes_are_the_measured_ones():
    portable = reproducible._portable
    assert portable(4, 192, 12) and portable(4, 258, 12) and portable(4, 385, 12)
    assert not portable(3, 16, 64) and not portable(64, 16, 11)
    assert not portable(64, 193, 64) and not portable(64, 256, 64)
    assert not portable(64, 259, 64) and not portable(64, 383, 64)
    assert portable(2, 8, 8, batched=True) and not portable(2, 8, 8)


@pytest.mark.parametrize("rows, inner, outer", [
    (2048, 256, 64), (2048, 64, 256), (40, 64, 10), (2, 32, 16), (384, 32, 96)])
def test_linear_matches_torch_in_value_and_gradient(rows, inner, outer):
    """Forward and every gradient as torch.nn.functional.linear computes them."""
    g = torch.Generator().manual_seed(rows + inner + outer)
    x = torch.randn(rows // 2, 2, inner, generator=g, requires_grad=True)
    w = torch.randn(outer, inner, generator=g, requires_grad=True)
    b = torch.randn(outer, generator=g, requires_grad=True)
    upstream = torch.randn(rows // 2, 2, outer, generator=g)
    results = []
    for function in (torch.nn.functional.linear, linear):
        out = function(x, w, b)
        results.append([out, *torch.autograd.grad(out, (x, w, b), upstream)])
    for theirs, ours in zip(*results):
        assert _same(ours, theirs, 1e-4)


@pytest.mark.parametrize("n, d", [(8, 4), (9, 16), (16, 4), (11, 8), (64, 4),
                                  (128, 32)])
def test_attention_products_give_torchs_bytes_forward_and_backward(n, d):
    """The explicit attention's two products, batched as the lessons' heads are."""
    g = torch.Generator().manual_seed(n * d)
    q, k, v = (torch.randn(16, 8, n, d, generator=g, requires_grad=True)
               for _ in range(3))
    upstream = torch.randn(16, 8, n, d, generator=g)
    results = []
    for product in (torch.matmul, matmul):
        weights = torch.softmax(product(q, k.transpose(-2, -1)), -1)
        out = product(weights, v)
        results.append([out, *torch.autograd.grad(out, (q, k, v), upstream)])
    for theirs, ours in zip(*results):
        assert _same(ours, theirs, 1e-5)


def test_linear_module_keeps_torchs_parameters_and_works_under_vmap():
    layer = Linear(256, 10)
    assert set(layer.state_dict()) == {"weight", "bias"}
    stacked = torch.randn(3, 10, 256), torch.randn(3, 10)
    x = torch.randn(3, 32, 256)
    out = torch.func.vmap(linear)(x, *stacked)
    expected = torch.func.vmap(torch.nn.functional.linear)(x, *stacked)
    assert torch.allclose(out, expected, atol=1e-4)


_HASHES = """
import hashlib, torch, course_utils
from course_utils import exact, reproducible
torch.set_num_threads(1)
h = lambda t: hashlib.sha256(t.detach().contiguous().numpy().tobytes()).hexdigest()[:12]
g = torch.Generator().manual_seed(0)
x, w = torch.randn(512, 256, generator=g), torch.randn(64, 256, generator=g)
config = course_utils.ModelConfig(vocab_size=10, d_model=64, n_heads=2, n_layers=1,
                                  max_len=16, causal=True)
model = course_utils.TinyTransformer(config, seed=0)
course_utils.train(model, "previous_token", steps=5, batch_size=8, lengths=(8, 16),
                   progress=False)
weights = torch.cat([p.flatten() for p in model.parameters()])
a = torch.randn(300, 96, generator=g, dtype=torch.float64)
b = torch.randn(96, 40, generator=g, dtype=torch.float64)
labels = torch.arange(300) % 7
probes = [course_utils.logistic_probe(a, labels), course_utils.linear_probe(a, labels)]
print(h(x @ w.t()) + h(a @ b), h(reproducible.linear(x, w)) + h(weights)
      + h(exact.exact_matmul(a, b)) + h(exact.exact_matmul(a.T, a))
      + str(probes).replace(" ", ""))
"""


@pytest.mark.skipif(shutil.which("gcc") is None or not INTEL,
                    reason="emulating MKL's AMD paths needs Linux, Intel and gcc")
def test_under_mkls_amd_paths_the_course_keeps_its_bytes():
    """tools/as_amd.py makes MKL take its AMD paths: a raw 256-term product and a float64
    product change; the course's route, five training steps of a toy model (10 outputs,
    an MLP 256 wide, lengths 8-16), its exact float64 products and both probes do not."""
    from conftest import ROOT

    from tools import as_amd

    command = [sys.executable, "-c", _HASHES]
    runs = [subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                           timeout=300, env=env)
            for env in (None, as_amd.environment())]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr + runs[1].stderr
    (raw_native, course_native), (raw_amd, course_amd) = (r.stdout.split()
                                                          for r in runs)
    assert raw_native != raw_amd  # the emulation is in force
    assert course_native == course_amd


def test_adamw_updates_parameters_at_different_steps_like_torchs():
    """A parameter without a gradient skips a step and keeps its own count, as in torch:
    the update at once of every tensor (grouped by step) gives the one-at-a-time bytes."""
    x = _inputs_where_torchs_root_is_correctly_rounded()
    params = []
    for optimiser_class in (torch.optim.AdamW, AdamW):
        torch.manual_seed(0)
        first, second = torch.nn.Linear(16, 32), torch.nn.Linear(32, 1)
        optimiser = optimiser_class([*first.parameters(), *second.parameters()], lr=1e-2,
                                    weight_decay=0.1)
        for step in range(6):
            optimiser.zero_grad()
            hidden = first(x).relu()
            if step % 3 == 1:  # the first layer gets no gradient on these steps
                hidden = hidden.detach()
            second(hidden).pow(2).mean().backward()
            optimiser.step()
        params.append(torch.cat([p.flatten() for p in (*first.parameters(), *second.parameters())]))
    assert torch.equal(*params)
