"""Fuzzing every public function of course_utils with wrong arguments (issue 6).

The project standard: every public function checks its inputs and raises ValueError or TypeError
naming the argument and what was expected, never an IndexError, a RuntimeError from inside torch,
a ZeroDivisionError or an AttributeError; huge sizes are refused by ``_validate.size_budget``
before anything is allocated; and a valid call returns the shape its docstring promises.

``CASES`` has one entry per name in ``course_utils.__all__`` (``RECORDS`` lists the plain result
containers), and each entry names every parameter of its function, so a new public function or a
new parameter without a fuzz entry fails ``test_every_public_name_and_parameter_is_fuzzed``.
An entry gives a Hypothesis strategy for valid keyword arguments (tiny sizes), what each argument
accepts (a ``Kind``: a value the kind refuses must raise) and the documented result. The tests:

- valid calls (Hypothesis) give the documented result;
- every argument of a valid call, swapped in turn for every value of a fixed junk list (wrong types,
  NaN/inf, empty and wrong-rank tensors, int/bool/complex/half dtypes, negative, huge and 2**64
  sizes, ...), and Hypothesis-drawn junk in a random argument: the call either works (and still gives
  the documented result) or raises ValueError/TypeError from course_utils code whose message names
  that argument;
- all float tensors at once in float16, bfloat16 or float64: works or is refused by name.

Every call runs under a time limit (a hang fails), with warnings as errors, and the module runs under
an address-space ceiling, so an allocation the size budget missed fails the test, not the machine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import math
import numbers
import random
import re
import signal
import warnings
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from conftest import examples
from hypothesis import HealthCheck, Phase, find, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import NoSuchExample  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import course_utils as cu  # noqa: E402
from course_utils import _validate  # noqa: E402
from course_utils import widgets  # noqa: E402
from course_utils.attention_positions import OffsetHead  # noqa: E402
from course_utils.combine import Recovery  # noqa: E402
from course_utils.evidence import evidence_record  # noqa: E402
from course_utils.extension import RopeScaling  # noqa: E402
from course_utils.decomposition import FourTerms  # noqa: E402
from course_utils.layers import LayerProfile, ResidualFeatures  # noqa: E402
from course_utils.models import (ATTENTION_CODES, COMBINES, INPUT_CODES, POSITIONS, ModelConfig,  # noqa: E402
                                 TinyTransformer)
from course_utils.probes import ProbeResult  # noqa: E402
from course_utils.tasks import TASKS, Batch  # noqa: E402
from course_utils.training import History  # noqa: E402
from course_utils.text import TextCorpus  # noqa: E402

PACKAGE = Path(cu.__file__).resolve().parent
TIME_LIMIT = 20.0  # seconds for one call: tiny inputs take milliseconds, a hang takes forever;
# generous, so that a machine loaded by other jobs (CI running next to a lesson) gives the same verdict
MEMORY_HEADROOM = 3 * 2**30  # bytes of address space a call may add; MAX_ELEMENTS float64 is 0.4 GB
HUGE = 10**9  # a size at least this large must be refused (MAX_ELEMENTS is 5·10⁷)
LARGE = 50_000  # a length that passes a one-dimensional budget but not a squared one
EXAMPLES = 25

# The plain result containers: built by the library and handed back, not validated on construction.
RECORDS = {"FourTerms", "LayerProfile", "OffsetHead", "Recovery", "ResidualFeatures", "RivalMargin"}


# --- limits: time and memory -----------------------------------------------------------------------

class _OutOfTime(BaseException):
    """Raised by the alarm; a BaseException so no `except Exception` in the code under test eats it."""


@contextlib.contextmanager
def time_limit(seconds: float):
    def alarm(signum, frame):
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _OutOfTime:
        raise AssertionError(f"the call did not finish within {seconds:g} s (a hang, or a size not refused)") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module", autouse=True)
def memory_ceiling():
    """Cap the address space at its current size plus MEMORY_HEADROOM for this module's tests."""
    try:
        import resource
    except ImportError:  # not on Linux: no ceiling, the time limit still applies
        yield
        return
    status = Path("/proc/self/status")
    if not status.exists():
        yield
        return
    size = int(re.search(r"VmSize:\s+(\d+) kB", status.read_text()).group(1)) * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    ceiling = size + MEMORY_HEADROOM
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# --- what an argument accepts ---------------------------------------------------------------------

def _int_like(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return (isinstance(value, torch.Tensor) and value.ndim == 0 and not value.is_floating_point()
            and not value.is_complex() and value.dtype != torch.bool)


def _real_like(value) -> bool:
    if isinstance(value, torch.Tensor):
        return value.ndim == 0 and value.dtype != torch.bool and not value.is_complex()
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class Kind:
    """An argument with no fixed rule: any exception it causes must still name it."""

    def refuses(self, value) -> bool:
        """True when ``value`` must be refused with a ValueError or TypeError."""
        return False

    def skip(self, value) -> bool:
        """True for junk that is valid but slow here (e.g. 50,000 training steps): not generated."""
        return False


@dataclasses.dataclass(frozen=True)
class Int(Kind):
    """An integer >= minimum (bools refused); at most ``maximum`` when given."""

    minimum: int = 0
    maximum: int | None = None

    def refuses(self, value) -> bool:
        if not _int_like(value):
            return True
        value = int(value)
        return value < self.minimum or (self.maximum is not None and value > self.maximum)


@dataclasses.dataclass(frozen=True)
class Size(Int):
    """A count that sets how much is allocated or computed: a HUGE one must be refused."""

    maximum: int | None = HUGE - 1


@dataclasses.dataclass(frozen=True)
class Steps(Size):
    """A number of steps or batches: refused when HUGE; a merely large one is valid but slow."""

    def skip(self, value) -> bool:
        return _int_like(value) and 40 < int(value) < HUGE


@dataclasses.dataclass(frozen=True)
class Seed(Int):
    """A seed for torch.Generator.manual_seed: 0 .. 2**64 - 1."""

    maximum: int | None = 2**64 - 1


@dataclasses.dataclass(frozen=True)
class Bool(Kind):
    def refuses(self, value) -> bool:
        return not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class Real(Kind):
    """A finite real number (ints allowed, bools refused); > 0 when positive."""

    positive: bool = False

    def refuses(self, value) -> bool:
        if not _real_like(value):
            return True
        value = float(value)
        return not math.isfinite(value) or (self.positive and value <= 0)


@dataclasses.dataclass(frozen=True)
class Choice(Kind):
    options: tuple[str, ...] = ()

    def refuses(self, value) -> bool:
        return not (isinstance(value, str) and value in self.options)


@dataclasses.dataclass(frozen=True)
class FloatDtype(Kind):
    def refuses(self, value) -> bool:
        return value not in (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclasses.dataclass(frozen=True)
class Text(Kind):
    def refuses(self, value) -> bool:
        return not isinstance(value, str)


@dataclasses.dataclass(frozen=True)
class AxesOrNone(Kind):
    def refuses(self, value) -> bool:
        return not (value is None or isinstance(value, Axes))


@dataclasses.dataclass(frozen=True)
class Instance(Kind):
    """An object of one class (a model, a config, a batch, ...)."""

    cls: type = object

    def refuses(self, value) -> bool:
        return not isinstance(value, self.cls)


@dataclasses.dataclass(frozen=True)
class Callback(Kind):
    """None or a function; a junk value that is callable (a class, a builtin) is a function the
    caller chose, whose own errors are its own: not generated."""

    def refuses(self, value) -> bool:
        return not (value is None or callable(value))

    def skip(self, value) -> bool:
        return callable(value)


ANY = Kind()


# --- junk ---------------------------------------------------------------------------------------

def _raises(*args, **kwargs):
    raise RuntimeError("junk callable")


def _tiny_model(**overrides) -> TinyTransformer:
    settings_ = dict(vocab_size=6, d_model=8, n_heads=2, n_layers=1, max_len=8)
    settings_.update(overrides)
    return TinyTransformer(ModelConfig(**settings_), seed=0)


def _fixed_junk() -> list:
    return [
        None, True, False, 0, 1, 2, 3, -1, -7, LARGE, HUGE, 10**12, -(10**12), 2**63, 2**64,
        0.5, -2.5, 1e300, -0.0, float("nan"), float("inf"), float("-inf"), 1 + 2j,
        "", "text", "reverse", "interleaved", b"bytes", [], [1, 2, 3], [[1.0], [2.0, 3.0]], ["a", "b"], [None],
        (1.0, 2.0), (3,), {}, {"a": 1}, {"a": torch.zeros(2, 2)}, set(), object(), _raises, range(3), range(0),
        range(-3, 3), np.float64("nan"), np.int64(4), np.float32(0.5), np.bool_(True), np.array([1.0, 2.0]),
        np.zeros((2, 2)), np.array(["a"]), np.array([1 + 1j]), torch.tensor(3), torch.tensor(-2), torch.tensor(2.5),
        torch.tensor(float("nan")), torch.tensor(True), torch.tensor(1 + 1j), torch.tensor([1, 2]),
        torch.float16, torch.bfloat16, torch.int64, torch.bool, torch.complex64, torch.Generator(),
        torch.nn.Linear(2, 2), _tiny_model(position="rope"), _tiny_model(position="learned", max_len=2),
        _tiny_model(vocab_size=3, n_outputs=5), _tiny_model(n_layers=0),
        Batch(tokens=torch.full((2, 3), 50), targets=torch.zeros(2, 3, dtype=torch.long),
              scored=torch.ones(2, 3, dtype=torch.bool)),
        plt.figure,  # a function where an Axes might go
        *_fixed_tensors(),
    ]


def _fixed_tensors() -> list[torch.Tensor]:
    """Empty, wrong-rank, non-finite and wrong-dtype tensors."""
    generator = torch.Generator().manual_seed(0)
    shapes = ((0,), (0, 0), (0, 3), (3, 0), (2, 2, 0), (3,), (2, 3), (3, 3), (2, 3, 3))
    tensors = [torch.randn(shape, generator=generator) for shape in shapes]
    square = torch.randn(3, 3, generator=generator)
    tensors += [square.masked_fill(torch.eye(3, dtype=torch.bool), value) for value in (float("nan"), float("inf"))]
    tensors += [square.to(dtype) for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.complex64)]
    tensors += [(square * 3).long(), square > 0, torch.ones(1, 1, dtype=torch.float64)]
    # integer ids: no sequences, a valid batch, 0 .. 3, and one id far beyond any vocabulary or class count
    tensors += [torch.zeros(0, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.long), torch.arange(4),
                torch.tensor([0, 1, 2, 2**40])]
    return tensors


_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8,
           torch.bool, torch.complex64)


@st.composite
def junk_tensors(draw):
    """Small tensors of any dtype and shape (empty ones included), with NaN, inf or huge entries."""
    shape = draw(st.lists(st.integers(0, 4), max_size=4))
    dtype = draw(st.sampled_from(_DTYPES))
    fill = draw(st.sampled_from(("random", "nan", "inf", "zeros", "huge")))
    values = torch.randn(shape, generator=torch.Generator().manual_seed(draw(st.integers(0, 2**16))),
                         dtype=torch.float64)
    if fill == "zeros":
        values.zero_()
    elif fill == "huge":
        values = values * 1e12
    elif fill in ("nan", "inf") and values.numel() and (dtype.is_floating_point or dtype.is_complex):
        values.view(-1)[0] = float(fill)
    if dtype.is_complex:
        return values.to(dtype) * (1 + 1j)
    if dtype == torch.bool:
        return values > 0
    if not dtype.is_floating_point:
        values = (values * 3).round()
        return (values.abs() if dtype == torch.uint8 else values).clamp(-(2**31), 2**31 - 1).to(dtype)
    return values.to(dtype)


def junk() -> st.SearchStrategy:
    tensors = junk_tensors()
    return st.one_of(
        st.sampled_from(_fixed_junk()),
        tensors,
        tensors.filter(lambda t: t.dtype != torch.bfloat16).map(lambda t: t.numpy()),
        tensors.map(lambda t: t.tolist()),
        st.integers(-5, 40),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=5),
    )


JUNK = junk()


# --- valid inputs ---------------------------------------------------------------------------------

def _randn(draw, *shape, dtype=None) -> torch.Tensor:
    dtype = dtype or draw(st.sampled_from((torch.float32, torch.float64)))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)


small = st.integers(1, 4)
even = st.sampled_from((2, 4, 6))
dtypes = st.sampled_from((torch.float32, torch.float64, torch.float16, torch.bfloat16))
seeds = st.integers(0, 1000)
models = st.sampled_from(sorted(POSITIONS)).map(lambda position: _MODELS[position])
_MODELS = {position: _tiny_model(position=position) for position in POSITIONS}
_INTERLEAVED = _tiny_model(position="rope", causal=True, n_layers=2, nope_layers=(1,))  # lesson 16's layers


@st.composite
def positions_arg(draw, *, limit: int | None = None):
    """An int n or a 1-D list/tensor of positions (whole numbers below ``limit`` when given)."""
    if draw(st.booleans()):
        return draw(st.integers(0, min(6, limit) if limit else 6))
    values = draw(st.lists(st.integers(0, limit - 1) if limit else st.floats(-50, 50), max_size=6))
    return torch.tensor(values, dtype=torch.float64) if draw(st.booleans()) else values


def _n(positions) -> int:
    return positions if isinstance(positions, int) else len(positions)


def fresh_model(**overrides) -> st.SearchStrategy:
    """A new tiny model per example, for functions that change the model they are given."""
    return st.builds(lambda: _tiny_model(**overrides))


@st.composite
def tokens_for(draw, model: TinyTransformer, *, batch: bool = True):
    n = draw(st.integers(1, model.config.max_len))
    shape = (draw(small), n) if batch else (n,)
    generator = torch.Generator().manual_seed(draw(seeds))
    return torch.randint(0, model.config.vocab_size, shape, generator=generator)


@st.composite
def square(draw, *, min_n=1, batch=False):
    n = draw(st.integers(min_n, 5))
    lead = (draw(st.integers(1, 2)),) if batch and draw(st.booleans()) else ()
    return _randn(draw, *lead, n, n)


@st.composite
def model_config_kwargs(draw) -> dict:
    n_heads = draw(st.sampled_from((1, 2)))
    d_model = 2 * n_heads * draw(st.integers(1, 3))
    position = draw(st.sampled_from(sorted(POSITIONS)))
    can_concat = position in INPUT_CODES and d_model >= 4
    combine = draw(st.sampled_from(COMBINES)) if can_concat else "add"
    concat = combine == "concat"
    n_layers, causal = draw(st.integers(0, 2)), draw(st.booleans())
    rope = position == "rope"
    nope = draw(st.sampled_from(((), *[(i,) for i in range(n_layers)]))) if rope else ()
    return dict(
        vocab_size=draw(st.integers(1, 8)), d_model=d_model, n_heads=n_heads, n_layers=n_layers,
        max_len=draw(st.integers(1, 8)), position=position, combine=combine,
        position_scale=draw(st.floats(-2, 2)),
        d_position=draw(st.sampled_from(range(2, d_model, 2))) if concat else None,
        causal=causal,
        reapply_position=draw(st.booleans()) if position not in ATTENTION_CODES and not concat else False,
        n_outputs=draw(st.none() | st.integers(1, 8)), d_ff=draw(st.none() | st.integers(1, 16)),
        relative_max_distance=draw(st.integers(1, 4)),
        alibi_slopes=draw(st.none() | st.tuples(*[st.floats(1e-3, 4)] * n_heads)) if position == "alibi" else None,
        rope_layout=draw(st.sampled_from(("interleaved", "halves"))) if position == "rope" else "interleaved",
        embedding_std=draw(st.sampled_from((1.0, 0.02))),
        attention_kernel=draw(st.sampled_from(("explicit", "fused"))),
        nope_layers=nope, rope_window=draw(st.none() | st.integers(1, 8)) if rope and causal else None,
        attn_temperature=draw(st.none() | st.tuples(st.integers(1, 8), st.floats(0, 1))) if nope else None,
    )


# --- the fuzz table ---------------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    """How to fuzz one public name.

    valid: a strategy for keyword arguments that must work (tiny sizes).
    kinds: what each argument accepts (every argument is listed; ANY when there is no simple rule).
    expect(kwargs, result): asserts the documented result, e.g. its shape.
    call: how to call it (default: the public object itself with the keyword arguments).
    examples: Hypothesis examples per test (fewer for plots and training).
    partners: arguments that must agree (a model and its tokens); when they do not, the message may
        name either one.
    """

    valid: st.SearchStrategy
    kinds: dict[str, Kind]
    expect: Callable[[dict, object], None]
    call: Callable | None = None
    examples: int = EXAMPLES
    partners: tuple[str, ...] = ()


def shape_is(*shape) -> Callable:
    def check(out):
        assert isinstance(out, torch.Tensor), f"expected a tensor, got {type(out).__name__}"
        assert tuple(out.shape) == tuple(shape), f"expected shape {tuple(shape)}, got {tuple(out.shape)}"
        return True  # so that `shape_is(...)(out) and <more>` goes on to check <more>
    return check


def is_float(out, low=-math.inf, high=math.inf):
    assert isinstance(out, float) and low <= out <= high, out


def _call_with(fn, **fixed):
    return lambda **kw: fn(**fixed, **kw)


@st.composite
def _attention_kwargs(draw):
    lead = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    n_q, n_k, d_k, d_v = (draw(small) for _ in range(4))
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    kw = dict(q=_randn(draw, *lead, n_q, d_k, dtype=dtype), k=_randn(draw, *lead, n_k, d_k, dtype=dtype),
              v=_randn(draw, *lead, n_k, d_v, dtype=dtype), mask=None)
    if draw(st.booleans()):
        mask = _randn(draw, n_q, n_k) > 0
        mask[:, 0] = True
        kw["mask"] = mask
    return kw


@st.composite
def _add_learned_kwargs(draw):
    n, d = draw(small), draw(small)
    lead = (draw(small),) if draw(st.booleans()) else ()
    return dict(x=_randn(draw, *lead, n, d), table=_randn(draw, n + draw(st.integers(0, 3)), d))


@st.composite
def _heatmap_kwargs(draw):
    n = draw(small)
    return dict(weights=torch.softmax(_randn(draw, n, n), dim=-1), labels=[f"t{i}" for i in range(n)],
                title=draw(st.text(max_size=5)), ax=None)


@st.composite
def _binary_kwargs(draw):
    n_bits = draw(st.integers(1, 6))
    return dict(positions=draw(positions_arg(limit=2**n_bits)), n_bits=n_bits, signed=draw(st.booleans()),
                dtype=draw(dtypes))


@st.composite
def _bos_kwargs(draw):
    t = draw(st.one_of(st.integers(0, 20), st.lists(st.integers(0, 20), max_size=4),
                       st.lists(st.integers(0, 20), max_size=4).map(lambda v: torch.tensor(v, dtype=torch.long))))
    return dict(t=t, bias=draw(st.floats(-5, 5)))


@st.composite
def _rows(draw, *, min_rows=1, d=None, nonzero=True):
    n, d = draw(st.integers(min_rows, 5)), d or draw(small)
    matrix = _randn(draw, n, d)
    if nonzero:
        matrix[:, 0] = matrix[:, 0].sign() + matrix[:, 0]  # |entry| >= 1: no row of zeros
    return matrix


@st.composite
def _two_sets(draw, names, min_rows=1):
    d = draw(small)
    return {name: draw(_rows(min_rows=min_rows, d=d)) for name in names}


@st.composite
def _four_term_kwargs(draw):
    n_x, n_y, d, d_k = (draw(small) for _ in range(4))
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    return dict(x=_randn(draw, n_x, d, dtype=dtype), e=_randn(draw, n_x, d, dtype=dtype),
                y=_randn(draw, n_y, d, dtype=dtype), f=_randn(draw, n_y, d, dtype=dtype),
                w_q=_randn(draw, d, d_k, dtype=dtype), w_k=_randn(draw, d, d_k, dtype=dtype),
                scaled=draw(st.booleans()))


@st.composite
def _four_terms(draw):
    n = draw(small)
    return FourTerms(*(_randn(draw, n, n) for _ in range(4)))


@st.composite
def _features(draw):
    model = draw(models)
    batch = cu.make_batch("reverse", batch_size=draw(st.integers(2, 3)), length=draw(st.integers(2, 4)),
                          vocab_size=6, generator=torch.Generator().manual_seed(draw(seeds)))
    return cu.residual_features(model, batch)


@st.composite
def _probe_kwargs(draw):
    n = draw(st.integers(4, 10))
    labels = torch.arange(n) % draw(st.integers(1, 3))
    return dict(features=_randn(draw, n, draw(small)), labels=labels, test_fraction=draw(st.floats(0.3, 0.6)),
                ridge=draw(st.floats(1e-4, 1.0)), seed=draw(seeds))


@st.composite
def _logistic_kwargs(draw):
    n = draw(st.integers(4, 10))
    labels = torch.arange(n) % draw(st.integers(1, 3))
    return dict(features=_randn(draw, n, draw(small)), labels=labels, test_fraction=draw(st.floats(0.3, 0.6)),
                seed=draw(seeds))


@st.composite
def _variance_kwargs(draw):
    n = draw(st.integers(2, 10))
    return dict(features=_randn(draw, n, draw(small)), labels=torch.arange(n) % draw(st.integers(1, 3)))


@st.composite
def _curves_kwargs(draw):
    layers = draw(small)
    curves = {f"c{i}": draw(st.lists(st.floats(0, 1), min_size=layers, max_size=layers)) for i in range(draw(small))}
    return dict(curves=curves, title="t", ylabel="y", ax=None, chance=draw(st.none() | st.floats(0, 1)),
                ylim=draw(st.sampled_from((None, (0.0, 1.03), (-1, 2)))))


@st.composite
def _moving_kwargs(draw):
    values = draw(st.lists(st.floats(0, 1), min_size=1, max_size=12))
    return dict(values=torch.tensor(values) if draw(st.booleans()) else values,
                window=draw(st.integers(1, len(values))))


@st.composite
def _steps_kwargs(draw):
    values = draw(st.lists(st.floats(0, 1), min_size=1, max_size=12))
    return dict(accuracy=values, level=draw(st.floats(0, 1)), window=draw(st.integers(1, len(values))))


@st.composite
def _normalised_kwargs(draw):
    length = draw(st.integers(2, 8))
    return dict(positions=draw(positions_arg(limit=length)), d_model=draw(small), length=length, dtype=draw(dtypes))


@st.composite
def _offset_profile_kwargs(draw):
    scores = draw(square(batch=True))
    n = scores.shape[-1]
    start = draw(st.integers(-(n - 1), n - 1))
    stop = draw(st.integers(start + 1, n))
    return dict(scores=scores, offsets=range(start, stop))


@st.composite
def _offset_pull_kwargs(draw):
    scores = draw(square(batch=True))
    n = scores.shape[-1]
    return dict(scores=scores, k=draw(st.integers(-(n - 1), n - 1)))


@st.composite
def _key_pull_kwargs(draw, name="scores"):
    """Lesson 06: scores (or attention weights) [..., n, n] and one key per row, some outside 0 .. n-1."""
    scores = draw(square(batch=True))
    n = scores.shape[-1]
    keys = torch.randint(-1, n + 1, scores.shape[:-1], generator=torch.Generator().manual_seed(draw(seeds)))
    keys.view(-1)[0] = draw(st.integers(0, n - 1))  # at least one row counts
    return {name: scores.softmax(dim=-1) if name == "weights" else scores, "keys": keys}


_TERM_NAMES = ("token_token", "token_position", "position_token", "position_position")


@st.composite
def _neighbour_kwargs(draw):
    similarity = draw(square())
    n = similarity.shape[0]
    return dict(similarity=similarity, offset=draw(st.integers(-(n - 1), n - 1)))


@st.composite
def _far_kwargs(draw):
    similarity = draw(square(min_n=2))
    return dict(similarity=similarity, min_offset=draw(st.integers(1, similarity.shape[0] - 1)))


@st.composite
def _band_kwargs(draw):
    min_offset = draw(st.integers(1, 3))
    return dict(table=draw(_rows(min_rows=max(3, min_offset + 1))), min_offset=min_offset)


@st.composite
def _movement_kwargs(draw):
    before = draw(_rows())
    return dict(before=before, after=_randn(draw, *before.shape))


@st.composite
def _weight_back_kwargs(draw):
    model = draw(models)
    tokens = draw(tokens_for(model))
    return dict(model=model, tokens=tokens, back=draw(st.integers(0, tokens.shape[1] - 1)),
                first_query=draw(st.integers(0, tokens.shape[1] - 1)))


@st.composite
def _offset_similarity_kwargs(draw):
    offsets = draw(st.one_of(st.floats(-100, 100), st.integers(-100, 100),
                             st.lists(st.floats(-100, 100), max_size=5), positions_arg().filter(
                                 lambda p: not isinstance(p, int))))
    return dict(offsets=offsets, d_model=draw(even), base=draw(st.floats(1.5, 1e5)),
                spacing=draw(st.sampled_from(("vaswani", "tensor2tensor"))))


@st.composite
def _permutation_kwargs(draw):
    model = draw(models)
    tokens = draw(tokens_for(model))
    order = draw(st.permutations(range(tokens.shape[1])))
    return dict(model=model, tokens=tokens, order=order if draw(st.booleans()) else torch.tensor(order))


@st.composite
def _rope_kwargs(draw):
    lead = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    n, d = draw(small), draw(even)
    x = _randn(draw, *lead, n, d)
    positions = draw(st.none() | st.lists(st.floats(-20, 20), min_size=n, max_size=n).map(torch.tensor))
    rotary_dim = draw(st.none() | st.sampled_from(range(2, d + 1, 2)))
    pairs = (rotary_dim or d) // 2
    omega = draw(st.none() | st.lists(st.floats(1e-4, 2), min_size=pairs, max_size=pairs).map(
        lambda values: torch.tensor(values, dtype=torch.float64)))
    return dict(x=x, positions=positions, base=draw(st.floats(2, 1e5)),
                layout=draw(st.sampled_from(("interleaved", "halves"))), rotary_dim=rotary_dim, frequencies=omega)


@st.composite
def _rope_decode_kwargs(draw):
    lead = tuple(draw(st.lists(st.integers(1, 2), max_size=1)))
    t, d, d_v = draw(st.integers(0, 3)), draw(even), draw(small)
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    q, k = _randn(draw, *lead, 1, d, dtype=dtype), _randn(draw, *lead, 1, d, dtype=dtype)
    v = _randn(draw, *lead, 1, d_v, dtype=dtype)
    empty = t == 0 and draw(st.booleans())
    cache_k = None if empty else _randn(draw, *lead, t, d, dtype=dtype)
    cache_v = None if empty else _randn(draw, *lead, t, d_v, dtype=dtype)
    return dict(q=q, k=k, v=v, cache_k=cache_k, cache_v=cache_v,
                position=draw(st.none() | st.floats(-50, 50)), base=draw(st.floats(2, 1e5)),
                layout=draw(st.sampled_from(("interleaved", "halves"))))


def _expect_decode(kw, out):
    output, cache_k, cache_v = out
    t = 0 if kw["cache_k"] is None else kw["cache_k"].shape[-2]
    shape_is(*kw["v"].shape)(output)
    shape_is(*kw["k"].shape[:-2], t + 1, kw["k"].shape[-1])(cache_k)
    shape_is(*kw["v"].shape[:-2], t + 1, kw["v"].shape[-1])(cache_v)


@st.composite
def _rope_frequencies_kwargs(draw):
    scaling = draw(st.sampled_from((None, "linear", "ntk", "dynamic", "yarn")))
    d = draw(st.sampled_from((4, 6, 8, 16)) if scaling in ("ntk", "dynamic") else even)
    return dict(d=d, base=draw(st.floats(2, 1e5)), scaling=scaling, factor=draw(st.floats(1, 64)),
                original_max_len=draw(st.integers(1, 4096)), length=draw(st.integers(1, 10_000)),
                beta_fast=draw(st.floats(4, 64)), beta_slow=draw(st.floats(0.1, 2)))


@st.composite
def _rope_config_kwargs(draw):
    """A small config.json dict for every rope_type, as rope_frequencies_from_config reads it."""
    heads, head_dim = draw(st.integers(1, 4)), draw(st.sampled_from((8, 16)))
    partial = draw(st.sampled_from((None, 0.5, 1.0)))
    kind = draw(st.sampled_from(("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")))
    config = dict(model_type=draw(st.sampled_from(("llama", "phi3", "qwen3"))), hidden_size=heads * head_dim,
                  num_attention_heads=heads, max_position_embeddings=draw(st.integers(8, 4096)),
                  rope_theta=draw(st.floats(2, 1e6)))
    if partial is not None:
        config["partial_rotary_factor"] = partial
    rope = {"rope_type": kind}
    if kind != "default":
        rope["factor"] = draw(st.floats(1, 64))
    if kind in ("yarn", "longrope", "llama3"):
        rope["original_max_position_embeddings"] = draw(st.integers(1, 4096))
    if kind == "llama3":
        rope["low_freq_factor"] = draw(st.floats(0.5, 2))
        rope["high_freq_factor"] = rope["low_freq_factor"] + draw(st.floats(0.5, 8))
    if kind == "longrope":
        pairs = int(head_dim * (partial or 1.0)) // 2
        rope["short_factor"] = draw(st.lists(st.floats(1, 2), min_size=pairs, max_size=pairs))
        rope["long_factor"] = draw(st.lists(st.floats(1, 64), min_size=pairs, max_size=pairs))
    config[draw(st.sampled_from(("rope_scaling", "rope_parameters")))] = rope
    return dict(config=config, length=draw(st.none() | st.integers(1, 10**6)), layer_type=None)


def _expect_rope_config(kw, out):
    config = kw["config"]
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    rope = config.get("rope_scaling") or config["rope_parameters"]
    whole = rope["rope_type"] == "proportional" or (rope["rope_type"] == "default"
                                                    and config["model_type"] != "phi3")
    pairs = head_dim // 2 if whole else int(head_dim * (config.get("partial_rotary_factor") or 1.0)) // 2
    inv_freq, scaling = out
    shape_is(pairs)(inv_freq)
    assert inv_freq.dtype == torch.float64 and bool((inv_freq >= 0).all() & torch.isfinite(inv_freq).all())
    is_float(scaling, 1e-12)


@st.composite
def _mrope_segments_kwargs(draw):
    """Text and image/video segments, never two vision segments in a row (lesson 16's M-RoPE)."""
    segments = []
    for _ in range(draw(st.integers(0, 4))):
        if segments and segments[-1][0] == "image" or draw(st.booleans()):
            segments.append(("text", draw(small)))
        else:
            segments.append(("image", draw(small), draw(small), draw(small)))
    return dict(segments=segments)


def _mrope_length(segments) -> int:
    return sum(s[1] if s[0] == "text" else s[1] * s[2] * s[3] for s in segments)


@st.composite
def _mrope_section(draw, interleaved=False):
    """Three pair counts; interleaved: ones Qwen3-VL's cycle (time, height, width, ...) can hold."""
    section = draw(st.lists(st.integers(0, 3), min_size=3, max_size=3).filter(sum).filter(
        lambda s: not interleaved or (3 * s[1] <= sum(s) + 1 and 3 * s[2] <= sum(s))))
    return tuple(section) if draw(st.booleans()) else section


@st.composite
def _mrope_axes_kwargs(draw):
    interleaved = draw(st.booleans())
    return dict(mrope_section=draw(_mrope_section(interleaved)), base=draw(st.floats(2, 1e6)),
                mrope_interleaved=interleaved)


@st.composite
def _mrope_rotate_kwargs(draw):
    interleaved = draw(st.booleans())
    section = draw(_mrope_section(interleaved))
    lead = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    n = draw(small)
    positions = torch.tensor(draw(st.lists(st.integers(-50, 50), min_size=3 * n, max_size=3 * n))).reshape(3, n)
    return dict(x=_randn(draw, *lead, n, 2 * sum(section)), positions=positions, mrope_section=section,
                base=draw(st.floats(2, 1e6)), mrope_interleaved=interleaved)


def _expect_mrope_axes(kw, out):
    assert list(out) == ["time", "height", "width"]
    assert [axis["n_pairs"] for axis in out.values()] == list(kw["mrope_section"])


def _expect_pair_values(rule) -> Callable:
    def check(kw, out):
        shape_is(kw["d"] // 2)(out)
        assert out.dtype == torch.float64 and bool(rule(out)), out
    return check


def _expect_scaled(kw, out):
    rule = out.config.rope_scaling
    assert isinstance(out, TinyTransformer) and (rule is None if kw["scaling"] is None else rule.kind == kw["scaling"])


@st.composite
def _rope_scaling_kwargs(draw):
    kind = draw(st.sampled_from(("linear", "ntk", "dynamic", "yarn")))
    kwargs = dict(kind=kind, factor=draw(st.floats(1, 64)), original_max_len=draw(st.integers(1, 4096)))
    if kind == "yarn":
        kwargs.update(beta_fast=draw(st.floats(4, 64)), beta_slow=draw(st.floats(0.1, 2)),
                      attention_factor=draw(st.none() | st.floats(0.5, 4)))
    return kwargs


def _expect_rule(kw, out):
    assert isinstance(out, RopeScaling) and out.kind == kw["kind"] and out.factor == kw["factor"]


def _expect_converted(kw, out):
    assert isinstance(out, TinyTransformer) and out.config.rope_layout == kw["layout"]


@st.composite
def _similarity_vs_offset_kwargs(draw):
    codes = {f"code {i}": _randn(draw, draw(st.integers(3, 6)), draw(small)) for i in range(draw(small))}
    return dict(codes=codes, title="t", reference=draw(st.integers(0, 2)), normalise=draw(st.booleans()), ax=None)


@st.composite
def _sinusoidal_kwargs(draw):
    return dict(positions=draw(positions_arg()), d_model=draw(even), base=draw(st.floats(1.5, 1e5)),
                layout=draw(st.sampled_from(("interleaved", "halves"))),
                spacing=draw(st.sampled_from(("vaswani", "tensor2tensor"))), dtype=draw(dtypes))


@st.composite
def _tiny_transformer_kwargs(draw):
    config = ModelConfig(**draw(model_config_kwargs()))
    n = draw(st.integers(1, config.max_len if config.position == "learned" else 10))
    tokens = torch.randint(0, config.vocab_size, (draw(small), n), generator=torch.Generator().manual_seed(draw(seeds)))
    start = {"normalised": 0, "learned": config.max_len - n}.get(config.position, 10**6)
    return dict(config=config, seed=draw(seeds), tokens=tokens, start=draw(st.integers(0, start)))


def _tiny_transformer(*, config, seed, tokens, start):
    return TinyTransformer(config, seed=seed)(tokens, start=start)


def _adamw_step(**kwargs):
    """One AdamW step with a gradient of ones on every parameter; the first parameter after it."""
    optimiser = cu.AdamW(**kwargs)
    tensors = [t for group in optimiser.param_groups for t in group["params"]]
    for tensor in tensors:
        tensor.grad = torch.ones_like(tensor)
    optimiser.step()
    return tensors[0].detach()


def _relative_bias(*, n_heads, max_distance, n):
    return cu.RelativeBias(n_heads, max_distance)(n)


@st.composite
def _train_kwargs(draw):
    shortest = draw(st.integers(1, 3))
    return dict(model=draw(fresh_model(position=draw(st.sampled_from(sorted(POSITIONS))))), task="reverse",
                steps=draw(st.integers(1, 2)), batch_size=draw(st.integers(1, 3)),
                lengths=(shortest, draw(st.integers(shortest, 5))), lr=draw(st.floats(1e-4, 1e-2)), seed=draw(seeds),
                offset=draw(st.integers(1, 3)), bos=draw(st.booleans()), progress=False)


@st.composite
def _evaluate_kwargs(draw):
    length = draw(st.integers(1, 6))
    return dict(model=draw(models), task="reverse", length=length, n_batches=draw(st.integers(1, 2)),
                batch_size=draw(small), seed=draw(seeds), offset=draw(st.integers(1, 3)), bos=draw(st.booleans()),
                from_position=draw(st.integers(0, length - 1)))


@st.composite
def _accuracy_by_position_kwargs(draw):
    return dict(model=draw(models), task="reverse", length=draw(st.integers(1, 6)), bos=draw(st.booleans()),
                batch_size=draw(small), seed=draw(seeds))


@st.composite
def _make_batch_kwargs(draw):
    task = draw(st.sampled_from(TASKS))
    length = draw(st.integers(2, 6))
    return dict(task=task, batch_size=draw(small), length=length, vocab_size=draw(st.integers(2, 8)),
                generator=torch.Generator().manual_seed(draw(seeds)), offset=draw(st.integers(1, length - 1)),
                bos=draw(st.booleans()))


@st.composite
def _context_gain_kwargs(draw):
    length = draw(st.integers(3, 6))
    rows = draw(st.lists(st.sampled_from(("rope", "learned", "bigram counts")), min_size=1, max_size=3, unique=True))
    curves = {row: [torch.rand(length, generator=torch.Generator().manual_seed(draw(seeds)))
                    for _ in range(draw(st.integers(1, 3)))] for row in rows}
    return dict(curves=curves, first_position=draw(st.integers(1, length - 1)))


@st.composite
def _scored_accuracy_kwargs(draw):
    batch = cu.make_batch(draw(st.sampled_from(("reverse", "previous_token", "count"))), batch_size=draw(small),
                          length=draw(st.integers(2, 6)), vocab_size=5,
                          generator=torch.Generator().manual_seed(draw(seeds)))
    n_classes = draw(st.integers(6, 8))
    return dict(logits=torch.randn(*batch.tokens.shape, n_classes, generator=torch.Generator().manual_seed(1)),
                batch=batch)


@st.composite
def _setup_kwargs(draw):
    return dict(seed=draw(st.integers(0, 2**32 - 1)))


@contextlib.contextmanager
def _global_state_kept():
    """setup() seeds everything and switches torch to deterministic, one-thread mode: undo it."""
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    states = random.getstate(), np.random.get_state(), torch.random.get_rng_state()
    params = dict(matplotlib.rcParams)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.random.set_rng_state(states[2])
        matplotlib.rcParams.update(params)


def _setup(**kw):
    with _global_state_kept():
        return cu.setup(**kw)


def _expect_history(kw, out):
    histories = out if isinstance(kw["model"], list) else [out]
    assert len(histories) == (len(kw["model"]) if isinstance(kw["model"], list) else 1)
    assert all(isinstance(h, History) and len(h.loss) == len(h.accuracy) == kw["steps"] for h in histories)


def _expect_features(kw, out):
    batch_size, n = kw["batch"].tokens.shape
    assert isinstance(out, ResidualFeatures)
    assert len(out.layers) == kw["model"].config.n_layers + 1
    assert all(layer.shape == (batch_size * n, kw["model"].config.d_model) for layer in out.layers)
    assert out.positions.shape == out.tokens.shape == out.targets.shape == out.scored.shape == (batch_size * n,)


def _expect_profile(kw, out):
    assert isinstance(out, LayerProfile)
    assert out.n_layers == len(kw["features"].layers) - 1
    assert all(len(getattr(out, name)) == len(kw["features"].layers) for name in LayerProfile.__dataclass_fields__)


def _expect_batch(kw, out):
    assert isinstance(out, Batch)
    for field in (out.tokens, out.targets, out.scored):
        shape_is(kw["batch_size"], kw["length"])(field)


def _expect_config(kw, out):
    assert isinstance(out, ModelConfig)
    kept = {**kw, "nope_layers": tuple(sorted(kw.get("nope_layers", ())))}  # a list is kept as a tuple
    assert all(getattr(out, name) == value for name, value in kept.items())


def _expect_four(n_x, n_y):
    def check(out):
        assert isinstance(out, FourTerms)
        for term in (*out, out.total()):
            shape_is(n_x, n_y)(term)
    return check


def _expect_offset_similarity(kw, out):
    offsets = kw["offsets"]
    scalar = isinstance(offsets, numbers.Real) or (isinstance(offsets, torch.Tensor) and offsets.ndim == 0)
    shape_is(*(() if scalar else (len(offsets),)))(out)
    assert out.dtype == torch.float64


def _expect_angles(kw, out):
    assert isinstance(out, torch.Tensor) and out.ndim == 1 and out.dtype == torch.float64
    assert 1 <= out.shape[0] <= min(kw["a"].shape[0], kw["b"].shape[0], kw["a"].shape[1])


def _expect_directions(kw, out):
    rank = cu.effective_rank(kw["matrix"], kw["energy"])
    shape_is(rank, kw["matrix"].shape[1])(out)


def _expect_pair_columns(kw, out):
    assert isinstance(out, tuple) and len(out) == 2
    for columns in out:
        shape_is(kw["d_model"] // 2)(columns)


def _expect_attention(kw, out):
    q, k, v = kw["q"], kw["k"], kw["v"]
    output, weights = out
    shape_is(*q.shape[:-1], v.shape[-1])(output)
    shape_is(*q.shape[:-1], k.shape[-2])(weights)


def _expect_rounded(kw, out):
    values = kw["values"]
    shape = tuple(values.shape) if isinstance(values, torch.Tensor) else np.shape(values)
    if not shape:
        assert isinstance(out, float), f"a number or 0-d tensor gives a float, got {out!r}"
    else:
        assert isinstance(out, list) and len(out) == shape[0], f"shape {shape} gives a list of {shape[0]}, got {out!r}"


def _expect_recovery(kw, out):
    assert isinstance(out, Recovery)
    assert all(0 <= value <= 1 for value in dataclasses.astuple(out))


def _expect_fit(kw, out):
    weight, losses = out
    shape_is(kw["d_model"], kw["d_model"])(weight)
    assert len(losses) == kw["steps"]


def _expect_least_squares(kw, out):
    solution, residual = out
    shape_is(kw["target"].shape[1], kw["source"].shape[1])(solution)
    is_float(residual, 0)


def _expect_tensor_dtype(shape_of, dtype_of=None):
    def check(kw, out):
        shape_is(*shape_of(kw))(out)
        if dtype_of is not None:
            assert out.dtype == dtype_of(kw), (out.dtype, dtype_of(kw))
    return check


MODEL = Instance(TinyTransformer)
dtype_kw = lambda kw: kw["dtype"]  # noqa: E731

# lesson 14: texts are 1-D tensors of character ids below 6 (the tiny models' vocabulary)


def _text(draw, min_size: int = 2, max_size: int = 30) -> torch.Tensor:
    n = draw(st.integers(min_size, max_size))
    return torch.randint(0, 6, (n,), generator=torch.Generator().manual_seed(draw(seeds)))


@st.composite
def _train_text_kwargs(draw):
    """train on a text: a causal model, windows of 1-5 characters."""
    shortest = draw(st.integers(1, 3))
    longest = draw(st.integers(shortest, 5))
    model = _tiny_model(position=draw(st.sampled_from(sorted(POSITIONS))), causal=True)
    return dict(model=model, task=_text(draw, longest + 1), steps=draw(st.integers(1, 2)),
                batch_size=draw(st.integers(1, 3)), lengths=(shortest, longest), lr=draw(st.floats(1e-4, 1e-2)),
                seed=draw(seeds), offset=draw(st.integers(1, 3)), bos=draw(st.booleans()), progress=False)


@st.composite
def _text_batch_kwargs(draw):
    length = draw(st.integers(1, 6))
    return dict(ids=_text(draw, length + 1), batch_size=draw(small), length=length,
                generator=torch.Generator().manual_seed(draw(seeds)))


@st.composite
def _text_windows_kwargs(draw):
    length = draw(st.integers(1, 6))
    return dict(ids=_text(draw, length + 1), length=length, n_windows=draw(small))


@st.composite
def _counts_by_position_kwargs(draw):
    length = draw(st.integers(1, 6))
    return dict(train=_text(draw), ids=_text(draw, length + 1), vocab_size=6, length=length,
                n_windows=draw(small), order=draw(st.sampled_from((1, 2))))


@st.composite
def _unigram_bigram_kwargs(draw):
    return dict(train=_text(draw), held_out=_text(draw), vocab_size=draw(st.integers(6, 9)))


@st.composite
def _validation_split_kwargs(draw):
    return dict(ids=_text(draw, 4), share=draw(st.floats(0.3, 0.7)))


def _expect_split(kw, out):
    train, validation = out
    assert torch.equal(torch.cat([train, validation]), kw["ids"]) and len(train) and len(validation)


@st.composite
def _loss_by_position_kwargs(draw):
    model = _tiny_model(position=draw(st.sampled_from(sorted(POSITIONS))), causal=True)
    length = draw(st.integers(1, model.config.max_len))
    return dict(model=model, ids=_text(draw, length + 1), length=length, n_windows=draw(small),
                context=draw(st.none() | st.integers(1, 8)))


# lesson 16: a long text read as a stream (course_utils/streaming.py)
@st.composite
def _streaming_kwargs(draw, *, with_cache: bool = True):
    position = draw(st.sampled_from(sorted(POSITIONS)))
    model = _tiny_model(position=position, causal=True)
    length = draw(st.integers(1, model.config.max_len))
    window = draw(st.none() | st.integers(1, 8))
    if not with_cache and position in INPUT_CODES:  # a kept cache with a window needs a code inside attention
        window = None
    cache = "recomputed" if window is not None and position in INPUT_CODES else \
        draw(st.sampled_from(("kept", "recomputed")))
    if not with_cache:
        cache = "kept"
    kw = dict(model=model, ids=_text(draw, length + 1), length=length, n_windows=draw(small), window=window,
              sinks=0 if window is None else draw(st.integers(0, 3)),
              query_scale=draw(st.none() | st.floats(0.5, 2).map(lambda c: torch.full((length,), c)))
              if cache == "kept" else None)
    return {**kw, "cache": cache} if with_cache else kw


@st.composite
def _dynamic_cache_gap_kwargs(draw):
    model = _tiny_model(position="rope", causal=True,
                        rope_scaling=RopeScaling("dynamic", factor=2.0, original_max_len=draw(st.integers(1, 6))))
    length = draw(st.integers(1, model.config.max_len))
    return dict(model=model, ids=_text(draw, length + 1), length=length, n_windows=draw(small))


@st.composite
def _long_context_scale_kwargs(draw):
    rule = draw(st.sampled_from(("yarn", "log_length", "llama4")))
    llama4 = rule == "llama4"
    return dict(rule=rule, length=draw(st.integers(1, 300)), original_max_len=draw(st.integers(2, 64)),
                floor_scale=draw(st.none() | st.integers(1, 64)) if llama4 else None,
                attn_scale=draw(st.floats(0, 1)) if llama4 else 0.1)


def _expect_text_batch(rows: str):
    def expect(kw, out):
        assert isinstance(out, Batch)
        for field in (out.tokens, out.targets, out.scored):
            shape_is(kw[rows], kw["length"])(field)
        assert torch.equal(out.tokens[:, 1:], out.targets[:, :-1])
    return expect


# lesson 15: RoPE in today's models (rope_base, rope_precision, qk_norm, mla, position_ids)
_POSITIVE_FREQUENCIES = st.lists(st.floats(1e-4, 2), min_size=1, max_size=6).map(
    lambda values: torch.tensor(values, dtype=torch.float64))


@st.composite
def _score_error_kwargs(draw):
    pairs, rows = draw(small), draw(small)
    offset = draw(st.integers(0, 3))
    positions = torch.tensor(draw(st.lists(st.integers(offset, 5000), min_size=1, max_size=4)))
    return dict(q=_randn(draw, rows, 2 * pairs), k=_randn(draw, rows, 2 * pairs), positions=positions,
                frequencies=draw(_POSITIVE_FREQUENCIES.filter(lambda f: len(f) == pairs)
                                 | st.just(torch.rand(pairs, dtype=torch.float64) + 0.01)),
                dtype=draw(st.sampled_from((torch.float64, torch.float32, torch.float16, torch.bfloat16))),
                offset=offset)


@st.composite
def _mla_kwargs(draw):
    n, heads, d_nope, rank, d_rope = draw(small), draw(small), draw(even), draw(small), draw(even)
    rope = draw(st.booleans())
    return dict(q_nope=_randn(draw, n, heads, d_nope), latent=_randn(draw, n, rank), w_uk=_randn(draw, heads, d_nope, rank),
                q_rope=_randn(draw, n, heads, d_rope) if rope else None, k_rope=_randn(draw, n, d_rope) if rope else None,
                absorbed=draw(st.booleans()), rotate_nope=draw(st.booleans()))


@st.composite
def _packed_kwargs(draw):
    model = _tiny_model(position=draw(st.sampled_from(("none", "sinusoidal", "learned", "rope", "alibi"))),
                        causal=True)
    first, length = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return dict(model=model, ids=_text(draw, max(first, length) + 1), first_length=first, length=length,
                n_windows=draw(small), packing=draw(st.sampled_from(("reset", "continued", "unmasked"))))


def _expect_position_ids(kw, out):
    assert out.dtype == torch.long and out.shape == kw["document_ids"].shape and (out >= 0).all()


def _expect_smallest_bases(kw, out):
    assert isinstance(out, list) and len(out) == len(kw["lengths"])
    assert all(math.isnan(b) or b in kw["bases"].tolist() for b in out)


CASES: dict[str, Case] = {
    "angle_error": Case(
        st.fixed_dictionaries(dict(positions=st.lists(st.integers(0, 10**6), min_size=1, max_size=5).map(torch.tensor),
                                   frequencies=_POSITIVE_FREQUENCIES, dtype=st.sampled_from(
                                       (torch.float64, torch.float32, torch.bfloat16)))),
        dict(positions=ANY, frequencies=ANY, dtype=ANY),
        lambda kw, out: (shape_is(len(kw["positions"]), len(kw["frequencies"]))(out),
                         bool(((out >= 0) & (out <= math.pi + 1e-9)).all()) or _raises())),
    "first_negative": Case(
        st.fixed_dictionaries(dict(frequencies=_POSITIVE_FREQUENCIES, max_length=st.integers(0, 5000))),
        dict(frequencies=ANY, max_length=Int(0, 10**7)),
        lambda kw, out: out is None or (isinstance(out, int) and 0 < out <= kw["max_length"])),
    "llama3_bands": Case(
        st.fixed_dictionaries(dict(frequencies=_POSITIVE_FREQUENCIES, original_max_len=st.integers(1, 10_000),
                                   low_freq_factor=st.floats(0.5, 2), high_freq_factor=st.floats(2.5, 8))),
        dict(frequencies=ANY, original_max_len=Int(1, 10**9), low_freq_factor=Real(positive=True),
             high_freq_factor=Real(positive=True)),
        lambda kw, out: (shape_is(len(kw["frequencies"]))(out), bool(((out >= 0) & (out <= 2)).all()) or _raises()),
        partners=("low_freq_factor", "high_freq_factor")),
    "mla_cache_elements": Case(
        st.fixed_dictionaries({name: st.integers(1, 512) for name in (
            "n_heads", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")}),
        {name: Int(1, 10**7) for name in (
            "n_heads", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")},
        lambda kw, out: out == {"mla": kw["kv_lora_rank"] + kw["qk_rope_head_dim"],
                                "full": kw["n_heads"] * (kw["qk_nope_head_dim"] + kw["qk_rope_head_dim"]
                                                         + kw["v_head_dim"])} or _raises()),
    "mla_scores": Case(
        _mla_kwargs(),
        dict(q_nope=ANY, latent=ANY, w_uk=ANY, q_rope=ANY, k_rope=ANY, absorbed=Bool(), rotate_nope=Bool()),
        lambda kw, out: shape_is(kw["q_nope"].shape[1], kw["q_nope"].shape[0], kw["q_nope"].shape[0])(out),
        partners=("q_nope", "latent", "w_uk", "q_rope", "k_rope", "rotate_nope")),
    "packed_document_bits": Case(
        _packed_kwargs(),
        dict(model=MODEL, ids=ANY, first_length=Size(1), length=Size(1), n_windows=Size(1),
             packing=Choice(("reset", "continued", "unmasked"))),
        lambda kw, out: shape_is(kw["length"])(out), examples=15,
        partners=("model", "ids", "first_length", "length", "packing")),
    "position_ids": Case(
        st.fixed_dictionaries(dict(document_ids=st.lists(st.lists(st.integers(0, 3), min_size=3, max_size=3),
                                                          min_size=1, max_size=3).map(torch.tensor))),
        dict(document_ids=ANY), _expect_position_ids),
    "rms_norm": Case(
        st.fixed_dictionaries(dict(x=st.integers(1, 6).flatmap(lambda d: st.just(torch.randn(2, d))),
                                   eps=st.floats(1e-8, 1e-2))).flatmap(
            lambda kw: st.fixed_dictionaries(dict(x=st.just(kw["x"]), eps=st.just(kw["eps"]), gain=st.none()
                                                  | st.just(torch.rand(kw["x"].shape[-1]) + 0.5)))),
        dict(x=ANY, gain=ANY, eps=ANY),
        lambda kw, out: shape_is(*kw["x"].shape)(out), partners=("x", "gain")),
    "sampled_similarity_gap": Case(
        st.fixed_dictionaries(dict(offsets=st.lists(st.floats(0, 1000), min_size=1, max_size=4).map(
            lambda v: torch.tensor(v, dtype=torch.float64)), frequencies=_POSITIVE_FREQUENCIES,
            n_samples=st.integers(1, 50), noise=st.floats(0, 2), seed=seeds)),
        dict(offsets=ANY, frequencies=ANY, n_samples=Int(1, 10**6), noise=ANY, seed=Seed()),
        lambda kw, out: shape_is(len(kw["offsets"]))(out), partners=("offsets", "frequencies", "n_samples")),
    "score_error": Case(
        _score_error_kwargs(),
        dict(q=ANY, k=ANY, positions=ANY, frequencies=ANY, dtype=ANY, offset=Int(0, 2**40)),
        lambda kw, out: shape_is(len(kw["positions"]))(out),
        partners=("q", "k", "frequencies", "positions", "offset")),
    "similar_token_score": Case(
        st.fixed_dictionaries(dict(offsets=st.lists(st.floats(-1000, 1000), min_size=1, max_size=5).map(
            lambda v: torch.tensor(v, dtype=torch.float64)), frequencies=_POSITIVE_FREQUENCIES)),
        dict(offsets=ANY, frequencies=ANY),
        lambda kw, out: shape_is(len(kw["offsets"]))(out)),
    "smallest_bases": Case(
        st.fixed_dictionaries(dict(lengths=st.lists(st.integers(1, 2000), min_size=1, max_size=3), d=even,
                                   bases=st.lists(st.floats(1.5, 1e6), min_size=1, max_size=4).map(
                                       lambda v: torch.tensor(v, dtype=torch.float64)))),
        dict(lengths=ANY, d=Size(1), bases=ANY), _expect_smallest_bases, partners=("lengths", "d", "bases")),
    "accuracy_by_position": Case(
        _accuracy_by_position_kwargs(),
        dict(model=MODEL, task=Choice(TASKS), length=Size(1), bos=Bool(), batch_size=Size(1), seed=Seed()),
        lambda kw, out: shape_is(kw["length"])(out), examples=15),
    "add_learned_code": Case(_add_learned_kwargs(), dict(x=ANY, table=ANY),
                             lambda kw, out: shape_is(*kw["x"].shape)(out)),
    "alibi_bias": Case(
        small.flatmap(lambda h: st.fixed_dictionaries(dict(
            n=small, n_heads=st.just(h), dtype=dtypes,
            slopes=st.none() | st.tuples(*[st.floats(1e-3, 4)] * h)))),
        dict(n=Size(1), n_heads=Size(1), slopes=ANY, dtype=FloatDtype()),
        _expect_tensor_dtype(lambda kw: (kw["n_heads"], kw["n"], kw["n"]), dtype_kw)),
    "alibi_slopes": Case(st.fixed_dictionaries(dict(n_heads=small)), dict(n_heads=Size(1)),
                         lambda kw, out: shape_is(kw["n_heads"])(out)),
    "attention": Case(_attention_kwargs(), dict(q=ANY, k=ANY, v=ANY, mask=ANY), _expect_attention),
    "angle_coverage": Case(
        st.fixed_dictionaries(dict(frequencies=st.lists(st.floats(1e-4, 2), min_size=1, max_size=6).map(
            lambda values: torch.tensor(values, dtype=torch.float64)), length=st.integers(1, 10_000))),
        dict(frequencies=ANY, length=ANY),
        lambda kw, out: shape_is(len(kw["frequencies"]))(out)),
    "attention_at_offset": Case(st.fixed_dictionaries(dict(weights=square(batch=True), offset=st.integers(0, 6))),
                                dict(weights=ANY, offset=Int(0)),
                                lambda kw, out: shape_is(*kw["weights"].shape[:-1])(out)),
    "attention_beyond": Case(st.fixed_dictionaries(dict(weights=square(batch=True), distance=st.integers(0, 6))),
                             dict(weights=ANY, distance=Int(0)),
                             lambda kw, out: shape_is(*kw["weights"].shape[:-1])(out)),
    "attention_entropy": Case(st.fixed_dictionaries(dict(weights=square(batch=True))), dict(weights=ANY),
                              lambda kw, out: shape_is(*kw["weights"].shape[:-1])(out)),
    "attention_heatmap": Case(_heatmap_kwargs(), dict(weights=ANY, labels=ANY, title=Text(), ax=AxesOrNone()),
                              lambda kw, out: isinstance(out, Axes), examples=10),
    "offset_head": Case(
        models.filter(lambda m: m.config.n_layers > 0).flatmap(
            lambda m: tokens_for(m).flatmap(lambda tokens: st.fixed_dictionaries(dict(
                model=st.just(m), tokens=st.just(tokens), offset=st.integers(0, tokens.shape[1] - 1),
                layer=st.integers(0, m.config.n_layers - 1))))),
        dict(model=MODEL, tokens=ANY, offset=Int(0), layer=Int(0), queries=ANY),
        lambda kw, out: isinstance(out, OffsetHead) and 0 <= out.head < kw["model"].config.n_heads
        and out.weights.shape == (kw["tokens"].shape[1],) * 2 and out.on_offset.shape == (kw["tokens"].shape[1],)
        and 0 <= out.score <= 1 + 1e-6, partners=("model", "tokens")),
    "pair_logits": Case(
        tokens_for(_MODELS["rope"]).flatmap(lambda tokens: st.fixed_dictionaries(dict(
            model=st.just(_MODELS["rope"]), tokens=st.just(tokens), head=st.integers(0, 1), layer=st.just(0)))),
        dict(model=MODEL, tokens=ANY, head=Int(0), layer=Int(0)),
        lambda kw, out: shape_is(kw["tokens"].shape[0], 2, kw["tokens"].shape[1], kw["tokens"].shape[1])(out),
        partners=("model", "tokens")),
    "favourite_key_gap": Case(
        st.fixed_dictionaries(dict(
            model=st.just(_MODELS["rope"]), head=st.integers(0, 1),
            offsets=st.lists(st.integers(0, 40), min_size=1, max_size=5).map(torch.tensor),
            token_weights=st.one_of(st.none(), st.builds(
                lambda seed: torch.rand(_MODELS["rope"].config.vocab_size,
                                        generator=torch.Generator().manual_seed(seed)) + 0.1, seeds)))),
        dict(model=MODEL, offsets=ANY, head=Int(0), token_weights=ANY),
        lambda kw, out: shape_is(len(kw["offsets"]))(out) and bool(torch.isfinite(out).all()), examples=10),
    "without_pairs": Case(
        st.fixed_dictionaries(dict(model=st.just(_MODELS["rope"]), pairs=st.lists(st.integers(0, 1), max_size=2),
                                   head=st.integers(0, 1), layer=st.just(0))),
        dict(model=MODEL, pairs=ANY, head=Int(0), layer=Int(0)),
        lambda kw, out: isinstance(out, TinyTransformer) and out is not kw["model"], examples=10),
    "rival_margin": Case(
        st.integers(2, 6).flatmap(lambda n: st.integers(0, n - 1).flatmap(lambda offset: st.fixed_dictionaries(dict(
            logits=st.builds(lambda seed: torch.randn(2, 3, n, n, generator=torch.Generator().manual_seed(seed)),
                             seeds),
            offset=st.just(offset), queries=st.just(range(max(offset, 1), n)))))),
        dict(logits=ANY, offset=Int(0), queries=ANY),
        lambda kw, out: shape_is(3)(out.by_pair) and out.rival_offset.shape == (2, len(kw["queries"]))
        and bool((out.rival_offset != kw["offset"]).all()), partners=("logits", "offset", "queries")),
    "attention_to_first": Case(
        models.flatmap(lambda m: st.fixed_dictionaries(dict(model=st.just(m), tokens=tokens_for(m),
                                                             layer=st.integers(0, m.config.n_layers - 1)))),
        dict(model=MODEL, tokens=ANY, layer=Int(0)),
        lambda kw, out: shape_is(kw["model"].config.n_heads, kw["tokens"].shape[1])(out), partners=("model", "tokens")),
    "band_summary": Case(_band_kwargs(), dict(table=ANY, min_offset=Int(1)),
                         lambda kw, out: isinstance(out, dict) and len(out) == 3
                         and all(isinstance(v, float) and -1 - 1e-6 <= v <= 1 + 1e-6 for v in out.values())),
    "binary_encoding": Case(_binary_kwargs(), dict(positions=ANY, n_bits=Size(1), signed=Bool(), dtype=FloatDtype()),
                            _expect_tensor_dtype(lambda kw: (_n(kw["positions"]), kw["n_bits"]), dtype_kw)),
    "block_parameters": Case(st.fixed_dictionaries(dict(d_model=small, d_ff=st.none() | small)),
                             dict(d_model=Int(1), d_ff=ANY),
                             lambda kw, out: isinstance(out, int) and out > 0),
    "bos_weight": Case(_bos_kwargs(), dict(t=ANY, bias=Real()),
                       lambda kw, out: shape_is(*torch.as_tensor(kw["t"]).shape)(out)),
    "causal_mask": Case(st.fixed_dictionaries(dict(n=st.integers(0, 6))), dict(n=Size(0)),
                        _expect_tensor_dtype(lambda kw: (kw["n"], kw["n"]), lambda kw: torch.bool)),
    "code_heatmap": Case(
        st.fixed_dictionaries(dict(code=_rows(nonzero=False), title=st.just("t"), ax=st.none(), signed=st.booleans())),
        dict(code=ANY, title=Text(), ax=AxesOrNone(), signed=Bool()),
        lambda kw, out: isinstance(out, Axes), examples=10),
    "commuting_map": Case(
        st.integers(1, 3).flatmap(lambda n: st.fixed_dictionaries(dict(
            amplitudes=st.lists(st.floats(-3, 3), min_size=n, max_size=n),
            phases=st.lists(st.floats(-7, 7), min_size=n, max_size=n).map(torch.tensor),
            layout=st.sampled_from(("interleaved", "halves")), dtype=dtypes))),
        dict(amplitudes=ANY, phases=ANY, layout=Choice(("interleaved", "halves")), dtype=FloatDtype()),
        _expect_tensor_dtype(lambda kw: (2 * len(kw["amplitudes"]),) * 2, dtype_kw),
        partners=("amplitudes", "phases")),
    "cosine_similarity_matrix": Case(st.fixed_dictionaries(dict(table=_rows())), dict(table=ANY),
                                     lambda kw, out: shape_is(kw["table"].shape[0], kw["table"].shape[0])(out)),
    "cosine_spread": Case(st.fixed_dictionaries(dict(d=small, n_pairs=st.integers(2, 20), seed=seeds)),
                          dict(d=Size(1), n_pairs=Size(2), seed=Seed()), lambda kw, out: is_float(out, 0)),
    "context_gain": Case(
        _context_gain_kwargs(), dict(curves=ANY, first_position=Int(1)),
        lambda kw, out: list(out) == list(kw["curves"]) and all(len(v) == 3 for v in out.values()),
        partners=("curves", "first_position")),
    "convert_rope_layout": Case(
        st.fixed_dictionaries(dict(model=st.just(_MODELS["rope"]),
                                   layout=st.sampled_from(("interleaved", "halves")),
                                   permute=st.booleans())),
        dict(model=MODEL, layout=Choice(("interleaved", "halves")), permute=Bool()),
        _expect_converted, examples=5),
    "count_parameters": Case(st.fixed_dictionaries(dict(model=models)), dict(model=Instance(torch.nn.Module)),
                             lambda kw, out: isinstance(out, int) and out >= 0),
    "effective_rank": Case(st.fixed_dictionaries(dict(matrix=_rows(), energy=st.floats(0.01, 1))),
                           dict(matrix=ANY, energy=Real(positive=True)),
                           lambda kw, out: isinstance(out, int) and 1 <= out <= min(kw["matrix"].shape)),
    "environment_report": Case(st.just({}), {}, lambda kw, out: isinstance(out, bool), examples=2),
    "evaluate": Case(
        _evaluate_kwargs(),
        dict(model=MODEL, task=Choice(TASKS), length=Size(1), n_batches=Steps(1), batch_size=Size(1), seed=Seed(),
             offset=Int(1), bos=Bool(), from_position=Int(0)),
        lambda kw, out: is_float(out, 0, 1), examples=15),
    "far_similarity": Case(_far_kwargs(), dict(similarity=ANY, min_offset=Int(1)), lambda kw, out: is_float(out)),
    "fit_bos_bias": Case(
        st.fixed_dictionaries(dict(first_weights=st.lists(st.floats(0.01, 0.99), min_size=2, max_size=6).map(
            torch.tensor))),
        dict(first_weights=ANY), lambda kw, out: is_float(out)),
    "fit_offset_map": Case(
        st.fixed_dictionaries(dict(k=st.floats(-5, 5), d_model=even, steps=st.integers(1, 3), lr=st.floats(1e-3, 0.1),
                                   n_positions=st.integers(1, 8), max_position=st.none() | st.floats(1, 100),
                                   seed=seeds, base=st.floats(2, 1e4),
                                   layout=st.sampled_from(("interleaved", "halves")))),
        dict(k=Real(), d_model=Size(1), steps=Steps(1), lr=Real(positive=True), n_positions=Size(1), max_position=ANY,
             seed=Seed(), base=Real(positive=True), layout=Choice(("interleaved", "halves"))),
        _expect_fit),
    "four_term_decomposition": Case(
        _four_term_kwargs(), dict(x=ANY, e=ANY, y=ANY, f=ANY, w_q=ANY, w_k=ANY, scaled=Bool()),
        lambda kw, out: _expect_four(kw["x"].shape[0], kw["y"].shape[0])(out)),
    "four_term_heatmaps": Case(
        st.fixed_dictionaries(dict(terms=_four_terms(), title=st.just("t"), xlabel=st.just("x"), ylabel=st.just("y"))),
        dict(terms=Instance(FourTerms), title=Text(), xlabel=Text(), ylabel=Text()),
        lambda kw, out: isinstance(out, Figure), examples=6),
    "frequencies": Case(
        st.fixed_dictionaries(dict(d_model=even, base=st.floats(1.5, 1e5),
                                   spacing=st.sampled_from(("vaswani", "tensor2tensor")), dtype=dtypes)),
        dict(d_model=Size(1), base=Real(positive=True), spacing=Choice(("vaswani", "tensor2tensor")),
             dtype=FloatDtype()),
        _expect_tensor_dtype(lambda kw: (kw["d_model"] // 2,), dtype_kw)),
    "initialise_table": Case(
        st.fixed_dictionaries(dict(model=fresh_model(position="learned"), std=st.floats(1e-3, 2), seed=seeds,
                                   table=st.sampled_from(("position", "token")))),
        dict(model=MODEL, std=Real(positive=True), seed=Seed(), table=Choice(("position", "token"))),
        lambda kw, out: out is None),
    "integer_encoding": Case(
        st.fixed_dictionaries(dict(positions=positions_arg(), d_model=small, dtype=dtypes)),
        dict(positions=ANY, d_model=Size(1), dtype=FloatDtype()),
        _expect_tensor_dtype(lambda kw: (_n(kw["positions"]), kw["d_model"]), dtype_kw)),
    "layer_curves": Case(
        _curves_kwargs(),
        dict(curves=ANY, title=Text(), ylabel=Text(), ax=AxesOrNone(), chance=ANY, ylim=ANY),
        lambda kw, out: isinstance(out, Axes), examples=10),
    "layer_profile": Case(st.fixed_dictionaries(dict(features=_features(), probe=st.sampled_from(("logistic",
                                                                                             "least_squares")),
                                                     first_position=st.just(0),
                                                     target_first_position=st.just(0), seed=seeds)),
                          dict(features=Instance(ResidualFeatures), probe=Choice(("logistic", "least_squares")),
                               first_position=Int(0), target_first_position=Int(0), seed=Seed()),
                          _expect_profile, examples=15),
    "least_squares_map": Case(
        st.integers(1, 5).flatmap(lambda n: st.fixed_dictionaries(dict(
            source=st.builds(lambda s: _seeded(s, n, 3), seeds),
            target=st.builds(lambda s: _seeded(s, n, 2) + 1, seeds)))),
        dict(source=ANY, target=ANY), _expect_least_squares),
    "linear_probe": Case(
        _probe_kwargs(),
        dict(features=ANY, labels=ANY, test_fraction=Real(positive=True), ridge=Real(positive=True), seed=Seed()),
        lambda kw, out: isinstance(out, ProbeResult) and 0 <= out.test_accuracy <= 1),
    "load_text_corpus": Case(
        st.booleans().flatmap(lambda docstrings: st.fixed_dictionaries(dict(
            held_out_every=st.integers(2, 10), min_count=st.integers(1, 50), docstrings=st.just(docstrings),
            fixed=st.sampled_from((None, True) if docstrings else (None, True, False))))),
        dict(held_out_every=ANY, min_count=Int(1), docstrings=Bool(), fixed=ANY),
        lambda kw, out: isinstance(out, TextCorpus) and out.vocab_size >= 2 and len(out.held_out) > 0,
        examples=3),
    "logistic_probe": Case(
        _logistic_kwargs(),
        dict(features=ANY, labels=ANY, test_fraction=Real(positive=True), seed=Seed()),
        lambda kw, out: isinstance(out, ProbeResult) and 0 <= out.test_accuracy <= 1),
    "counts_by_position": Case(
        _counts_by_position_kwargs(),
        dict(train=ANY, ids=ANY, vocab_size=Int(1), length=Size(1), n_windows=Size(1), order=ANY),
        lambda kw, out: shape_is(kw["length"])(out), partners=("train", "ids", "vocab_size", "length")),
    "loss_by_position": Case(
        _loss_by_position_kwargs(),
        dict(model=MODEL, ids=ANY, length=Size(1), n_windows=Size(1), context=ANY),
        lambda kw, out: shape_is(kw["length"])(out), examples=15, partners=("model", "ids", "length", "context")),
    "streaming_loss": Case(
        _streaming_kwargs(),
        dict(model=MODEL, ids=ANY, length=Size(1), n_windows=Size(1), window=ANY, sinks=Int(0), cache=ANY,
             query_scale=ANY),
        lambda kw, out: shape_is(kw["length"])(out), examples=15, partners=("model", "ids", "length", "window", "sinks", "cache", "query_scale")),
    "streaming_attention": Case(
        _streaming_kwargs(with_cache=False),
        dict(model=MODEL, ids=ANY, length=Size(1), n_windows=Size(1), window=ANY, sinks=Int(0), query_scale=ANY),
        lambda kw, out: shape_is(kw["model"].config.n_layers, kw["model"].config.n_heads, kw["length"],
                                 kw["length"])(out), examples=15, partners=("model", "ids", "length", "window", "sinks", "cache", "query_scale")),
    "attention_entropy_by_position": Case(
        _streaming_kwargs(with_cache=False),
        dict(model=MODEL, ids=ANY, length=Size(1), n_windows=Size(1), window=ANY, sinks=Int(0), query_scale=ANY),
        lambda kw, out: shape_is(kw["model"].config.n_layers, kw["model"].config.n_heads, kw["length"])(out),
        examples=15, partners=("model", "ids", "length", "window", "sinks", "cache", "query_scale")),
    "dynamic_cache_gap": Case(
        _dynamic_cache_gap_kwargs(), dict(model=MODEL, ids=ANY, length=Size(1), n_windows=Size(1)),
        lambda kw, out: shape_is(kw["model"].config.n_heads, kw["length"])(out) and bool((out >= 0).all()),
        examples=10, partners=("model", "ids", "length")),
    "long_context_scale": Case(
        _long_context_scale_kwargs(),
        dict(rule=Choice(("yarn", "log_length", "llama4")), length=Size(1), original_max_len=Int(1),
             floor_scale=ANY, attn_scale=ANY),
        lambda kw, out: shape_is(kw["length"])(out) and bool((out >= 1 - 1e-12).all() or kw["attn_scale"] < 0),
        partners=("rule", "floor_scale", "attn_scale", "original_max_len")),
    "make_batch": Case(
        _make_batch_kwargs(),
        dict(task=Choice(TASKS), batch_size=Size(1), length=Size(1), vocab_size=Int(2),
             generator=Instance(torch.Generator), offset=Int(1), bos=Bool()),
        _expect_batch),
    "matrix_heatmap": Case(
        st.fixed_dictionaries(dict(matrix=_rows(nonzero=False), title=st.just("t"), ax=st.none(), xlabel=st.just("x"),
                                   ylabel=st.just("y"))),
        dict(matrix=ANY, title=Text(), ax=AxesOrNone(), xlabel=Text(), ylabel=Text()),
        lambda kw, out: isinstance(out, Axes), examples=10),
    "model_four_terms": Case(
        st.sampled_from(("sinusoidal", "learned", "integer", "normalised")).map(lambda p: _MODELS[p]).flatmap(
            lambda m: st.fixed_dictionaries(dict(model=st.just(m), tokens=tokens_for(m, batch=False),
                                                 head=st.integers(0, m.config.n_heads - 1)))),
        dict(model=MODEL, tokens=ANY, head=Int(0)),
        lambda kw, out: _expect_four(len(kw["tokens"]), len(kw["tokens"]))(out), partners=("model", "tokens")),
    "without_terms": Case(
        st.sampled_from(("sinusoidal", "learned", "integer", "normalised")).map(lambda p: _MODELS[p]).flatmap(
            lambda m: st.fixed_dictionaries(dict(
                model=st.just(m), tokens=tokens_for(m),
                drop=st.sampled_from(_TERM_NAMES) | st.lists(st.sampled_from(_TERM_NAMES), max_size=4).map(tuple),
                head=st.integers(0, m.config.n_heads - 1)))),
        dict(model=MODEL, tokens=ANY, drop=ANY, head=Int(0)),
        lambda kw, out: shape_is(*kw["tokens"].shape, kw["model"].config.n_outputs or kw["model"].config.vocab_size)(
            out.logits)
        and shape_is(*kw["tokens"].shape, kw["tokens"].shape[1])(out.weights), partners=("model", "tokens")),
    "term_subspaces": Case(
        st.sampled_from(("sinusoidal", "learned", "integer", "normalised")).map(lambda p: _MODELS[p]).flatmap(
            lambda m: st.fixed_dictionaries(dict(model=st.just(m), n=st.integers(1, m.config.max_len),
                                                 head=st.integers(0, m.config.n_heads - 1)))),
        dict(model=MODEL, n=Size(1), head=Int(0)),
        lambda kw, out: shape_is(kw["n"], kw["model"].config.d_model)(out.position), partners=("model", "n")),
    "key_pull": Case(_key_pull_kwargs(), dict(scores=ANY, keys=ANY), lambda kw, out: is_float(out),
                     partners=("scores", "keys")),
    "key_argmax_share": Case(_key_pull_kwargs(), dict(scores=ANY, keys=ANY), lambda kw, out: is_float(out, 0, 1),
                             partners=("scores", "keys")),
    "weight_on_key": Case(_key_pull_kwargs("weights"), dict(weights=ANY, keys=ANY),
                          lambda kw, out: is_float(out, 0, 1 + 1e-9), partners=("weights", "keys")),
    "ModelConfig": Case(
        model_config_kwargs(),
        dict(vocab_size=Size(1), d_model=Size(1), n_heads=Int(1), n_layers=Size(0), max_len=Size(1),
             position=Choice(POSITIONS), combine=Choice(COMBINES), position_scale=Real(), d_position=ANY,
             causal=Bool(), reapply_position=Bool(), n_outputs=ANY, d_ff=ANY, relative_max_distance=Size(1),
             alibi_slopes=ANY, rope_layout=ANY, rope_scaling=ANY, embedding_std=Real(positive=True),
             attention_kernel=Choice(("explicit", "fused")), nope_layers=ANY, rope_window=ANY,
             attn_temperature=ANY, rope_base=Real(positive=True)),
        _expect_config),
    "most_frequent_earlier": Case(
        st.integers(1, 6).flatmap(lambda v: st.fixed_dictionaries(dict(
            vocab_size=st.just(v),
            tokens=st.lists(st.integers(0, v - 1), min_size=1, max_size=8).map(lambda ids: torch.tensor([ids]))))),
        dict(tokens=ANY, vocab_size=Size(1)),
        lambda kw, out: shape_is(*kw["tokens"].shape, kw["vocab_size"])(out) or out.dtype == torch.bool),
    "moving_average": Case(_moving_kwargs(), dict(values=ANY, window=Int(1)),
                           lambda kw, out: shape_is(len(kw["values"]) - kw["window"] + 1)(out)),
    "mrope_axes": Case(
        _mrope_axes_kwargs(), dict(mrope_section=ANY, base=Real(positive=True), mrope_interleaved=Bool()),
        _expect_mrope_axes),
    "mrope_positions": Case(
        _mrope_segments_kwargs(), dict(segments=ANY),
        lambda kw, out: shape_is(3, _mrope_length(kw["segments"]))(out) or out.dtype == torch.long),
    "mrope_rotate": Case(
        _mrope_rotate_kwargs(),
        dict(x=ANY, positions=ANY, mrope_section=ANY, base=Real(positive=True), mrope_interleaved=Bool()),
        lambda kw, out: shape_is(*kw["x"].shape)(out), partners=("x", "positions", "mrope_section")),
    "n_classes": Case(
        st.fixed_dictionaries(dict(task=st.sampled_from(TASKS), vocab_size=st.integers(2, 10), max_len=small)),
        dict(task=Choice(TASKS), vocab_size=Int(2), max_len=Int(1)), lambda kw, out: isinstance(out, int) and out >= 1),
    "nearest_token_accuracy": Case(_two_sets(("tokens", "code"), min_rows=2), dict(tokens=ANY, code=ANY),
                                   lambda kw, out: shape_is(kw["code"].shape[0])(out)),
    "neighbour_similarity": Case(_neighbour_kwargs(), dict(similarity=ANY, offset=Int(-HUGE)),
                                 lambda kw, out: is_float(out)),
    "normalised_encoding": Case(
        _normalised_kwargs(), dict(positions=ANY, d_model=Size(1), length=Int(2), dtype=FloatDtype()),
        _expect_tensor_dtype(lambda kw: (_n(kw["positions"]), kw["d_model"]), dtype_kw)),
    "offset_argmax_share": Case(_offset_pull_kwargs(), dict(scores=ANY, k=Int(-HUGE)),
                                lambda kw, out: is_float(out, 0, 1)),
    "offset_dependence": Case(st.fixed_dictionaries(dict(scores=square())), dict(scores=ANY),
                              lambda kw, out: is_float(out, 0)),
    "offset_matrix": Case(
        st.fixed_dictionaries(dict(k=st.floats(-100, 100), d_model=even, base=st.floats(1.5, 1e5),
                                   layout=st.sampled_from(("interleaved", "halves")), dtype=dtypes)),
        dict(k=Real(), d_model=Size(1), base=Real(positive=True), layout=Choice(("interleaved", "halves")),
             dtype=FloatDtype()),
        _expect_tensor_dtype(lambda kw: (kw["d_model"], kw["d_model"]), dtype_kw)),
    "offset_profile": Case(_offset_profile_kwargs(), dict(scores=ANY, offsets=ANY),
                           lambda kw, out: shape_is(len(kw["offsets"]))(out)),
    "offset_only_r2": Case(st.fixed_dictionaries(dict(scores=square(batch=True))), dict(scores=ANY),
                           lambda kw, out: is_float(out, -1e-9, 1 + 1e-9)),
    "offset_pull": Case(_offset_pull_kwargs(), dict(scores=ANY, k=Int(-HUGE)), lambda kw, out: is_float(out)),
    "offset_similarity": Case(
        _offset_similarity_kwargs(),
        dict(offsets=ANY, d_model=Size(1), base=Real(positive=True), spacing=Choice(("vaswani", "tensor2tensor"))),
        _expect_offset_similarity),
    "one_hot_encoding": Case(
        st.integers(1, 6).flatmap(lambda m: st.fixed_dictionaries(
            dict(positions=positions_arg(limit=m), max_len=st.just(m), dtype=dtypes))),
        dict(positions=ANY, max_len=Size(1), dtype=FloatDtype()),
        _expect_tensor_dtype(lambda kw: (_n(kw["positions"]), kw["max_len"]), dtype_kw)),
    "pair_columns": Case(
        st.fixed_dictionaries(dict(d_model=even, layout=st.sampled_from(("interleaved", "halves")))),
        dict(d_model=Size(1), layout=Choice(("interleaved", "halves"))), _expect_pair_columns),
    "permutation_gap": Case(_permutation_kwargs(), dict(model=MODEL, tokens=ANY, order=ANY),
                            lambda kw, out: is_float(out, 0), examples=15, partners=("model", "tokens")),
    "position_free_accuracy": Case(
        st.fixed_dictionaries(dict(length=st.integers(2, 12), vocab_size=st.integers(1, 9),
                                   from_position=st.integers(0, 1))),
        dict(length=Size(2), vocab_size=Size(1), from_position=ANY),
        lambda kw, out: is_float(out, 0, 1 + 1e-9)),
    "position_labels": Case(st.fixed_dictionaries(dict(batch_size=small, n=small)),
                            dict(batch_size=Size(1), n=Size(1)),
                            lambda kw, out: shape_is(kw["batch_size"] * kw["n"])(out)),
    "principal_angles": Case(_two_sets(("a", "b")), dict(a=ANY, b=ANY), _expect_angles),
    "principal_directions": Case(st.fixed_dictionaries(dict(matrix=_rows(), energy=st.floats(0.01, 1))),
                                 dict(matrix=ANY, energy=Real(positive=True)), _expect_directions),
    "relative_movement": Case(_movement_kwargs(), dict(before=ANY, after=ANY),
                              lambda kw, out: shape_is(kw["before"].shape[0])(out)),
    "RelativeBias": Case(
        st.fixed_dictionaries(dict(n_heads=small, max_distance=small, n=st.integers(1, 6))),
        dict(n_heads=Size(1), max_distance=Size(1), n=Size(1)),
        lambda kw, out: shape_is(kw["n_heads"], kw["n"], kw["n"])(out), call=_relative_bias),
    "residual_features": Case(
        models.flatmap(lambda m: st.fixed_dictionaries(dict(model=st.just(m), batch=st.builds(
            lambda seed, b, n: cu.make_batch("reverse", batch_size=b, length=n, vocab_size=6,
                                             generator=torch.Generator().manual_seed(seed)),
            seeds, small, st.integers(1, 8))))),
        dict(model=MODEL, batch=Instance(Batch)), _expect_features),
    "rope_decay_bound": Case(
        st.fixed_dictionaries(dict(offsets=positions_arg(), d_head=even, base=st.floats(2, 1e6))),
        dict(offsets=ANY, d_head=Size(1), base=Real(positive=True)),
        lambda kw, out: shape_is(_n(kw["offsets"]))(out)),
    "rope_decode_step": Case(
        _rope_decode_kwargs(),
        dict(q=ANY, k=ANY, v=ANY, cache_k=ANY, cache_v=ANY, position=ANY, base=Real(positive=True),
             layout=Choice(("interleaved", "halves"))),
        _expect_decode, partners=("q", "k", "v", "cache_k", "cache_v")),
    "rope_permutation": Case(
        even.flatmap(lambda d: st.fixed_dictionaries(dict(
            d_head=st.just(d), rotary_dim=st.none() | st.sampled_from(range(2, d + 1, 2))))),
        dict(d_head=Size(1), rotary_dim=ANY),
        lambda kw, out: shape_is(kw["d_head"])(out), partners=("d_head", "rotary_dim")),
    "rope_frequencies": Case(
        _rope_frequencies_kwargs(),
        dict(d=Size(1), base=Real(positive=True), scaling=ANY, factor=ANY, original_max_len=ANY, length=ANY,
             beta_fast=Real(positive=True), beta_slow=Real(positive=True)),
        _expect_pair_values(lambda out: (out > 0).all())),
    "rope_frequencies_from_config": Case(_rope_config_kwargs(), dict(config=ANY, length=ANY, layer_type=ANY),
                                         _expect_rope_config),
    "RopeScaling": Case(_rope_scaling_kwargs(),
                        dict(kind=Choice(("linear", "ntk", "dynamic", "yarn")), factor=ANY, original_max_len=ANY,
                             beta_fast=ANY, beta_slow=ANY, attention_factor=ANY), _expect_rule),
    "rope_rotate": Case(_rope_kwargs(), dict(x=ANY, positions=ANY, base=Real(positive=True),
                                             layout=Choice(("interleaved", "halves")), rotary_dim=ANY,
                                             frequencies=ANY),
                        lambda kw, out: shape_is(*kw["x"].shape)(out), partners=("x", "rotary_dim")),
    "with_rope_scaling": Case(
        st.fixed_dictionaries(dict(model=st.just(_MODELS["rope"]),
                                   scaling=st.sampled_from((None, "linear", "ntk", "dynamic", "yarn")),
                                   factor=st.floats(1, 8), original_max_len=st.integers(1, 64))).map(
            lambda kw: kw if kw["scaling"] else {**kw, "factor": 1.0, "original_max_len": None}),
        dict(model=MODEL, scaling=ANY, factor=ANY, original_max_len=ANY, beta_fast=ANY, beta_slow=ANY),
        _expect_scaled, examples=5),
    "with_attn_temperature": Case(
        st.fixed_dictionaries(dict(model=st.just(_INTERLEAVED), floor_scale=st.integers(1, 64),
                                   attn_scale=st.floats(0, 1))),
        dict(model=MODEL, floor_scale=Int(1, 10**9), attn_scale=Real()),
        lambda kw, out: (isinstance(out, TinyTransformer)
                         and out.config.attn_temperature == (kw["floor_scale"], kw["attn_scale"])), examples=5),
    "yarn_attention_scale": Case(st.fixed_dictionaries(dict(factor=st.floats(1, 1e6))), dict(factor=ANY),
                                 lambda kw, out: is_float(out, 1)),
    "yarn_ramp": Case(
        st.fixed_dictionaries(dict(d=even, original_max_len=st.integers(1, 10_000), base=st.floats(1.5, 1e5),
                                   beta_fast=st.floats(4, 64), beta_slow=st.floats(0.1, 2))),
        dict(d=Size(1), original_max_len=ANY, base=Real(positive=True), beta_fast=Real(positive=True),
             beta_slow=Real(positive=True)),
        _expect_pair_values(lambda out: ((out >= 0) & (out <= 1)).all())),
    "AdamW": Case(
        st.fixed_dictionaries(dict(
            params=st.builds(lambda seed: [torch.nn.Parameter(_seeded(seed, 3, 2).float())], seeds),
            lr=st.floats(1e-4, 1), betas=st.sampled_from([(0.9, 0.999), (0.0, 0.5)]),
            eps=st.floats(1e-10, 1e-3), weight_decay=st.floats(0, 0.5))),
        dict(params=ANY, lr=Real(positive=True), betas=ANY, eps=Real(positive=True), weight_decay=Real()),
        lambda kw, out: isinstance(out, torch.Tensor) and bool(torch.isfinite(out).all()), call=_adamw_step),
    "magnitude": Case(
        st.fixed_dictionaries(dict(value=st.floats(-1e3, 1e3), rounding=st.floats(1e-15, 1))),
        dict(value=ANY, rounding=Real(positive=True)),
        lambda kw, out: isinstance(out, str) and (out.startswith("< ") or "e" in out)),
    "rounded": Case(
        st.fixed_dictionaries(dict(values=st.one_of(st.floats(-10, 10), st.lists(st.floats(-10, 10), max_size=4),
                                                    st.builds(lambda s: _seeded(s, 2, 3), seeds)),
                                   decimals=st.integers(0, 8))),
        dict(values=ANY, decimals=Int(0, 8)),
        _expect_rounded),
    "scored_accuracy": Case(
        _scored_accuracy_kwargs(), dict(logits=ANY, batch=ANY),
        lambda kw, out: isinstance(out, float) and 0 <= out <= 1, partners=("logits", "batch")),
    "kept_lead": Case(
        st.integers(2, 9).flatmap(lambda n: st.fixed_dictionaries(dict(
            gap=st.builds(lambda seed: torch.rand(2, n, generator=torch.Generator().manual_seed(seed)) + 0.1, seeds),
            far_from=st.integers(1, n - 1)))),
        dict(gap=ANY, far_from=Int(1)), lambda kw, out: shape_is(*kw["gap"].shape[:-1])(out)),
    "wrong_way_share": Case(
        st.integers(2, 9).flatmap(lambda n: st.fixed_dictionaries(dict(
            gap=st.builds(lambda seed: torch.randn(3, n, generator=torch.Generator().manual_seed(seed)).abs()
                          .index_fill(1, torch.tensor([0]), 1.0), seeds)))),
        dict(gap=ANY), lambda kw, out: shape_is(*kw["gap"].shape[:-1])(out) and bool(((out >= 0) & (out <= 1)).all())),
    "claims_table": Case(
        st.fixed_dictionaries(dict(
            claims=st.lists(st.booleans(), min_size=1, max_size=4).flatmap(lambda holds: st.dictionaries(
                st.integers(0, 9), st.just({f"claim {i}": h for i, h in enumerate(holds)}), min_size=1,
                max_size=3)),
            title=st.sampled_from(["", "seeds: does each claim hold?"]))),
        dict(claims=ANY, title=Text()),
        lambda kw, out: isinstance(out, str) and len(out.splitlines()) == len(next(iter(kw["claims"].values()))) + 1
        and all(len(line) <= 88 for line in out.splitlines())),
    "per_seed_table": Case(
        st.integers(1, 3).flatmap(lambda n_sub: st.fixed_dictionaries(dict(
            rows=st.dictionaries(st.sampled_from(["rope", "alibi", "none"]), st.fixed_dictionaries({
                s: st.lists(st.one_of(st.floats(-9, 9), st.none(), st.just("0.1-0.2")), min_size=n_sub,
                            max_size=n_sub) for s in (0, 1)}), min_size=1, max_size=3),
            seeds=st.just([0, 1]), columns=st.just([f"c{i}" for i in range(n_sub)]),
            decimals=st.integers(0, 3), signed=st.just(())))),
        dict(rows=ANY, seeds=ANY, title=Text(), columns=ANY, decimals=ANY, signed=ANY),
        lambda kw, out: isinstance(out, str) and len(out.splitlines()) == len(kw["rows"]) + 2
        and all(len(line) <= 88 for line in out.splitlines())),
    "range_means": Case(
        st.integers(2, 12).flatmap(lambda n: st.fixed_dictionaries(dict(
            curves=st.dictionaries(st.sampled_from(["rope", "alibi"]), st.lists(st.builds(
                lambda seed: torch.rand(n, generator=torch.Generator().manual_seed(seed)), seeds),
                min_size=1, max_size=3), min_size=1, max_size=2),
            ranges=st.integers(0, n - 1).flatmap(lambda a: st.integers(a + 1, n).map(lambda b: {"span": (a, b)})),
            baselines=st.one_of(st.none(), st.just({"bigram": torch.ones(n)}))))),
        dict(curves=ANY, ranges=ANY, baselines=ANY),
        lambda kw, out: isinstance(out, dict) and set(out) == set(kw["curves"]) | set(kw["baselines"] or {})
        and all(0 <= v <= 1 for row in out.values() for v in row["span"])),
    "seed_table": Case(
        st.fixed_dictionaries(dict(
            results=st.integers(1, 3).flatmap(lambda n_seeds: st.dictionaries(
                st.sampled_from(["rope", "alibi", "none"]),
                st.fixed_dictionaries({"length 16": st.lists(st.floats(0, 1), min_size=n_seeds, max_size=n_seeds),
                                       "length 64": st.lists(st.floats(0, 1), min_size=n_seeds, max_size=n_seeds)}),
                min_size=1, max_size=3)),
            decimals=st.integers(0, 4), row_label=st.sampled_from(["", "code"]))),
        dict(results=ANY, decimals=Int(0, 6), row_label=Text()),
        lambda kw, out: isinstance(out, str) and len(out.splitlines()) == len(kw["results"]) + 1),
    "setup": Case(_setup_kwargs(), dict(seed=Int(0, 2**32 - 1)), lambda kw, out: out is None, call=_setup,
                  examples=10),
    "share_in_subspace": Case(_two_sets(("vectors", "directions")), dict(vectors=ANY, directions=ANY),
                              lambda kw, out: is_float(out, -1e-9, 1 + 1e-9)),
    "similarity_vs_offset": Case(
        _similarity_vs_offset_kwargs(),
        dict(codes=ANY, title=Text(), reference=Int(0), normalise=Bool(), ax=AxesOrNone()),
        lambda kw, out: isinstance(out, Axes), examples=10),
    "sinusoidal_encoding": Case(
        _sinusoidal_kwargs(),
        dict(positions=ANY, d_model=Size(1), base=Real(positive=True), layout=Choice(("interleaved", "halves")),
             spacing=Choice(("vaswani", "tensor2tensor")), dtype=FloatDtype()),
        _expect_tensor_dtype(lambda kw: (_n(kw["positions"]), kw["d_model"]), dtype_kw)),
    "steps_to_accuracy": Case(_steps_kwargs(), dict(accuracy=ANY, level=Real(), window=Int(1)),
                              lambda kw, out: out is None or (isinstance(out, int) and out >= kw["window"])),
    "TinyTransformer": Case(
        _tiny_transformer_kwargs(), dict(config=Instance(ModelConfig), seed=Seed(), tokens=ANY, start=Int(0, 10**6)),
        lambda kw, out: shape_is(*kw["tokens"].shape, kw["config"].n_outputs or kw["config"].vocab_size)(out),
        call=_tiny_transformer),
    "token_recovery": Case(
        st.fixed_dictionaries(dict(tokens=_rows(min_rows=2, d=3), code=_rows(min_rows=2, d=3), seed=seeds,
                                   probe=st.sampled_from(("logistic", "least_squares")))),
        dict(tokens=ANY, code=ANY, seed=Seed(), probe=Choice(("logistic", "least_squares"))), _expect_recovery),
    "train": Case(
        st.one_of(_train_kwargs(), _train_text_kwargs()),
        dict(model=MODEL, task=ANY, steps=Steps(1), batch_size=Size(1), lengths=ANY, lr=Real(positive=True),
             weight_decay=ANY, seed=Seed(), offset=Int(1), bos=Bool(), schedule=Choice(("constant", "warmup_linear")),
             progress=Bool(), on_step=Callback()),
        _expect_history, examples=15, partners=("model", "task", "lengths")),
    "text_batch": Case(
        _text_batch_kwargs(),
        dict(ids=ANY, batch_size=Size(1), length=Size(1), generator=Instance(torch.Generator)),
        _expect_text_batch("batch_size"), partners=("ids", "length")),
    "text_windows": Case(
        _text_windows_kwargs(), dict(ids=ANY, length=Size(1), n_windows=Size(1)),
        _expect_text_batch("n_windows"), partners=("ids", "length")),
    "unigram_bigram_bits": Case(
        _unigram_bigram_kwargs(), dict(train=ANY, held_out=ANY, vocab_size=Int(1)),
        lambda kw, out: is_float(out[0], 0) and is_float(out[1], 0), partners=("train", "held_out", "vocab_size")),
    "uniform_causal_weights": Case(
        st.fixed_dictionaries(dict(n=st.integers(1, 6), dtype=dtypes)), dict(n=Size(1), dtype=FloatDtype()),
        _expect_tensor_dtype(lambda kw: (kw["n"], kw["n"]), dtype_kw)),
    "validation_split": Case(_validation_split_kwargs(), dict(ids=ANY, share=ANY), _expect_split),
    "variance_explained": Case(_variance_kwargs(), dict(features=ANY, labels=ANY), lambda kw, out: is_float(out)),
    "weight_back": Case(_weight_back_kwargs(), dict(model=MODEL, tokens=ANY, back=Int(0), first_query=Int(0)),
                        lambda kw, out: shape_is(kw["model"].config.n_layers, kw["model"].config.n_heads)(out),
                        partners=("model", "tokens", "back", "first_query")),
    "with_mask": Case(st.fixed_dictionaries(dict(model=models, causal=st.booleans())), dict(model=MODEL, causal=Bool()),
                      lambda kw, out: isinstance(out, TinyTransformer) and out.config.causal == kw["causal"]),
}


# --- lesson 13: positions on a grid (course_utils.vision) ------------------------------------------

from course_utils.grid_codes import RESIZE_MODES  # noqa: E402
from course_utils.digits import DigitPatches  # noqa: E402
from course_utils.vit import GRID_CODES, TinyViT, ViTConfig  # noqa: E402


def _vit(position="learned", **overrides) -> TinyViT:
    settings_ = dict(position=position, grid=(2, 3), patch_dim=3, d_model=8, n_heads=2, n_layers=1, n_classes=4)
    settings_.update(overrides)
    return TinyViT(**settings_)


_VITS = [_vit(position) for position in GRID_CODES]
vits = st.sampled_from(_VITS)


@st.composite
def _vit_kwargs(draw):
    grid = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    n_heads = draw(st.sampled_from((1, 2)))
    patch_dim = draw(small)
    return dict(position=draw(st.sampled_from(GRID_CODES)), grid=grid, patch_dim=patch_dim,
                d_model=4 * n_heads * draw(st.integers(1, 2)), n_heads=n_heads, n_layers=draw(st.integers(0, 2)),
                n_classes=draw(small), d_ff=draw(st.none() | st.integers(1, 8)), base=draw(st.floats(2, 1e4)),
                seed=draw(seeds), patches=_randn(draw, draw(small), grid[0] * grid[1], patch_dim),
                spacing=draw(st.none() | st.floats(0.25, 2)))


def _tiny_vit(*, patches, spacing, **kwargs):
    return TinyViT(**kwargs)(patches, spacing=spacing)


@st.composite
def _vit_data(draw, model):
    n = model.grid[0] * model.grid[1]
    batch = draw(small)
    labels = torch.randint(0, model.head.out_features, (batch,), generator=torch.Generator().manual_seed(draw(seeds)))
    return _randn(draw, batch, n, model.patch_dim), labels


@st.composite
def _train_vit_kwargs(draw):
    together = draw(st.booleans())
    position = draw(st.sampled_from(GRID_CODES))
    group = [_vit(position, seed=s) for s in range(draw(st.integers(1, 3)) if together else 1)]
    patches, labels = draw(_vit_data(group[0]))
    seed = [draw(seeds) for _ in group] if together else draw(seeds)
    return dict(model=group if together else group[0], patches=patches, labels=labels, steps=draw(st.integers(1, 2)),
                batch_size=draw(small), lr=draw(st.floats(1e-4, 1e-2)), seed=seed, progress=False)


@st.composite
def _evaluate_vit_kwargs(draw):
    model = draw(vits)
    grid = draw(st.none() | st.tuples(st.integers(1, 4), st.integers(1, 4)))
    n = (grid or model.grid)[0] * (grid or model.grid)[1]
    batch = draw(small)
    labels = torch.randint(0, model.head.out_features, (batch,), generator=torch.Generator().manual_seed(draw(seeds)))
    return dict(model=model, patches=_randn(draw, batch, n, model.patch_dim), labels=labels, grid=grid,
                spacing=draw(st.none() | st.floats(0.25, 2)))


@st.composite
def _vit_features_kwargs(draw):
    model = draw(vits)
    patches, labels = draw(_vit_data(model))
    return dict(model=model, patches=patches, labels=labels, sublayers=draw(st.booleans()))


def _expect_vit_features(kw, out):
    batch, n, _ = kw["patches"].shape
    per_block = 2 if kw["sublayers"] else 1
    assert isinstance(out, ResidualFeatures) and len(out.layers) == per_block * len(kw["model"].blocks) + 1
    assert all(layer.shape == (batch * n, kw["model"].d_model) for layer in out.layers)
    assert out.positions.shape == out.tokens.shape == out.targets.shape == (batch * n,)


@st.composite
def _rope_2d_kwargs(draw):
    lead = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    n, d = draw(small), draw(st.sampled_from((4, 8)))
    rows = draw(st.lists(st.floats(-9, 9), min_size=n, max_size=n))
    return dict(x=_randn(draw, *lead, n, d), rows=torch.tensor(rows),
                cols=torch.tensor(draw(st.lists(st.integers(-9, 9), min_size=n, max_size=n))),
                base=draw(st.floats(2, 1e5)))


@st.composite
def _patchify_kwargs(draw):
    p = draw(small)
    return dict(images=_randn(draw, draw(small), p * draw(small), p * draw(small)), patch_size=p)


@st.composite
def _resize_kwargs(draw):
    old = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    return dict(table=_randn(draw, old[0] * old[1], draw(small)), old_grid=old,
                new_grid=[draw(st.integers(1, 4)), draw(st.integers(1, 4))], mode=draw(st.sampled_from(RESIZE_MODES)))


def _expect_digits(kw, out):
    assert isinstance(out, DigitPatches)
    side = 8 * kw["upsample"] // kw["patch_size"]
    assert out.grid == (side, side)
    assert out.train_patches.shape[1:] == out.test_patches.shape[1:] == (side * side, kw["patch_size"] ** 2)
    assert out.train_patches.shape[0] + out.test_patches.shape[0] == 1797
    assert len(out.train_labels) + len(out.test_labels) == 1797


VISION_CASES = {
    "evaluate_vit": Case(_evaluate_vit_kwargs(),
                         dict(model=Instance(TinyViT), patches=ANY, labels=ANY, grid=ANY, spacing=ANY),
                         lambda kw, out: is_float(out, 0, 1), partners=("model", "patches", "grid"), examples=15),
    "grid_positions": Case(st.fixed_dictionaries(dict(height=small, width=small)),
                           dict(height=Size(1), width=Size(1)),
                           lambda kw, out: isinstance(out, tuple) and all(
                               shape_is(kw["height"] * kw["width"])(t) for t in out)),
    "pretrained": Case(
        st.sampled_from([(e["experiment"], e["position"], e["seed"]) for e in cu.zoo_manifest()
                         if e["experiment"] == "vit"]).map(lambda k: dict(experiment=k[0], position=k[1], seed=k[2])),
        dict(experiment=Choice(tuple(dict.fromkeys(e["experiment"] for e in cu.zoo_manifest()))), position=ANY,
             seed=Seed(), device=ANY, variant=ANY),
        lambda kw, out: isinstance(out, TinyViT) and not out.training and out.zoo_entry["seed"] == kw["seed"],
        examples=4, partners=("experiment", "position", "seed")),
    "budget_report": Case(
        st.fixed_dictionaries(dict(experiment=st.sampled_from(("vit", "capstone")), brief=st.booleans())),
        dict(experiment=Choice(tuple(dict.fromkeys(e["experiment"] for e in cu.zoo_manifest()))),
             seeds=ANY, further=ANY, brief=ANY),
        lambda kw, out: isinstance(out, str) and all(len(line) <= 88 for line in out.splitlines()),
        examples=2),
    "how_we_know": Case(
        st.fixed_dictionaries(dict(key=st.sampled_from(tuple(evidence_record()["sections"])))),
        dict(key=Choice(tuple(evidence_record()["sections"])), measured=ANY, baselines=ANY),
        lambda kw, out: out.startswith("How we know") and all(len(line) <= 88 for line in out.splitlines()),
        examples=4),
    "evidence": Case(
        st.fixed_dictionaries(dict(key=st.sampled_from(tuple(evidence_record()["sections"])))),
        dict(key=Choice(tuple(evidence_record()["sections"]))),
        lambda kw, out: isinstance(out, dict) and "rows" in out and "budget" in out, examples=2),
    "zoo_manifest": Case(
        st.fixed_dictionaries(dict(experiment=st.sampled_from(("vit",)))),
        dict(experiment=ANY),
        lambda kw, out: isinstance(out, list) and bool(out) and all(  # None: every experiment
            e["experiment"] == kw["experiment"] for e in out if kw["experiment"] is not None), examples=2),
    "load_digits_patches": Case(
        st.fixed_dictionaries(dict(patch_size=st.sampled_from((1, 2, 4, 8)), upsample=st.sampled_from((1, 2)),
                                   test_fraction=st.floats(0.1, 0.9), random_state=seeds)),
        dict(patch_size=Int(1), upsample=Int(1), test_fraction=Real(positive=True), random_state=Int(0, 2**32 - 1)),
        _expect_digits, examples=8, partners=("patch_size", "upsample")),
    "patchify": Case(_patchify_kwargs(), dict(images=ANY, patch_size=Size(1)),
                     lambda kw, out: shape_is(kw["images"].shape[0],
                                              kw["images"].shape[1] * kw["images"].shape[2] // kw["patch_size"] ** 2,
                                              kw["patch_size"] ** 2)(out), partners=("images", "patch_size")),
    "resize_table": Case(_resize_kwargs(), dict(table=ANY, old_grid=ANY, new_grid=ANY, mode=Choice(RESIZE_MODES)),
                         lambda kw, out: shape_is(kw["new_grid"][0] * kw["new_grid"][1], kw["table"].shape[1])(out),
                         partners=("table", "old_grid")),
    "rope_rotate_2d": Case(_rope_2d_kwargs(), dict(x=ANY, rows=ANY, cols=ANY, base=Real(positive=True)),
                           lambda kw, out: shape_is(*kw["x"].shape)(out), partners=("x", "rows", "cols")),
    "sinusoidal_encoding_2d": Case(
        st.fixed_dictionaries(dict(height=small, width=small, d_model=st.sampled_from((4, 8, 12)),
                                   base=st.floats(2, 1e4), spacing=st.floats(0.1, 3), dtype=dtypes)),
        dict(height=Size(1), width=Size(1), d_model=Size(1), base=Real(positive=True), spacing=Real(positive=True),
             dtype=FloatDtype()),
        _expect_tensor_dtype(lambda kw: (kw["height"] * kw["width"], kw["d_model"]), dtype_kw)),
    "TinyViT": Case(
        _vit_kwargs(),
        dict(config=ANY, position=Choice(GRID_CODES), grid=ANY, patch_dim=Int(1), d_model=Size(1), n_heads=Int(1),
             n_layers=Int(0), n_classes=Int(1), d_ff=ANY, base=Real(positive=True), seed=Seed(), patches=ANY,
             spacing=ANY),
        lambda kw, out: shape_is(kw["patches"].shape[0], kw["n_classes"])(out), call=_tiny_vit,
        partners=("grid", "patches", "patch_dim", "d_model", "n_heads")),
    "ViTConfig": Case(
        _vit_kwargs().map(lambda kw: {k: v for k, v in kw.items() if k not in ("seed", "patches", "spacing")}),
        dict(position=Choice(GRID_CODES), grid=ANY, patch_dim=Int(1), d_model=Size(1), n_heads=Int(1),
             n_layers=Int(0), n_classes=Int(1), d_ff=ANY, base=Real(positive=True)),
        lambda kw, out: isinstance(out, ViTConfig) and all(getattr(out, k) == v for k, v in kw.items()),
        partners=("d_model", "n_heads", "position")),
    "vit_features": Case(_vit_features_kwargs(), dict(model=Instance(TinyViT), patches=ANY, labels=ANY,
                                                      sublayers=Bool()),
                         _expect_vit_features, partners=("model", "patches", "labels"), examples=15),
    "embedded_patches": Case(
        _vit_features_kwargs().map(lambda kw: dict(model=kw["model"], patches=kw["patches"],
                                                   with_code=kw["sublayers"])),
        dict(model=Instance(TinyViT), patches=ANY, with_code=Bool()),
        lambda kw, out: shape_is(kw["patches"].shape[0] * kw["patches"].shape[1], kw["model"].d_model)(out),
        partners=("model", "patches"), examples=10),
    "attention_distance": Case(
        _vit_features_kwargs().map(lambda kw: dict(model=kw["model"], patches=kw["patches"])),
        dict(model=Instance(TinyViT), patches=ANY),
        lambda kw, out: shape_is(len(kw["model"].blocks), kw["model"].n_heads)(out),
        partners=("model", "patches"), examples=10),
}
CASES.update(VISION_CASES)


# the lessons' recipes (course_utils/recipes.py), at one or two training steps
from course_utils import recipes  # noqa: E402

_LAST_COPY = TinyTransformer(ModelConfig(**recipes.LAST_COPY_MODEL, n_outputs=16), seed=0)
_COPY_ROPE = _tiny_model(vocab_size=16, max_len=24, position="rope", causal=True)
_SEED_LISTS = st.lists(seeds, min_size=1, max_size=2)
_READINGS = tuple(recipes.READINGS)


def _expect_ablation(kw, out):
    assert list(out) == ["all four terms", *(f"without {t}" for t in FourTerms._fields)]
    for row in out.values():
        assert list(row) == ["accuracy", "weight on the copy", "weight on itself"]
        assert all(len(values) == len(kw["models"]) and all(0 <= v <= 1 for v in values)
                   for values in row.values())


RECIPE_CASES = {
    "last_copy_models": Case(
        st.fixed_dictionaries(dict(seeds=_SEED_LISTS, steps=st.integers(1, 2))),
        dict(seeds=ANY, steps=Steps(1)),
        lambda kw, out: len(out) == len(kw["seeds"]) and all(isinstance(m, TinyTransformer) for m in out)
        or _raises(), examples=3),
    "last_copy_test_batch": Case(
        st.just({}), {}, lambda kw, out: isinstance(out, Batch) and out.tokens.shape == (256, 16) or _raises()),
    "last_copy_ablation": Case(
        st.fixed_dictionaries(dict(models=st.just([_LAST_COPY]), batch=st.none() | st.builds(
            lambda seed: cu.make_batch("last_copy", batch_size=4, length=16, vocab_size=8,
                                    generator=torch.Generator().manual_seed(seed)), seeds))),
        dict(models=ANY, batch=ANY), _expect_ablation, partners=("models", "batch"), examples=5),
    "four_term_model": Case(
        st.fixed_dictionaries(dict(seed=seeds)), dict(seed=Seed()),
        lambda kw, out: isinstance(out, TinyTransformer) and out.config.n_heads == 1 or _raises()),
    "four_term_models": Case(
        st.fixed_dictionaries(dict(task=st.sampled_from(("previous_token", "pointer")), seeds=_SEED_LISTS,
                                   steps=st.integers(1, 2))),
        dict(task=Choice(("previous_token", "pointer")), seeds=ANY, steps=Steps(1)),
        lambda kw, out: len(out[0]) == len(out[1]) == len(kw["seeds"]) or _raises(), examples=3),
    "previous_token_model": Case(
        st.fixed_dictionaries(dict(position=st.sampled_from(("none", "rope", "alibi", "learned")), seed=seeds,
                                   n_layers=st.integers(1, 2), n_heads=st.sampled_from((2, 8)), bos=st.booleans(),
                                   steps=st.integers(1, 2))),
        dict(position=ANY, seed=Seed(), n_layers=ANY, n_heads=ANY, alibi_slopes=ANY, bos=Bool(), steps=Steps(1)),
        lambda kw, out: isinstance(out, TinyTransformer) and out.config.causal or _raises(), examples=3),
    "layer_stack_model": Case(
        st.fixed_dictionaries(dict(seed=seeds, reapply_position=st.booleans())),
        dict(seed=Seed(), reapply_position=Bool()),
        lambda kw, out: out.config.reapply_position == kw["reapply_position"] or _raises()),
    "layer_stack_models": Case(
        st.fixed_dictionaries(dict(seeds=_SEED_LISTS, reapply_position=st.booleans(), steps=st.integers(1, 2))),
        dict(seeds=ANY, reapply_position=Bool(), steps=Steps(1)),
        lambda kw, out: len(out[0]) == len(out[1]) == len(kw["seeds"]) or _raises(), examples=3),
    "own_index_models": Case(
        st.fixed_dictionaries(dict(causal=st.booleans(), bos=st.booleans(), seeds=_SEED_LISTS,
                                   steps=st.integers(1, 2))),
        dict(causal=Bool(), bos=Bool(), seeds=ANY, steps=Steps(1)),
        lambda kw, out: len(out) == len(kw["seeds"]) and all(m.config.causal == kw["causal"] for m in out)
        or _raises(), examples=3),
    "copy_offset_models": Case(
        st.fixed_dictionaries(dict(n_heads=st.sampled_from((1, 2)), seeds=_SEED_LISTS, steps=st.integers(1, 2),
                                   together=st.booleans())),
        dict(n_heads=Int(1, 32), seeds=ANY, steps=Steps(1), together=Bool()),
        lambda kw, out: len(out) == len(kw["seeds"]) and all(m.config.n_heads == kw["n_heads"] for m in out)
        or _raises(), examples=3),
    "read_past": Case(
        st.fixed_dictionaries(dict(model=st.just(_COPY_ROPE), reading=st.sampled_from(_READINGS),
                                   factor=st.floats(1, 8))),
        dict(model=MODEL, reading=Choice(_READINGS), factor=ANY, betas=ANY),
        lambda kw, out: isinstance(out, TinyTransformer) and out is not kw["model"] or _raises(), examples=10),
    "copy_accuracy": Case(
        st.fixed_dictionaries(dict(model=st.just(_COPY_ROPE), n=st.integers(9, 24),
                                   reading=st.sampled_from(_READINGS))),
        dict(model=MODEL, n=Int(9), reading=Choice(_READINGS)),
        lambda kw, out: is_float(out, 0, 1), partners=("model", "n"), examples=5),
}
CASES.update(RECIPE_CASES)


@st.composite
def _train_images_kwargs(draw):
    """train on images: a TinyViT, or several side by side."""
    kw = draw(_train_vit_kwargs())
    return dict(model=kw["model"], task=(kw["patches"], kw["labels"]), steps=kw["steps"], batch_size=kw["batch_size"],
                lr=kw["lr"], seed=kw["seed"], schedule=draw(st.sampled_from(("constant", "warmup_linear"))),
                progress=False)


@st.composite
def _train_side_by_side_kwargs(draw):
    """train several TinyTransformers of one design side by side on one sequence length."""
    position = draw(st.sampled_from(sorted(POSITIONS)))
    group = [_tiny_model(position=position) for _ in range(draw(st.integers(1, 3)))]
    length = draw(st.integers(1, 5))
    return dict(model=group, task="reverse", steps=draw(st.integers(1, 2)), batch_size=draw(st.integers(1, 3)),
                lengths=(length, length), lr=draw(st.floats(1e-4, 1e-2)), seed=[draw(seeds) for _ in group],
                schedule=draw(st.sampled_from(("constant", "warmup_linear"))), progress=False)


# train, the one loop: toy tasks and texts (above), images, and several models side by side.
CASES["train"] = dataclasses.replace(CASES["train"], valid=st.one_of(
    _train_kwargs(), _train_text_kwargs(), _train_images_kwargs(), _train_side_by_side_kwargs()))


# The explorers of course_utils.widgets are public too (a lesson calls them); a name "widgets.X" here.
def _explorer(make, valid: dict, kinds: dict) -> Case:
    return Case(st.fixed_dictionaries(valid), kinds, lambda kw, out: isinstance(out, widgets.Explorer),
                call=make, examples=6)


EXPLORER_CASES = {
    "widgets.sinusoid_explorer": _explorer(
        widgets.sinusoid_explorer,
        dict(d_model=st.sampled_from((4, 8, 32)), base=st.floats(10, 1e5), n_positions=st.sampled_from((16, 64))),
        dict(d_model=Int(4, 128), base=Real(positive=True), n_positions=Int(16, 256))),
    "widgets.offset_map_explorer": _explorer(
        widgets.offset_map_explorer,
        dict(t=st.integers(0, 40), k=st.integers(-12, 12), d_model=st.sampled_from((2, 8, 16))),
        dict(t=Int(0, 40), k=Int(-12, 12), d_model=Int(2, 16))),
    "widgets.amplitude_explorer": _explorer(
        widgets.amplitude_explorer,
        dict(amplitude=st.floats(0.01, 100), d_model=st.sampled_from((16, 64)), vocab=st.integers(2, 16),
             n_positions=st.integers(2, 16)),
        dict(amplitude=Real(positive=True), d_model=Int(16, 256), vocab=Size(2), n_positions=Size(2))),
    "widgets.four_terms_explorer": _explorer(
        widgets.four_terms_explorer,
        dict(token_strength=st.floats(0, 2), position_strength=st.floats(0, 2), n=st.integers(2, 16),
             d_model=st.sampled_from((2, 8, 32))),
        dict(token_strength=Real(), position_strength=Real(), n=Size(2), d_model=Size(2))),
    "widgets.permutation_explorer": _explorer(
        widgets.permutation_explorer,
        dict(sentence=st.sampled_from(("a b", "the cat sat on a mat")), d_model=st.sampled_from((2, 8))),
        dict(sentence=Text(), d_model=Size(2))),
    "widgets.extension_explorer": _explorer(
        widgets.extension_explorer,
        dict(s=st.floats(1, 16), method=st.sampled_from(widgets.EXTENSION_METHODS),
             d_head=st.sampled_from((8, 16, 128)), trained_length=st.integers(8, 4096)),
        dict(s=Real(), method=Choice(widgets.EXTENSION_METHODS), d_head=Int(8, 128), trained_length=Int(8, 4096))),
}
CASES.update(EXPLORER_CASES)


def _seeded(seed: int, *shape) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _target(name: str):
    return CASES[name].call or getattr(cu, name)


def _parameters(name: str) -> set[str]:
    """Every parameter a call of this name can be given, including a forward() after construction."""
    obj = _target(name) if name in EXPLORER_CASES else getattr(cu, name)
    names = set(inspect.signature(obj).parameters)
    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        names |= set(inspect.signature(obj.forward).parameters) - {"self", "details"}
    return names


def test_every_public_name_and_parameter_is_fuzzed():
    assert (set(CASES) - set(EXPLORER_CASES)) | RECORDS == set(cu.__all__), \
        "every public name needs a fuzz entry (or is a plain record)"
    assert set(EXPLORER_CASES) == {f"widgets.{make.__name__}" for make in widgets.EXPLORERS.values()}, \
        "every explorer needs a fuzz entry"
    assert not set(CASES) & RECORDS
    for name, case in CASES.items():
        assert set(case.kinds) == _parameters(name), f"{name}: the fuzz entry must list every parameter"


# --- running one call -------------------------------------------------------------------------------

def _names(message: str, argument: str) -> bool:
    """Does ``message`` name ``argument`` as a word (``lengths[0]`` names lengths, ``x`` is not in ``max``)?"""
    return re.search(rf"(?<![\w.]){re.escape(argument)}(?!\w)", message) is not None


def _raised_in_course_utils(error: BaseException) -> bool:
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(PACKAGE)


def _run(name: str, kwargs: dict):
    """Call ``name`` with ``kwargs`` under the time limit, with warnings as errors, printing swallowed."""
    try:
        with time_limit(TIME_LIMIT), warnings.catch_warnings(), contextlib.redirect_stdout(None):
            warnings.simplefilter("error")
            return _target(name)(**kwargs)
    finally:
        plt.close("all")


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor(shape={tuple(value.shape)}, dtype={value.dtype})"
    text = " ".join(repr(value).split())
    return text if len(text) < 80 else text[:77] + "..."


def _settings(name: str) -> settings:
    return settings(max_examples=examples(CASES[name].examples), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


@pytest.mark.parametrize("name", sorted(CASES))
def test_valid_calls_give_the_documented_result(name):
    case = CASES[name]

    @_settings(name)
    @given(case.valid)
    def valid(kwargs):
        out = _run(name, kwargs)
        result = case.expect(kwargs, out)
        assert result is not False, f"{name} returned {_describe(out)} for {kwargs}"

    valid()


def _judge(name: str, kwargs: dict, argument: str) -> str | None:
    """Call with kwargs[argument] a junk value: None if the outcome keeps the standard, else what went wrong."""
    value = kwargs[argument]
    where = f"{name}({argument}={_describe(value)})"
    try:
        out = _run(name, kwargs)
    except (ValueError, TypeError) as error:
        if not _raised_in_course_utils(error):
            return f"{where}: {type(error).__name__} from outside course_utils: {error}"
        partners = CASES[name].partners if argument in CASES[name].partners else (argument,)
        if not any(_names(str(error), named) for named in partners):
            return f"{where}: the message does not name {argument!r}: {error}"
        return None
    except AssertionError as error:  # the time limit
        return f"{where}: {error}"
    except Exception as error:  # noqa: BLE001 - any other exception is the finding
        return f"{where} raised {type(error).__name__}: {error}"
    if CASES[name].kinds[argument].refuses(value):
        return f"{where} was accepted; {argument} should have been refused"
    try:  # accepted, so it was valid after all: the result must still be the documented one
        documented = CASES[name].expect(kwargs, out)
    except AssertionError as error:
        return f"{where} was accepted but returned {_describe(out)}: {error}"
    except Exception:  # noqa: BLE001 - the junk is not something the expectation can read (e.g. no len())
        return None
    if documented is False:
        return f"{where} was accepted but returned {_describe(out)}"
    return None


_BASES: dict[str, list[dict]] = {}


def _bases(name: str) -> list[dict]:
    """Two valid calls to put the fixed junk into, the same on every run: Hypothesis' simplest example
    (often with empty inputs) and a later, more typical one. Cached."""
    if name not in _BASES:
        strategy, count = CASES[name].valid, iter(range(10**6))
        simplest = find(strategy, lambda kwargs: True,
                        settings=settings(database=None, phases=[Phase.generate], max_examples=1))
        try:
            typical = find(strategy, lambda kwargs: next(count) >= 4,
                           settings=settings(database=None, phases=[Phase.generate], max_examples=10, derandomize=True))
        except NoSuchExample:  # a strategy with fewer than five different examples
            typical = simplest
        _BASES[name] = [simplest, typical]
    return _BASES[name]


FUZZED = sorted(n for n in CASES if CASES[n].kinds)


@pytest.mark.parametrize("name", FUZZED)
def test_every_fixed_junk_value_in_every_argument(name):
    """Each argument of a valid call, swapped in turn for every value of the fixed junk list.

    Arguments with a rule (an integer, a flag, a choice, ...) are checked in the simplest valid call;
    those without one (tensors, models, ...) also in a typical one, where sizes must agree.
    """
    failures = []
    for index, base in enumerate(_bases(name)):
        for argument, kind in sorted(CASES[name].kinds.items()):
            if index and type(kind) is not Kind:
                continue
            for value in _fixed_junk():
                if kind.skip(value):
                    continue
                kwargs = dict(base)
                kwargs[argument] = value
                failure = _judge(name, kwargs, argument)
                if failure and failure not in failures:
                    failures.append(failure)
    assert not failures, f"{len(failures)} calls broke the standard:\n" + "\n".join(failures)


@pytest.mark.parametrize("name", FUZZED)
def test_random_junk_in_a_random_argument(name):
    """Hypothesis varies the valid call, the argument and the junk (random tensors, numbers, text)."""
    case = CASES[name]

    @_settings(name)
    @given(st.data())
    def junk_call(data):
        kwargs = dict(data.draw(case.valid, label="valid"))
        argument = data.draw(st.sampled_from(sorted(case.kinds)), label="argument")
        kind = case.kinds[argument]
        kwargs[argument] = data.draw(JUNK.filter(lambda v: not kind.skip(v)), label="junk")
        failure = _judge(name, kwargs, argument)
        assert failure is None, failure

    junk_call()


def test_huge_sizes_are_refused_quickly_with_a_message():
    """A typo such as n=10**12 is refused by the size budget, by name, before anything is allocated."""
    calls = {
        "causal_mask": dict(n=10**12),
        "alibi_bias": dict(n=10**6, n_heads=8),
        "alibi_slopes": dict(n_heads=10**12),
        "sinusoidal_encoding": dict(positions=10**12, d_model=8),
        "integer_encoding": dict(positions=4, d_model=10**9),
        "one_hot_encoding": dict(positions=10**6, max_len=10**6),
        "frequencies": dict(d_model=10**9),
        "position_labels": dict(batch_size=10**6, n=10**6),
        "cosine_spread": dict(d=10**9),
        "uniform_causal_weights": dict(n=10**6),
    }
    for name, kwargs in calls.items():
        with pytest.raises(ValueError, match="cap") as refused:
            with time_limit(1.0):
                getattr(cu, name)(**kwargs)
        assert any(_names(str(refused.value), argument) for argument in kwargs), str(refused.value)


def test_the_fuzzer_catches_a_missing_check(monkeypatch):
    """The junk test can fail: with causal_mask's argument check removed, it reports the crash."""
    monkeypatch.setattr(_validate, "integer", lambda value, name, **kwargs: value)
    with pytest.raises((AssertionError, ExceptionGroup), match=r"causal_mask\(n="):
        test_random_junk_in_a_random_argument("causal_mask")
    with pytest.raises(AssertionError, match=r"causal_mask\(n="):
        test_every_fixed_junk_value_in_every_argument("causal_mask")


def _converted(value, dtype):
    """``value`` with every floating-point tensor in it (also inside a dict or a FourTerms) as ``dtype``."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    if isinstance(value, FourTerms):
        return FourTerms(*(_converted(v, dtype) for v in value))
    if isinstance(value, dict):
        return {k: _converted(v, dtype) for k, v in value.items()}
    return value


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("name", FUZZED)
def test_every_tensor_in_another_float_dtype(name, dtype):
    """All float tensor arguments at once in half, bfloat16 or double precision: the call works and gives
    the documented result, or is refused by name — never a "not implemented for 'Half'" from torch."""
    for base in _bases(name):
        kwargs = {k: _converted(v, dtype) for k, v in base.items()}
        changed = [k for k in kwargs if kwargs[k] is not base[k]]
        if not changed:
            continue
        try:
            out = _run(name, kwargs)
        except (ValueError, TypeError) as error:
            assert _raised_in_course_utils(error), f"{name} in {dtype}: {type(error).__name__} from torch: {error}"
            assert any(_names(str(error), argument) for argument in changed), f"{name} in {dtype}: {error}"
            continue
        assert CASES[name].expect(kwargs, out) is not False, f"{name} in {dtype} returned {_describe(out)}"
