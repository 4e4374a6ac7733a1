"""GSMN: Graph Structured Matching Network (Liu et al., CVPR 2020), as CrossmodalGroup/GSMN computes it.

Each image × caption pair is scored twice and the two scores added:

- the visual graph (i2t): each region attends to the caption's words (SCAN's i-t attention, λ), its node
  matching vector is the multi-block cosine of the region and its attended words (``num_block`` chunks of
  the E dimensions); a graph convolution with Gaussian kernels of the regions' polar pseudo-coordinates
  (centre offsets, from the boxes) and a two-layer weight-normalised MLP give a score per region, averaged;
- the textual graph (t2i): the same with each word attending to the regions, and a graph convolution over
  the caption's words whose edge weights are the words' intra-caption attention softmax(λ w_i · w_j), over
  every word pair (dense) or over the dependency-parse edges plus self-loops (``sparse``).

As released, each node's convolution reads its own matching vector at every neighbour (the code repeats
node i's vector along the neighbour axis). The visual kernels are normalised over the kernels of each
region pair, so the boxes scale each kernel's output by Σ_j w_ijk; the textual kernels are normalised over
the neighbours, so their weights sum to one and the dependency edges (dense or sparse) change the score
only by float rounding. vse_ray computes the released function, sums included.

Inputs the graphs need, in vse_ray's layouts:

- **boxes**: the last 4 columns of each region's features are its box (x1, y1, x2, y2) divided by the image's
  width and height (``vse_ray.official.gsmn_data`` appends them to SCAN's precomp features);
- **dependency edges** (sparse only): ``graph_path``, a JSON file {caption text: [[governor, dependent], ...]}
  of caption token positions (0 is ``<start>``; the released CoreNLP parses, first pair the root's),
  read by ``caption_ids``, which packs each token's governor into its id (``word + vocab_size · (head + 1)``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from vse_ray.models.base import AugmentIds
from vse_ray.models.cross_attention import (
    EPS,
    cross_attention_weights,
    l2_normalize,
    length_mask,
    region_word_logits,
)
from vse_ray.models.pair_scoring import pairs_per_pass, score_pairs
from vse_ray.models.region_word import RegionWordModel

BOX_COLUMNS = 4  # (x1, y1, x2, y2) / (width, height) after each region's features
CPU_PAIRS, GPU_PAIRS = 256, 4096  # a pair holds (R + L) × E attended values


class WeightNormLinear(nn.Module):
    """``nn.utils.weight_norm(nn.Linear(n_in, n_out))`` with its parameter names (``weight_g``, ``weight_v``,
    ``bias``): W = g · v / ||v|| per output row."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        linear = nn.Linear(n_in, n_out)
        self.weight_v = nn.Parameter(linear.weight.detach().clone())
        self.weight_g = nn.Parameter(torch.linalg.vector_norm(self.weight_v.detach(), dim=1, keepdim=True))
        self.bias = nn.Parameter(linear.bias.detach().clone())

    def forward(self, x: Tensor) -> Tensor:
        weight = self.weight_v * (
            self.weight_g / torch.linalg.vector_norm(self.weight_v, dim=1, keepdim=True)
        )
        return nn.functional.linear(x, weight, self.bias)


class KernelConvolution(nn.Module):
    """A node's kernel convolution: ``n_kernels`` linear maps of its matching vector, each scaled by the
    node's kernel weight summed over its neighbours, concatenated (the released ``*GraphConvolution``).

    Args:
        n_blocks: size of a node's matching vector (``num_block``).
        hidden: output size (``hid_dim``, a multiple of ``n_kernels``).
        n_kernels: number of kernels (8).
        bias: whether the kernel maps have biases.
    """

    def __init__(self, n_blocks: int, hidden: int, n_kernels: int, bias: bool) -> None:
        super().__init__()
        self.conv_weights = nn.ModuleList(
            nn.Linear(n_blocks, hidden // n_kernels, bias=bias) for _ in range(n_kernels)
        )

    def convolve(self, matching: Tensor, kernel_sums: Tensor) -> Tensor:
        """(..., N, n_blocks) node matching vectors, (..., N, K) kernel sums → (..., N, hidden)."""
        maps = [conv for conv in self.conv_weights if isinstance(conv, nn.Linear)]
        weights = torch.stack([conv.weight for conv in maps])  # (K, hidden/K, n_blocks)
        convolved = torch.einsum("...nk,...nb,khb->...nkh", kernel_sums, matching, weights)
        if maps[0].bias is not None:
            convolved = convolved + torch.stack([conv.bias for conv in maps])
        return convolved.flatten(-2)


class PolarKernels(KernelConvolution):
    """The image graph's Gaussian kernels of the regions' polar pseudo-coordinates (ρ, θ); bias-free maps."""

    def __init__(self, n_blocks: int, hidden: int, n_kernels: int) -> None:
        super().__init__(n_blocks, hidden, n_kernels, bias=False)
        # drawn in the released `init_parameters`' order, registered in the released constructor's
        mean_theta = torch.empty(n_kernels, 1).uniform_(-math.pi, math.pi)
        mean_rho = torch.empty(n_kernels, 1).uniform_(0.0, 1.0)
        precision_theta = torch.empty(n_kernels, 1).uniform_(0.0, 1.0)
        precision_rho = torch.empty(n_kernels, 1).uniform_(0.0, 1.0)
        self.mean_rho, self.mean_theta = nn.Parameter(mean_rho), nn.Parameter(mean_theta)
        self.precision_rho, self.precision_theta = nn.Parameter(precision_rho), nn.Parameter(precision_theta)

    def kernel_sums(self, centres: Tensor) -> Tensor:
        """(N_img, R, 2) box centres → (N_img, R, K): each region's kernel weights, summed over its
        neighbours (the released patch operator applied to features that are the region's own vector)."""
        offset = centres[:, :, None] - centres[:, None]  # (N_img, R, R, 2): centre_i - centre_j
        rho = torch.sqrt(offset[..., 0] ** 2 + offset[..., 1] ** 2)[..., None]
        theta = torch.atan2(offset[..., 0], offset[..., 1])[..., None]
        weights_rho = torch.exp(
            -0.5 * (rho - self.mean_rho.view(-1)) ** 2 / (1e-14 + self.precision_rho.view(-1) ** 2)
        )
        first = torch.abs(theta - self.mean_theta.view(-1))
        angle = torch.minimum(first, torch.abs(2 * math.pi - first))
        weights_theta = torch.exp(-0.5 * angle**2 / (1e-14 + self.precision_theta.view(-1) ** 2))
        weights = weights_rho * weights_theta
        weights = torch.where(torch.isnan(weights), 0.0, weights)  # as released; infinities stay
        # normalised over the kernels of each region pair (the released code's sum runs over its flattened
        # pairs' kernel axis), then summed over the neighbours by the patch operator
        return (weights / weights.sum(dim=-1, keepdim=True)).sum(dim=2)


class AttentionKernels(KernelConvolution):
    """The caption graph's kernels: edge weights from the words' intra attention, scaled per kernel. Its maps
    have biases (the released code passes 2 as the layer's ``bias`` argument)."""

    def __init__(self, n_blocks: int, hidden: int, n_kernels: int) -> None:
        super().__init__(n_blocks, hidden, n_kernels, bias=True)
        self.params = nn.Parameter(torch.empty(n_kernels, 1).uniform_(-1.0, 1.0))

    def kernel_sums(self, edge_weights: Tensor, neighbours: Tensor) -> Tensor:
        """(N_txt, L, L) edge weights, (N_txt, L, L) neighbour indicator (the features the released code
        gives neighbour j of node i are node i's vector times it) → (N_txt, L, K)."""
        weights = edge_weights[..., None] * self.params.view(-1)
        weights = weights / weights.sum(dim=2, keepdim=True)
        return (weights * neighbours[..., None]).sum(dim=2)


class ScoreMLP(nn.Module):
    """A node's score out_2(tanh(out_1(·))), both weight-normalised."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.out_1 = WeightNormLinear(hidden, hidden)
        self.out_2 = WeightNormLinear(hidden, 1)

    def node_scores(self, convolved: Tensor) -> Tensor:
        """(..., N, hidden) → (..., N)."""
        return self.out_2(torch.tanh(self.out_1(convolved))).squeeze(-1)


class VisualGraph(ScoreMLP):
    """The image graph (released ``VisualGraph``): polar kernels, then the score MLP."""

    def __init__(self, n_blocks: int, hidden: int, n_kernels: int) -> None:
        conv = PolarKernels(n_blocks, hidden, n_kernels)  # drawn before the score MLP, as released
        super().__init__(hidden)
        self.conv = conv


class TextualGraph(ScoreMLP):
    """The caption graph (released ``TextualGraph``): attention kernels, then the score MLP."""

    def __init__(self, n_blocks: int, hidden: int, n_kernels: int) -> None:
        conv = AttentionKernels(n_blocks, hidden, n_kernels)  # drawn before the score MLP, as released
        super().__init__(hidden)
        self.conv = conv


def block_cosine(query: Tensor, attended: Tensor, n_blocks: int) -> Tensor:
    """(..., E) × (..., E) → (..., n_blocks): the cosine of each of the n_blocks chunks of E (eps 1e-8)."""
    q, a = query.unflatten(-1, (n_blocks, -1)), attended.unflatten(-1, (n_blocks, -1))
    norms = torch.linalg.vector_norm(q, dim=-1) * torch.linalg.vector_norm(a, dim=-1)
    return (q * a).sum(-1) / norms.clamp(min=EPS)


def caption_adjacency(
    heads: Tensor, lengths: Tensor, sparse: bool, words: Tensor, lambda_softmax: float
) -> tuple[Tensor, Tensor]:
    """(edge weights, neighbour indicator), each (N_txt, L, L), of every caption's word graph.

    Dense: softmax_j(λ w_i · w_j) over the caption's words, every word a neighbour. Sparse: the same
    softmax restricted to the dependency edges (both directions) and self-loops, L2-normalised over j.
    """
    max_len = words.shape[1]
    mask = length_mask(lengths, max_len)
    logits = (words @ words.transpose(1, 2)) * lambda_softmax
    intra = torch.softmax(logits.masked_fill(~mask[:, None], float("-inf")), dim=-1)
    if sparse:
        positions = torch.arange(max_len, device=heads.device)
        edge = (heads[:, :, None] == positions) & (heads[:, :, None] >= 0)  # i -> its governor
        neighbours = (edge | edge.transpose(1, 2)).to(intra.dtype) + torch.eye(max_len, device=heads.device)
        edge_weights = l2_normalize(neighbours * intra, dim=2)
    else:
        edge_weights, neighbours = intra, mask[:, None].expand_as(intra).to(intra.dtype)
    # rows of padding positions (left out of the score) get finite weights
    return torch.where(mask[:, :, None], edge_weights, 1.0), neighbours


def gsmn_scores(
    images: Tensor,
    words: Tensor,
    lengths: Tensor,
    visual: VisualGraph,
    textual: TextualGraph,
    n_blocks: int,
    lambda_softmax: float,
    sparse: bool,
) -> Tensor:
    """(N_img, N_txt) GSMN scores: the visual graph's plus the textual graph's.

    Args:
        images: (N_img, R, E + 2) unit region vectors and box centres (``GSMNModel.encode_images``).
        words: (N_txt, L, E + 1) unit word vectors and governor positions (``GSMNModel.encode_captions``).
        lengths: (N_txt,) caption lengths.
    """
    regions, centres = images[..., :-2], images[..., -2:]
    vectors = words[..., :-1]
    word_mask = length_mask(lengths, vectors.shape[1])  # (N_txt, L)
    heads = torch.where(word_mask, words[..., -1].round().long(), -1)  # padding: no governor
    logits = region_word_logits(regions, vectors)  # (N_img, N_txt, R, L)

    # visual graph: regions attend to words
    alpha = cross_attention_weights(logits, None, word_mask[None], lambda_softmax)
    attended = torch.einsum("itrl,tle->itre", alpha, vectors)
    matching = block_cosine(regions[:, None], attended, n_blocks)  # (N_img, N_txt, R, n_blocks)
    convolved = visual.conv.convolve(matching, visual.conv.kernel_sums(centres)[:, None])
    visual_scores = visual.node_scores(convolved).mean(-1)

    # textual graph: words attend to regions
    alpha = cross_attention_weights(logits.transpose(-1, -2), word_mask[None], None, lambda_softmax)
    attended = torch.einsum("itlr,ire->itle", alpha, regions)
    matching = block_cosine(vectors[None], attended, n_blocks)  # (N_img, N_txt, L, n_blocks)
    edge_weights, neighbours = caption_adjacency(heads, lengths, sparse, vectors, lambda_softmax)
    convolved = textual.conv.convolve(matching, textual.conv.kernel_sums(edge_weights, neighbours)[None])
    node = textual.node_scores(convolved)
    textual_scores = (node * word_mask).sum(-1) / lengths.to(node.dtype)
    return visual_scores + textual_scores


def load_graphs(path: str, check_only: bool = False) -> dict[str, list[list[int]]]:
    """The dependency edges of ``graph_path``: {caption text: [[governor, dependent], ...]} (only the file's
    presence when `check_only`)."""
    file = Path(path)
    if not path or not file.is_file():
        what = f"no such file: {path}" if path else "not given"
        raise FileNotFoundError(
            f"graph_path: {what}; the sparse GSMN reads its captions' dependency edges from it "
            "(`vse-ray gsmn-data` writes graphs.json; --set model_params.graph_path=FILE)"
        )
    if check_only:
        return {}
    graphs = json.loads(file.read_text(encoding="utf-8"))
    if not isinstance(graphs, dict):
        raise ValueError(f"{file}: must hold a JSON object {{caption text: [[governor, dependent], ...]}}")
    return graphs


def governors(edges: Sequence[Sequence[int]], length: int) -> np.ndarray:
    """Each token's governor position (-1: none) from a caption's released edge list: the first pair (the
    root's) and pairs reaching beyond the caption are skipped, as the released graph builder does; a token
    named as dependent twice (a caption parsed as two sentences) keeps its first governor."""
    heads = np.full(length, -1, dtype=np.int64)
    for k, (governor, dependent) in enumerate(edges):
        if k == 0 or governor >= length or dependent >= length or governor == dependent:
            continue
        if heads[dependent] < 0:
            heads[dependent] = governor
    return heads


class GSMNModel(RegionWordModel):
    """GSMN as released: Bi-GRU words and projected regions scored by a visual and a textual graph.

    Official recipes: λ 20 (F30K) or 10 (COCO), ``num_block`` 16, ``hid_dim`` 32, 8 kernels, E 1024,
    max of hinges with margin 0.2, Adam with clip 2; dense or ``--is_sparse``.

    Args:
        vocab_size, word_dim, embed_dim: vocabulary, word size, E.
        feature_dim: region feature width D plus the ``BOX_COLUMNS`` box columns.
        sparse: the textual graph over dependency edges (needs ``graph_path``) instead of all word pairs.
        graph_path: JSON {caption text: [[governor, dependent], ...]} (see the module docstring).
        lambda_softmax: λ of both attentions and of the words' intra attention.
        num_block: chunks of E in the multi-block cosine (the node matching vector's size).
        hid_dim: graph convolution size; n_kernels: kernels per convolution.
        bidirectional: Bi-GRU caption encoder (the released recipes use it).
        max_pairs: image × caption pairs per vectorised block (bounds memory, not the result);
            None: ``CPU_PAIRS`` on a CPU, ``GPU_PAIRS`` on a GPU.
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        feature_dim: int,
        word_dim: int = 300,
        embed_dim: int = 1024,
        sparse: bool = False,
        graph_path: str = "",
        lambda_softmax: float = 20.0,
        num_block: int = 16,
        hid_dim: int = 32,
        n_kernels: int = 8,
        bidirectional: bool = True,
        max_pairs: int | None = None,
    ) -> None:
        self.check_options(
            feature_dim=feature_dim,
            embed_dim=embed_dim,
            sparse=sparse,
            graph_path=graph_path,
            num_block=num_block,
            hid_dim=hid_dim,
            n_kernels=n_kernels,
        )
        super().__init__(vocab_size, feature_dim - BOX_COLUMNS, word_dim, embed_dim, bidirectional)
        self.visual = VisualGraph(num_block, hid_dim, n_kernels)
        self.textual = TextualGraph(num_block, hid_dim, n_kernels)
        self.vocab_size, self.sparse, self.lambda_softmax = vocab_size, sparse, lambda_softmax
        self.num_block, self.max_pairs = num_block, max_pairs
        self.graphs = load_graphs(graph_path) if sparse else {}
        self.graph_path = graph_path

    @staticmethod
    def check_options(
        feature_dim: int = BOX_COLUMNS + 1,
        embed_dim: int = 1024,
        sparse: bool = False,
        graph_path: str = "",
        num_block: int = 16,
        hid_dim: int = 32,
        n_kernels: int = 8,
        **_: object,
    ) -> None:
        """ValueError naming the first option GSMN cannot be built with."""
        if feature_dim <= BOX_COLUMNS:
            raise ValueError(
                f"feature_dim must count the region features and {BOX_COLUMNS} box columns, got {feature_dim}"
            )
        if num_block < 1 or embed_dim % num_block:
            raise ValueError(f"num_block must divide embed_dim {embed_dim}, got {num_block}")
        if n_kernels < 1 or hid_dim % n_kernels:
            raise ValueError(f"n_kernels must divide hid_dim {hid_dim}, got {n_kernels}")

    @staticmethod
    def check_pretrained(  # type: ignore[override]  # the base takes any model_params
        sparse: bool = False, graph_path: str = "", **_: object
    ) -> None:
        """FileNotFoundError when the sparse model's graph file is not on this machine."""
        if sparse:
            load_graphs(graph_path, check_only=True)

    def caption_ids(
        self,
        tokens: Sequence[np.ndarray],
        texts: Sequence[str],
        augment: AugmentIds | None = None,
    ) -> list[np.ndarray]:
        """The stored tokens; for the sparse model each packed with its governor position from
        ``graph_path`` (word + vocab_size · (governor + 1)). Caption augmentation would move the words the
        edges point at, so the sparse model refuses it."""
        if not self.sparse:
            return super().caption_ids(tokens, texts, augment)
        if augment is not None:
            raise ValueError(
                "caption augmentation: the sparse GSMN's edges index the stored words; set it off"
            )
        ids = super().caption_ids(tokens, texts)
        packed = []
        for words, text in zip(ids, texts, strict=True):
            if text not in self.graphs:
                raise ValueError(f"{self.graph_path}: no dependency edges for caption {text[:80]!r}")
            heads = governors(self.graphs[text], len(words))
            packed.append(words + self.vocab_size * (heads + 1))
        return packed

    def encode_images(self, images: Tensor) -> Tensor:
        """(B, R, D + 4) region features and boxes → (B, R, E + 2) unit region vectors and box centres."""
        regions = super().encode_images(images[..., :-BOX_COLUMNS])
        boxes = images[..., -BOX_COLUMNS:]
        centres = boxes[..., :2] + 0.5 * (boxes[..., 2:] - boxes[..., :2])
        return torch.cat([regions, centres.to(regions.dtype)], dim=-1)

    def encode_captions(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """(B, L) ids (packed with governors for the sparse model) → (B, max(lengths), E + 1) unit word
        vectors and each word's governor position (-1: none)."""
        words = super().encode_captions(tokens % self.vocab_size, lengths)
        heads = tokens[:, : words.shape[1]] // self.vocab_size - 1
        return torch.cat([words, heads.to(words.dtype)[..., None]], dim=-1)

    def score(self, img_repr: Tensor, txt_repr: Tensor, txt_lengths: Tensor | None = None) -> Tensor:
        """(N_img, N_txt) GSMN similarities, in blocks of at most ``max_pairs`` pairs."""
        if txt_lengths is None:
            raise ValueError("GSMN scores words against regions and needs the caption lengths")
        max_pairs = pairs_per_pass(self.max_pairs, img_repr.device, CPU_PAIRS, GPU_PAIRS)
        return score_pairs(self.score_block, img_repr, txt_repr, txt_lengths, max_pairs)

    def score_block(self, regions: Tensor, words: Tensor, lengths: Tensor) -> Tensor:
        """All pairs of one block in one vectorised pass."""
        return gsmn_scores(
            regions,
            words,
            lengths,
            self.visual,
            self.textual,
            self.num_block,
            self.lambda_softmax,
            self.sparse,
        )

    def pair_floats(self, n_regions: int, n_words: int) -> int:
        """Floats held per pair at the peak of ``score_block``: the attention's (R, L) arrays of both graphs,
        the attended vectors and their products with the nodes, and the nodes' convolution and MLP outputs."""
        embed, hidden = self.image_encoder.fc.out_features, self.visual.out_1.weight_v.shape[0]
        nodes = n_regions + n_words
        return 12 * n_regions * n_words + 2 * nodes * embed + 3 * nodes * hidden
