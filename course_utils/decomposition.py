"""The four-term decomposition of attention logits when position is added to the token.

With q = (x + e) @ w_q and k = (y + f) @ w_k (row vectors, weights right-multiplied):
    q @ k.T = x w_q (y w_k)^T + x w_q (f w_k)^T + e w_q (y w_k)^T + e w_q (f w_k)^T
              token-token       token-position    position-token    position-position
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from . import _validate


class FourTerms(NamedTuple):
    """The four parts of the (unscaled) attention logits, each [n_x, n_y]."""

    token_token: torch.Tensor
    token_position: torch.Tensor
    position_token: torch.Tensor
    position_position: torch.Tensor

    def total(self) -> torch.Tensor:
        """The full logits (x + e) w_q ((y + f) w_k)^T: the sum of the four terms."""
        return self.token_token + self.token_position + self.position_token + self.position_position


def four_term_decomposition(x, e, y, f, w_q, w_k) -> FourTerms:
    """Split the logits (x + e) @ w_q @ ((y + f) @ w_k).T into four terms.

    x: token embeddings of the queries [n_x, d]; e: their position codes [n_x, d];
    y: token embeddings of the keys [n_y, d]; f: their position codes [n_y, d];
    w_q, w_k: projections [d, d_k]. Returns FourTerms, each field [n_x, n_y], unscaled.
    """
    named = {"x": x, "e": e, "y": y, "f": f, "w_q": w_q, "w_k": w_k}
    for name, value in named.items():
        _validate.matrix(value, name)
    dtypes = {value.dtype for value in named.values()}
    if len(dtypes) != 1:
        raise TypeError(f"x, e, y, f, w_q and w_k must share one dtype, got {sorted(map(str, dtypes))}")
    if x.shape != e.shape:
        raise ValueError(f"e must have the shape of x (one code per query token), got x {tuple(x.shape)}, e {tuple(e.shape)}")
    if y.shape != f.shape:
        raise ValueError(f"f must have the shape of y (one code per key token), got y {tuple(y.shape)}, f {tuple(f.shape)}")
    d = x.shape[1]
    if y.shape[1] != d:
        raise ValueError(f"x and y must have the same width d, got {d} and {y.shape[1]}")
    if w_q.shape[0] != d or w_k.shape[0] != d:
        raise ValueError(
            f"w_q and w_k must have {d} rows (the width of x and y), got w_q {tuple(w_q.shape)}, w_k {tuple(w_k.shape)}"
        )
    if w_q.shape[1] != w_k.shape[1]:
        raise ValueError(f"w_q and w_k must map to the same d_k, got w_q {tuple(w_q.shape)}, w_k {tuple(w_k.shape)}")
    xq, eq = x @ w_q, e @ w_q
    yk, fk = y @ w_k, f @ w_k
    return FourTerms(
        token_token=xq @ yk.T,
        token_position=xq @ fk.T,
        position_token=eq @ yk.T,
        position_position=eq @ fk.T,
    )
