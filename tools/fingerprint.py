"""The numerics fingerprint: does this CPU compute the course's numbers bit for bit as ours did?

Seeded float32 work of the kind the lessons do (matmuls of their shapes, attention, LayerNorm,
log-softmax, ten steps of the course's own training of a capstone-sized model) and one float64
logistic-probe fit (the course's own: exact slice products, course_utils/exact.py), each
reduced to a short sha256 of its bytes. Every line is the same on an Intel Xeon and an AMD EPYC
(the float64 line since course_utils 0.11.0; lessons executed before then record only the
float32 lines, tools/execute.py, and are checked on those). It runs after
`import course_utils`, so under the kernels the course pins (course_utils/session.py). REFERENCE
holds the hashes of the AMD EPYCs that made the first stored outputs; a lesson executed since
records the fingerprint of the CPU that executed it in its metadata (``numerics``, written by
tools/execute.py). Strict nbval checks a lesson where this CPU's lines all match the lesson's,
and a line that differs names the operation that moved.

    python -m tools.fingerprint           # the CPU, the pinned kernels, each hash against REFERENCE
    python -m tools.fingerprint --strict LESSON...  # the lessons whose stored outputs this CPU
                                          # reproduces bit for bit (`make test` asks this); a
                                          # one-line note on stderr names the others
    python -m tools.fingerprint --detail  # the training and float64 lines taken apart, step by
                                          # step, to find the operation that moves between two CPUs

The test suite prints the same report in its header (tests/conftest.py). It was first measured
as ../shared/tools/numerics_fingerprint.py, our own script, on two CPUs (session.py says which).
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import warnings
from pathlib import Path

import course_utils  # pins the kernels before anything below computes
import torch
from course_utils import exact, probes, reproducible

# The hashes under the course's pins (MKL_CBWR=AVX2,STRICT, torch and oneDNN on AVX2, one
# thread): an Intel Xeon's, and the same under tools/as_amd.py (MKL taking its AMD Zen paths;
# the AMD EPYCs' own lines for the first five were these).
REFERENCE = {
    "mm 1024x1024": "a8e265236230",
    "linear 8192x128": "b001aa2dd39b",
    "attention": "9529ed18aaa9",
    "layer_norm": "3748ee4a0af4",
    "softmax/exp/log": "39f29e7b8106",
    "10 AdamW steps": "00c912125731",
    "float64 probe": "7713d3cab4bb",
}
FLOAT64_LINE = "float64 probe"
# The lines every lesson records (a lesson executed before 0.11.0 lacks the float64 one).
FLOAT32_LINES = frozenset(REFERENCE) - {FLOAT64_LINE}
PINNED = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "OPENBLAS_CORETYPE", "OMP_NUM_THREADS")


def _hash(tensor: torch.Tensor) -> str:
    return hashlib.sha256(tensor.detach().contiguous().numpy().tobytes()).hexdigest()[:12]


def cpu() -> str:
    """The CPU's name and whether it has AVX2 and AVX-512 (Linux; the machine name elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    name = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = re.search(r"^flags\s*:(.*)$", text, re.M)
    flags = set(flags.group(1).split()) if flags else set()
    vector = ", ".join(f"{'with' if flag in flags else 'no'} {label}"
                       for flag, label in (("avx2", "AVX2"), ("avx512f", "AVX-512")))
    return f"{name.group(1).strip() if name else platform.machine()} ({vector})"


def openblas() -> str:
    """OpenBLAS's kernel set as NumPy/SciPy loaded it (threadpoolctl), e.g. 'Haswell'."""
    import numpy  # noqa: F401  (load the BLAS libraries threadpoolctl reports)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    found = [f"{info.get('architecture')} ({info.get('filepath', '').split('/')[-2] or '?'})"
             for info in threadpool_info() if info.get("internal_api") == "openblas"]
    return ", ".join(found) or "not loaded"


def fingerprint() -> dict[str, str]:
    """{operation: short hash of its result} for the work described in the module docstring."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
        hashes = {"mm 1024x1024": _hash(a @ b)}
        x = torch.randn(64 * 128, 128, generator=g)
        w = torch.randn(128, 512, generator=g) / 11
        hashes["linear 8192x128"] = _hash(x @ w)
        q, k, v = (torch.randn(64, 4, 128, 32, generator=g) for _ in range(3))
        hashes["attention"] = _hash(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))
        hashes["layer_norm"] = _hash(torch.nn.functional.layer_norm(x, (128,)))
        hashes["softmax/exp/log"] = _hash(torch.log_softmax(x @ w, -1))

        # the course's own training arithmetic: a capstone-sized model (its 256-wide MLP sums
        # 256 terms), ten steps of train() with weight decay: course Linear layers, the course's
        # AdamW with its correctly rounded square root (course_utils/reproducible.py)
        text = torch.randint(0, 83, (20_000,), generator=g)
        config = course_utils.ModelConfig(vocab_size=83, d_model=64, n_heads=2, n_layers=2,
                                          max_len=128, causal=True, attention_kernel="fused",
                                          embedding_std=0.02, position="rope")
        model = course_utils.TinyTransformer(config, seed=0)
        course_utils.train(model, text, steps=10, batch_size=8, lengths=(128, 128),
                           weight_decay=0.1, progress=False)
        hashes["10 AdamW steps"] = _hash(torch.cat([p.flatten() for p in model.parameters()]))

        # the course's float64 probe: a logistic fit and a least-squares fit, exact products
        features = torch.randn(600, 32, generator=g, dtype=torch.float64)
        mixing = torch.randn(32, 16, generator=g, dtype=torch.float64)
        labels = exact.exact_matmul(features, mixing).argmax(1)
        weights, bias, _ = probes._fit_logistic(
            exact.on_grid(features, probes._FEATURE_BITS), labels, 16)
        gram = exact.exact_matmul(features.T, features)
        solved = probes._solve_symmetric(gram + torch.eye(32, dtype=torch.float64), mixing)
        hashes["float64 probe"] = _hash(torch.cat([weights.flatten(), bias, solved.flatten()]))
    finally:
        torch.set_num_threads(threads)
    return hashes


def detail() -> dict[str, str]:
    """What moved between an Intel Xeon and an AMD EPYC, taken apart: one forward and backward of
    a torch transformer layer (its gradients by weight), with torch's fused attention and with the
    plain formula, then one step of the course's AdamW; torch's float32 square root beside the
    correctly rounded one; MKL's float32 products at the shapes the vendors compute differently
    beside the course's route for them (course_utils/reproducible.py); float64 matmul, dot product
    and cross-entropy gradient (MKL's double-precision kernels: these differ by vendor) beside
    the course's exact products and a probe fit's steps (the same on both). Compare
    the printout of two CPUs line by line: the first line that differs names the operation
    (bench/fingerprint_detail.txt holds the lines of the CPUs seen)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    hashes = {}
    try:
        for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.MATH):
            g = torch.Generator().manual_seed(1)
            torch.manual_seed(0)
            layer = torch.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
            data = torch.randn(16, 64, 128, generator=g)
            mask = torch.nn.Transformer.generate_square_subsequent_mask(64)
            tag = backend.name.lower()
            with sdpa_kernel([backend]):
                out = layer(data, src_mask=mask, is_causal=True)
                hashes[f"{tag}: forward"] = _hash(out)
                out.pow(2).mean().backward()
            for name, parameter in layer.named_parameters():
                hashes[f"{tag}: grad {name}"] = _hash(parameter.grad)
            course_utils.AdamW(layer.parameters(), lr=1e-3).step()
            hashes[f"{tag}: after one AdamW step"] = _hash(torch.cat([p.flatten() for p in layer.parameters()]))
        g = torch.Generator().manual_seed(3)
        second_moment = torch.rand(100_000, generator=g) * 1e-3
        hashes["float32: torch's sqrt"] = _hash(second_moment.sqrt())
        hashes["float32: correctly rounded sqrt"] = _hash(reproducible.correctly_rounded_sqrt(second_moment))
        x, w = torch.randn(2048, 256, generator=g), torch.randn(64, 256, generator=g)
        hashes["float32: MKL, 256-term sums"] = _hash(x @ w.t())
        hashes["float32: course linear, 256-term sums"] = _hash(reproducible.linear(x, w))
        hashes["float32: MKL, 10 columns"] = _hash(x[:, :64] @ w[:10, :64].t())
        hashes["float32: course linear, 10 columns"] = _hash(reproducible.linear(x[:, :64], w[:10, :64]))
        g = torch.Generator().manual_seed(2)
        a = torch.randn(600, 32, generator=g, dtype=torch.float64)
        b = torch.randn(32, 16, generator=g, dtype=torch.float64, requires_grad=True)
        logits = a @ b
        hashes["float64: matmul 600x32x16"] = _hash(logits)
        hashes["float64: matmul transposed"] = _hash(a.t() @ a)
        hashes["float64: dot 10000"] = _hash(torch.dot(*torch.randn(2, 10000, generator=g, dtype=torch.float64)))
        labels = torch.arange(600) % 16
        torch.nn.functional.cross_entropy(logits, labels, reduction="sum").backward()
        hashes["float64: cross-entropy gradient"] = _hash(b.grad)
        hashes["float64: course exact_matmul 600x32x16"] = _hash(
            exact.exact_matmul(a, b.detach()))
        hashes["float64: course exact_matmul transposed"] = _hash(exact.exact_matmul(a.t(), a))
        grid = exact.on_grid(a, probes._FEATURE_BITS)
        for steps in (1, 10, 100):
            probe_weights = _probe_after(grid, labels, steps)
            hashes[f"float64: course probe, {steps} L-BFGS steps"] = _hash(probe_weights)
        x = torch.randn(1024, 96, generator=g)
        w = torch.randn(96, 288, generator=g)
        y = torch.randn(1024, 288, generator=g)
        hashes["float32: x.T @ grad (1024-long sums)"] = _hash(x.t() @ y)
        hashes["float32: grad @ w.T"] = _hash(y @ w.t())
        hashes["float32: addmm with bias"] = _hash(torch.addmm(y[0], x, w))
    finally:
        torch.set_num_threads(threads)
    return hashes


def _probe_after(features: torch.Tensor, labels: torch.Tensor, steps: int) -> torch.Tensor:
    """The logistic probe's weights and bias after ``steps`` L-BFGS steps (features on the grid)."""
    limit = probes.LOGISTIC_MAX_ITER
    probes.LOGISTIC_MAX_ITER = steps
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # stopped early on purpose
            weights, bias, _ = probes._fit_logistic(features, labels, int(labels.max()) + 1)
    finally:
        probes.LOGISTIC_MAX_ITER = limit
    return torch.cat([weights.flatten(), bias])


def report() -> list[str]:
    """The lines the test suite's header prints: CPU, kernels, each hash against REFERENCE, verdict."""
    from course_utils.session import reproduces_stored_outputs

    kernels = " ".join(f"{name}={os.environ.get(name, '-')}" for name in PINNED)
    lines = [f"CPU: {cpu()}; {platform.system()} {platform.machine()}",
             f"kernels: torch {torch.__version__} on {torch.backends.cpu.get_cpu_capability()}; {kernels}; "
             f"OpenBLAS (NumPy/SciPy) {openblas()}"]
    hashes = fingerprint()
    moved = [name for name, value in hashes.items() if value != REFERENCE[name]]
    lines.append("fingerprint: " + "  ".join(f"{name} {value}{'' if name not in moved else ' (≠)'}"
                                             for name, value in hashes.items()))
    if not reproduces_stored_outputs():
        lines.append("verdict: not an x86-64 CPU with AVX2, so stored outputs are not expected to "
                     "reproduce bit for bit (make test runs nbval in lax mode plus the claims tests)")
    elif moved:
        lines.append(f"verdict: DIFFERS from the reference in {', '.join(moved)}: make test checks "
                     f"strictly only the lessons whose recorded lines (their metadata) this CPU "
                     f"reproduces, the others in lax mode")
    else:
        lines.append("verdict: every hash matches the reference")
    return lines


def made_with(path) -> dict[str, str]:
    """The fingerprint lines recorded by the CPU that executed a lesson: the ``numerics`` record
    ``tools/execute.py`` writes into the notebook's metadata, or REFERENCE for a lesson without
    one (every lesson has one since course_utils 0.10.0)."""
    import nbformat

    nb = nbformat.read(Path(path), as_version=4)
    return dict(nb.metadata.get("numerics", {}).get("fingerprint", REFERENCE))


def float32_lines(hashes: dict[str, str]) -> dict[str, str]:
    """The fingerprint without its float64 line: what a zoo checkpoint depends on (its
    training makes no float64 product)."""
    return {name: value for name, value in hashes.items() if name in FLOAT32_LINES}


def reproduces(recorded: dict[str, str], hashes: dict[str, str]) -> bool:
    """True if every line a lesson recorded (all of them; before 0.11.0, the float32 lines and the
    float64 one only if it fitted a probe) has this CPU's value, and the lesson recorded the
    float32 lines at all."""
    return bool(recorded) and set(recorded) >= FLOAT32_LINES and all(
        hashes.get(name) == value for name, value in recorded.items())


def split_lessons(paths, hashes: dict[str, str] | None = None) -> tuple[list[str], list[str], str | None]:
    """(strict, lax, note): the lessons whose stored outputs this CPU is expected to reproduce bit
    for bit (an x86-64 CPU with AVX2 whose fingerprint equals the one that executed the lesson),
    the others, and the one line `make test` prints when some lessons are checked in lax mode
    (None when every lesson is strict). hashes: this CPU's fingerprint (measured if None)."""
    from course_utils.session import reproduces_stored_outputs

    paths = [str(path) for path in paths]
    if not reproduces_stored_outputs():
        return [], paths, (f"make test: {platform.machine()} CPU without x86-64 AVX2 ({cpu()}): stored outputs "
                           f"are exact only on x86-64 CPUs with AVX2, so nbval runs in lax mode (every cell "
                           f"must run without error) and the claims tests check the lessons' numbers with "
                           f"tolerances.")
    hashes = fingerprint() if hashes is None else hashes
    strict = [path for path in paths if reproduces(made_with(path), hashes)]
    lax = [path for path in paths if path not in strict]
    if not lax:
        return strict, lax, None
    moved = sorted({name for path in lax for name, value in made_with(path).items() if hashes.get(name) != value}
                   | ({"(an older fingerprint)"} if any(not set(made_with(p)) >= FLOAT32_LINES for p in lax) else set()))
    which = "every lesson" if not strict else f"{len(lax)} of the {len(paths)} lessons"
    rest = "" if not strict else f", the other {len(strict)} strictly"
    return strict, lax, (f"make test: this CPU ({cpu()}) computes {', '.join(moved)} differently from the CPU "
                         f"that executed {which} (python -m tools.fingerprint), so nbval checks "
                         f"{'them' if not strict else 'those'} in lax mode (every cell must run without error; "
                         f"the claims tests check their numbers with tolerances){rest}.")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--detail"]:
        print(f"CPU: {cpu()}")
        print("\n".join(f"{name:<48} {value}" for name, value in detail().items()))
        sys.exit(0)
    if sys.argv[1:2] == ["--strict"]:  # make test: print the lessons to check strictly
        strict, _, note = split_lessons(sys.argv[2:])
        if note:
            print(note, file=sys.stderr)
        print(" ".join(strict))
        sys.exit(0)
    print("\n".join(report()))
