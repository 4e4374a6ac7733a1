"""Parameter names of the authors' released code read as vse_ray state-dict keys, and back.

The released models save one state dict per part: the image encoder's (``img_enc``), the text encoder's
(``txt_enc``) and, for SGRAF, the similarity module's (``sim_enc``). A released name is written here as
``"<part>.<name inside the part>"``; renaming is a fixed list of fragment replacements applied in order,
so the inverse applies the reverse replacements in reverse order.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OfficialNames:
    """How one released code's parameter names read in a vse_ray model.

    Attributes:
        replacements: ``(released fragment, vse_ray fragment)`` pairs, applied in order.
        unused: Prefixes of released tensors the released forward never reads (no vse_ray counterpart).
    """

    replacements: tuple[tuple[str, str], ...]
    unused: tuple[str, ...] = ()

    def ours(self, name: str) -> str | None:
        """The vse_ray key of released parameter `name` (``"img_enc.fc.weight"``); None for an unused one."""
        if name.startswith(self.unused):
            return None
        for official, ours in self.replacements:
            name = name.replace(official, ours)
        return name

    def official(self, key: str) -> str:
        """The released name of vse_ray key `key`: the inverse of :meth:`ours`."""
        for official, ours in reversed(self.replacements):
            key = key.replace(ours, official)
        return key


_SIDES = (("img_enc.", "image_encoder."), ("txt_enc.", "text_encoder."))
# VSE∞ (github.com/woodfrog/vse_infty): its two-layer MLP holds its linear layers in ``mlp.layers`` and its
# BatchNorms in ``mlp.bns``; vse_ray's is one ``nn.Sequential`` (Linear, BatchNorm, ReLU, Linear). Its GPO is
# ``gpool``. The MLP also builds a BatchNorm after its last layer that its forward never calls.
_VSE_INF = (
    *_SIDES,
    ("gpool.", "gpo."),
    ("mlp.layers.0.", "mlp.0."),
    ("mlp.bns.0.", "mlp.1."),
    ("mlp.layers.1.", "mlp.3."),
)
VSE_INF_BIGRU = OfficialNames(_VSE_INF, unused=("img_enc.mlp.bns.1.",))
# The BERT branch: BERT's pooler is built but its output never used; files of older transformers versions
# also store BERT's constant position ids.
VSE_INF_BERT = OfficialNames(
    _VSE_INF,
    unused=("img_enc.mlp.bns.1.", "txt_enc.bert.pooler.", "txt_enc.bert.embeddings.position_ids"),
)
# VSE++ (github.com/fartashf/vsepp) and SCAN (github.com/kuanghuei/SCAN): the same names inside each part.
VSEPP = SCAN = OfficialNames(_SIDES)
# SGRAF (github.com/Paranioar/SGRAF): the similarity module's parts under vse_ray's names.
SGRAF = OfficialNames(
    (
        *_SIDES,
        ("cap_rnn.", "rnn."),
        ("sim_enc.v_global_w.", "image_global."),
        ("sim_enc.t_global_w.", "text_global."),
        ("embedding_local.", "local."),
        ("embedding_global.", "glob."),
        ("embedding_common.0.", "common."),
        ("sim_enc.sim_tranloc_w.", "local_sim."),
        ("sim_enc.sim_tranglo_w.", "global_sim."),
        ("sim_enc.sim_eval_w.", "final."),
        ("sim_enc.SGR_module.", "reasoning."),
        ("graph_query_w.", "query."),
        ("graph_key_w.", "key."),
        ("sim_graph_w.", "update."),
        ("sim_enc.SAF_module.attn_sim_w.", "filtration.gate."),
        ("sim_enc.SAF_module.bn.", "filtration.bn."),
    )
)
# GSMN (github.com/CrossmodalGroup/GSMN): the visual (``i2t_match_G``) and textual graph (``t2i_match_G``),
# each with its graph convolution as ``conv`` and its score MLP's ``out_1``, ``out_2``.
GSMN = OfficialNames(
    (
        *_SIDES,
        ("i2t_match_G.graph_convolution_1.", "visual.conv."),
        ("t2i_match_G.graph_convolution_3.", "textual.conv."),
        ("i2t_match_G.out", "visual.out"),
        ("t2i_match_G.out", "textual.out"),
    )
)
# VSRN (github.com/KunpengLi1994/VSRN): the image GRU is ``img_rnn``; the four reasoning layers
# ``Rs_GCN_k`` hold g, theta, phi and W = Sequential(conv, BatchNorm), vse_ray's ``reasoning.<k - 1>`` out
# and bn. Its saved ``state_dict`` holds the two encoders only (the caption decoder trains, unsaved).
_VSRN_GCN = tuple(
    (f"image_encoder.Rs_GCN_{k}.{theirs}.", f"image_encoder.reasoning.{k - 1}.{ours}.")
    for k in range(1, 5)
    for theirs, ours in (("g", "g"), ("theta", "theta"), ("phi", "phi"), ("W.0", "out"), ("W.1", "bn"))
)
VSRN = OfficialNames((*_SIDES, ("image_encoder.img_rnn.", "image_encoder.rnn."), *_VSRN_GCN))
# CVSE (github.com/BruceW91/CVSE): eight parts. The self-attention and consensus modules register each
# linear layer twice, as ``fc<k>`` and as the first entry of ``embedding_<k>`` (the same tensor), so only
# ``fc<k>`` and the BatchNorms ``embedding_<k>.1`` are read. Never read by the released forward: the visual
# attention's ``fc2_2`` / ``fc4``, the GCN's ``joint_att_emb`` and its graphs ``adj_O_P`` / ``adj_O_M``. Its
# ``adj_all`` is read apart (vse_ray stores it normalised); ``Multi_feature_fusing`` holds nothing with
# weighted-sum fusion.
_CVSE_LAYERS = {  # released module: (vse_ray module, its (released layer, vse_ray layer) pairs)
    "self_atten_enhance": (
        "attention",
        {
            "fc1.": "local.0.",
            "embedding_1.1.": "local.1.",
            "fc2.": "glob.0.",
            "embedding_2.1.": "glob.1.",
            "fc3.": "common.",
        },
    ),
    "consensus_level_embedding": (
        "consensus",
        {
            "fc1.": "concept.0.",
            "embedding_1.1.": "concept.1.",
            "fc2.": "instance.0.",
            "embedding_2.1.": "instance.1.",
            "fc3.": "score.",
        },
    ),
}
_CVSE_SIDES = {"V": "image", "T": "text"}
CVSE = OfficialNames(
    (
        *_SIDES,
        *(
            (f"{side}_{module}.{theirs}", f"{_CVSE_SIDES[side]}_{ours_module}.{ours}")
            for side in _CVSE_SIDES
            for module, (ours_module, layers) in _CVSE_LAYERS.items()
            for theirs, ours in layers.items()
        ),
        ("C_GCN.gc1.weight", "gcn.weight1"),
        ("C_GCN.gc2.weight", "gcn.weight2"),
    ),
    unused=(
        *(
            f"{side}_{module}.embedding_{k}.0."
            for side in _CVSE_SIDES
            for module in _CVSE_LAYERS
            for k in "123"
        ),
        "V_self_atten_enhance.fc2_2.",
        "V_self_atten_enhance.fc4.",
        "V_self_atten_enhance.embedding_2_2.",
        "C_GCN.joint_att_emb.",
        "C_GCN.adj_",
    ),
)
# The ladder loss code (github.com/cdluminate/ladderloss, `Code/thCapRank.py`): `JointEmbNet` saves one state
# dict, read here as the part ``model``: the word embedding ``encoder``, the GRU ``rnn``, the image projection
# ``cnnaffine``.
LADDER = OfficialNames(
    (
        ("model.encoder.", "text_encoder.embed."),
        ("model.rnn.", "text_encoder.rnn."),
        ("model.cnnaffine.", "image_encoder.fc."),
    )
)
