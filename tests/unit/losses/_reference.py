"""Hand-made batches and explicit-loop reference implementations of the loss formulas."""

from __future__ import annotations

import math

import torch
from torch import Tensor

DTYPES = (torch.float32, torch.float64)
RTOL = {torch.float32: 1e-4, torch.float64: 1e-10}


def unit_batch(batch: int, dim: int, dtype: torch.dtype, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Random L2-normalised (img, txt) embeddings with correlated positives, requiring grad."""
    gen = torch.Generator().manual_seed(seed)
    img = torch.randn(batch, dim, generator=gen, dtype=torch.float64)
    txt = img + 0.8 * torch.randn(batch, dim, generator=gen, dtype=torch.float64)
    norm = torch.nn.functional.normalize
    return norm(img, dim=1).to(dtype).requires_grad_(), norm(txt, dim=1).to(dtype).requires_grad_()


def relevance_batch(batch: int, dtype: torch.dtype, seed: int = 0, dim: int = 3) -> Tensor:
    """Cosine relevance of random 'caption vectors' (structured: a shared direction plus noise); diag = 1."""
    gen = torch.Generator().manual_seed(seed + 1)
    vec = torch.randn(batch, dim, generator=gen, dtype=torch.float64) + 0.7
    vec = torch.nn.functional.normalize(vec, dim=1)
    rel = vec @ vec.T
    rel.fill_diagonal_(1.0)
    return rel.to(dtype)


def hand_batch(dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """Three pairs in 3-D with sims [[1, .6, 0], [0, .8, .6], [0, 0, .8]] (worked examples in the tests)."""
    img = torch.eye(3, dtype=dtype)
    txt = torch.tensor([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]], dtype=dtype)
    return img.requires_grad_(), txt.requires_grad_()


def directions(sims: Tensor, rel: Tensor | None, image_ids: list[int] | None = None):
    """Yield (S, R, negatives) per direction as nested lists: S[q][c], R[q][c], negatives[q] = list of c."""
    n = sims.shape[0]
    s = sims.detach().tolist()
    r = None if rel is None else rel.detach().tolist()
    ids = list(range(n)) if image_ids is None else image_ids
    negs = [[c for c in range(n) if c != q and ids[c] != ids[q]] for q in range(n)]
    yield s, r, negs
    s_t = [[s[c][q] for c in range(n)] for q in range(n)]
    r_t = None if r is None else [[r[c][q] for c in range(n)] for q in range(n)]
    yield s_t, r_t, negs


def hinge(x: float) -> float:
    return max(x, 0.0)


def vse0_ref(sims, margin, image_ids=None) -> float:
    return sum(
        hinge(margin - S[q][q] + S[q][c])
        for S, _, negs in directions(sims, None, image_ids)
        for q in range(len(S))
        for c in negs[q]
    )


def vsepp_ref(sims, margin, image_ids=None, rel=None, lam=0.0) -> float:
    total = 0.0
    for S, R, negs in directions(sims, rel, image_ids):
        for q in range(len(S)):
            if negs[q]:
                total += max(
                    hinge(margin - S[q][q] + S[q][c] + (lam * R[q][c] if lam else 0.0)) for c in negs[q]
                )
    return total


def ladder_ref(sims, rel, thresholds, margins, betas, hard_contrastive, image_ids=None) -> float:
    """Eq. 6-8 in loops: levels by thresholds, term l over N_{l-1} (positive for l = 1) vs N_{l:L}."""
    total = 0.0
    for S, R, negs in directions(sims, rel, image_ids):
        for q in range(len(S)):
            level = {c: 1 + sum(R[q][c] < t for t in thresholds) for c in negs[q]}
            for ell in range(1, len(margins) + 1):
                upper = [q] if ell == 1 else [c for c in negs[q] if level[c] == ell - 1]
                lower = [c for c in negs[q] if level[c] >= ell]
                if not upper or not lower:
                    continue
                if hard_contrastive:
                    term = hinge(margins[ell - 1] - min(S[q][i] for i in upper) + max(S[q][j] for j in lower))
                else:
                    term = sum(hinge(margins[ell - 1] - S[q][i] + S[q][j]) for i in upper for j in lower)
                total += betas[ell - 1] * term
    return total


def kendall_full_ref(sims, rel, alpha) -> float:
    """BCLS eq. 17 in explicit triple loops (both directions)."""
    total = 0.0
    for S, R, _ in directions(sims, rel):
        n = len(S)
        for q in range(n):
            for j in range(n):
                for k in range(n):
                    if R[q][j] > R[q][k] + alpha:
                        total += hinge(S[q][k] - S[q][j])
    return total


def kendall_sw_ref(sims, rel, alpha, beta) -> float:
    """BCLS eq. 19-20 in loops over windows m = 1..M: a_m = -1 + m beta, Neg r < a_m, Pos r >= a_m + alpha."""
    n_windows = round((2 - alpha) / beta)
    tol = 1e-6
    total = 0.0
    for S, R, _ in directions(sims, rel):
        n = len(S)
        for q in range(n):
            for m in range(1, n_windows + 1):
                lo = -1 + m * beta
                neg = [k for k in range(n) if R[q][k] < lo - tol]
                pos = [j for j in range(n) if R[q][j] >= lo + alpha - tol]
                if neg and pos:
                    total += hinge(max(S[q][k] for k in neg) - min(S[q][j] for j in pos)) / n_windows
    return total


def triplet_sn_ref(sims, rel, margin, gamma, image_ids=None) -> float:
    total = 0.0
    for S, R, negs in directions(sims, rel, image_ids):
        for q in range(len(S)):
            cands = [c for c in negs[q] if R[q][c] < 1.0 - 1e-6]
            if cands:
                soft = math.log(sum(math.exp(gamma * S[q][c]) for c in cands)) / gamma
                total += hinge(soft - S[q][q] + margin)
    return total


def silhouette_ref(x: list[float], labels: list[int]) -> float:
    """Mean Silhouette in loops (Rousseeuw; Sil = 0 in singleton clusters)."""
    n, values = len(x), []
    for p in range(n):
        own = [x[o] for o in range(n) if labels[o] == labels[p] and o != p]
        if not own:
            values.append(0.0)
            continue
        a = sum(abs(x[p] - y) for y in own) / len(own)
        others = {lab for lab in labels if lab != labels[p]}
        b = min(
            sum(abs(x[p] - x[o]) for o in range(n) if labels[o] == lab) / labels.count(lab) for lab in others
        )
        values.append((b - a) / max(a, b) if max(a, b) > 0 else 0.0)
    return sum(values) / n


def assert_close(actual: Tensor | float, expected: float, dtype: torch.dtype) -> None:
    value = float(actual.detach()) if isinstance(actual, torch.Tensor) else float(actual)
    assert math.isclose(value, expected, rel_tol=RTOL[dtype], abs_tol=RTOL[dtype]), (value, expected)


def assert_finite_grads(loss: Tensor, *leaves: Tensor) -> None:
    loss.backward()
    for leaf in leaves:
        assert leaf.grad is not None and torch.isfinite(leaf.grad).all()
