#!/usr/bin/python3
"""Exports hetpass's model zoo (test/zoo/models/): real architectures that nobody tuned the code to.

    /usr/bin/python3 tools/models/export_zoo.py [--out test/zoo/models] [--only NAME[,NAME]] [--no-ort]

Needs Debian's python3-torch (1.13.1), python3-torchvision (0.14.1) and python3-onnx (1.12.0);
the ONNX Runtime cross-check needs node and npm's onnxruntime-node (bench/ort/ensure_ort.sh
installs it into build/ort; pass --ort-module DIR otherwise). Every model:

  * is built from upstream building blocks (torchvision's architectures, torch.nn layers) with
    random weights from a fixed seed; widths and depths are shrunk so model.onnx stays <= 2 MB;
  * is exported by torch.onnx.export (the TorchScript exporter) with dynamic axes, then passes
    onnx.checker and strict shape inference;
  * gets two test sets with different dynamic sizes, laid out like ONNX's backend test data
    (test_data_set_K/input_<i>.pb, output_<j>.pb); the reference outputs are PyTorch eager's
    (eval, no_grad, float32, CPU);
  * is cross-checked: ONNX Runtime (all graph optimizations) must give the same output shapes,
    equal integer outputs and floats within rtol 1e-3 / atol 1e-4; the module re-run in float64
    must too, so no stored output hangs on a rounding-sensitive decision (an argmax tie, a score
    at a threshold, an NMS tie). A model that fails either check is not written.

meta.json records the export settings, per-set shapes, the cross-check figures and sha256.
The export is deterministic: a second run writes byte-identical files.
"""
import argparse
import copy
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from functools import partial

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models import convnext, efficientnet, mobilenetv3, regnet, shufflenetv2
from torchvision.models import swin_transformer, vision_transformer
from torchvision.models.detection import ssd, ssdlite
from torchvision.models.detection import _utils as det_utils
from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
from torchvision.models.segmentation import lraspp

RTOL, ATOL = 1e-3, 1e-4
MAX_MODEL_BYTES = 2 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def images(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def tokens(shape, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, vocab, shape, generator=g)


class Classifier(nn.Module):
    """Image classification: NCHW images with dynamic batch and spatial size."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)


# ---- image classification ------------------------------------------------------------------

def mobilenet_v3_small():
    return mobilenetv3.mobilenet_v3_small(width_mult=0.5, num_classes=10)


def efficientnet_b0():
    setting, last = efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.34)
    return efficientnet.EfficientNet(setting, 0.2, last_channel=last, num_classes=10)


def shufflenet_v2():
    return shufflenetv2.ShuffleNetV2([2, 2, 2], [16, 32, 64, 128, 256], num_classes=10)


def regnet_y():
    params = regnet.BlockParams.from_init_params(depth=6, w_0=16, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25)
    return regnet.RegNet(params, num_classes=10, stem_width=16)


def convnext_tiny():
    cfg = [convnext.CNBlockConfig(16, 32, 1), convnext.CNBlockConfig(32, 64, 2), convnext.CNBlockConfig(64, None, 1)]
    return convnext.ConvNeXt(cfg, stochastic_depth_prob=0.0, num_classes=10)


def vit_tiny():
    return vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                hidden_dim=32, mlp_dim=64, num_classes=10)


# ---- segmentation ----------------------------------------------------------------------------

class Segmenter(nn.Module):
    """torchvision's segmentation models return a dict; ONNX wants a tensor."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)["out"]


def lraspp_mobilenet_v3():
    backbone = mobilenetv3.mobilenet_v3_large(width_mult=0.25, dilated=True)
    return Segmenter(lraspp._lraspp_mobilenetv3(backbone, 4))


# ---- detection -------------------------------------------------------------------------------

class Detector(nn.Module):
    """One image [3, H, W] in, (boxes, scores, labels) out: torchvision's list-of-dicts API
    flattened for ONNX."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, image):
        d = self.net([image])[0]
        return d["boxes"], d["scores"], d["labels"]


def ssdlite_mobilenet_v3():
    # torchvision's ssdlite320_mobilenet_v3_large builder, with a quarter-width backbone and
    # extra layers and a 160x160 canvas (its kwargs go to both the backbone and SSD, so
    # width_mult cannot pass through it).
    norm = partial(nn.BatchNorm2d, eps=0.001, momentum=0.03)
    backbone = mobilenetv3.mobilenet_v3_large(norm_layer=norm, reduced_tail=True, width_mult=0.25)
    ssdlite._normal_init(backbone)
    features = backbone.features
    c4 = [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)][-1]
    backbone = ssdlite.SSDLiteFeatureExtractorMobileNet(features, c4, norm, width_mult=0.25)
    size = (160, 160)
    anchors = DefaultBoxGenerator([[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95)
    out_channels = det_utils.retrieve_out_channels(backbone, size)
    head = ssdlite.SSDLiteHead(out_channels, anchors.num_anchors_per_location(), 4, norm)
    net = ssd.SSD(backbone, anchors, size, 4, head=head, score_thresh=0.2, nms_thresh=0.55,
                  detections_per_img=50, topk_candidates=100, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    return Detector(net)


# ---- sequence models -------------------------------------------------------------------------

class LstmTagger(nn.Module):
    """Token ids [B, T] -> per-token logits: embedding, 2-layer bidirectional LSTM, linear."""

    def __init__(self, vocab=50, emb=16, hidden=24, tags=7):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.out = nn.Linear(2 * hidden, tags)

    def forward(self, ids):
        y, _ = self.lstm(self.emb(ids))
        return self.out(y)


@torch.jit.script
def greedy_decode(h, steps: torch.Tensor, emb, w_ih, w_hh, b_ih, b_hh, out_w, out_b):
    """Scripted, so its loop exports as an ONNX Loop (trip count len(source) + 2); the weights
    come in as arguments, since a traced module cannot call into a scripted submodule, and the
    trip count as a tensor, since a traced int would be frozen to the example's."""
    tok = torch.zeros([h.size(0)], dtype=torch.long)
    outs = []
    for _ in range(int(steps)):
        # torch.gru_cell has no ONNX export; its math, written out (PyTorch's gate order r, z, n)
        gi = F.linear(F.embedding(tok, emb), w_ih, b_ih).chunk(3, 1)
        gh = F.linear(h, w_hh, b_hh).chunk(3, 1)
        r = torch.sigmoid(gi[0] + gh[0])
        z = torch.sigmoid(gi[1] + gh[1])
        n = torch.tanh(gi[2] + r * gh[2])
        h = (1.0 - z) * n + z * h
        tok = F.linear(h, out_w, out_b).argmax(-1)
        outs.append(tok)
    return torch.stack(outs, 1)


class GruSeq2Seq(nn.Module):
    """Encoder-decoder: a GRU encodes the source [B, S]; greedy decoding in a Loop emits
    S + 2 tokens per sequence."""

    def __init__(self, vocab=24, emb=16, hidden=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.enc = nn.GRU(emb, hidden, batch_first=True)
        self.dec_emb = nn.Embedding(vocab, emb)
        self.cell = nn.GRUCell(emb, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, src):
        _, h = self.enc(self.emb(src))
        c = self.cell
        return greedy_decode(h[0], torch._shape_as_tensor(src)[1] + 2, self.dec_emb.weight, c.weight_ih, c.weight_hh, c.bias_ih,
                             c.bias_hh, self.out.weight, self.out.bias)


class TinyGpt(nn.Module):
    """Causal transformer LM: token + position embeddings, pre-norm blocks, a causal mask
    built from the sequence length (Trilu)."""

    def __init__(self, vocab=64, d=32, layers=2, heads=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        layer = nn.TransformerEncoderLayer(d, heads, 64, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        s = ids.size(1)
        mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        x = self.tok(ids) + self.pos(torch.arange(s))
        return self.head(self.ln(self.blocks(x, mask=mask)))


# ---- optical flow ----------------------------------------------------------------------------

class FlowWarp(nn.Module):
    """Estimates a flow field from two frames and warps the second onto the first with
    grid_sample: the sampling grid is built from the (dynamic) image size."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(6, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=2, dilation=2),
                                 nn.ReLU(), nn.Conv2d(16, 2, 3, padding=1))

    def forward(self, a, b):
        flow = torch.tanh(self.net(torch.cat([a, b], 1))) * 2.0
        h, w = a.shape[2], a.shape[3]
        ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32),
                                indexing="ij")
        gx = (xs + flow[:, 0]) * (2.0 / (w - 1)) - 1.0
        gy = (ys + flow[:, 1]) * (2.0 / (h - 1)) - 1.0
        warped = F.grid_sample(b, torch.stack([gx, gy], -1), mode="bilinear", padding_mode="border",
                               align_corners=True)
        return flow, warped


# ---- dynamic-shape idioms ------------------------------------------------------------------
# Models chosen for the shape arithmetic PyTorch code does on sizes read from tensors: pads
# computed from H % window, slices of position tables to the sequence length, positional
# encodings from arange over a feature map, pads to a skip connection's size, expands and tiles
# to the batch size.

class SwinWindow(nn.Module):
    """torchvision's Swin Transformer, shrunk: patch-embed conv, then shifted-window attention
    blocks, whose window partition pads H and W up to a multiple of the window with
    pad = (ws - H % ws) % ws from the tensor's shape, rolls by half a window in every second
    block (with the shifted-window attention mask built from the padded size), and crops back to
    H, W; patch merging pads odd sizes to even. Returns the last stage's features [B, H', W', C]
    next to the logits, so a misplaced window shows up position by position."""

    def __init__(self):
        super().__init__()
        self.net = swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                                                    window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10)

    def forward(self, x):
        f = self.net.norm(self.net.features(x))
        n = self.net
        return f, n.head(n.flatten(n.avgpool(n.permute(f))))


class BertPosEmb(nn.Module):
    """BERT encoder (2 layers, post-norm), Hugging Face style: position ids are a registered
    buffer arange(128) sliced to the sequence length (position_ids[:, :seq]), token-type
    embeddings, and the attention mask [B, S] (1 = token, 0 = padding) expanded to
    [B, 1, S, S] and made additive ((1 - mask) * -10000). Returns the sequence output and the
    pooled [CLS] output."""

    def __init__(self, vocab=100, d=32, layers=2, heads=2, ffn=64, max_pos=128, types=2):
        super().__init__()
        self.heads = heads
        self.word = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_pos, d)
        self.type_emb = nn.Embedding(types, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)))
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "q": nn.Linear(d, d), "k": nn.Linear(d, d), "v": nn.Linear(d, d), "o": nn.Linear(d, d),
                "ln1": nn.LayerNorm(d, eps=1e-12), "up": nn.Linear(d, ffn), "down": nn.Linear(ffn, d),
                "ln2": nn.LayerNorm(d, eps=1e-12)}))
        self.pool = nn.Linear(d, d)

    def split(self, x):
        b, s, d = x.shape
        return x.view(b, s, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, ids, token_types, mask):
        b, s = ids.size(0), ids.size(1)
        position_ids = self.position_ids[:, :s]
        x = self.ln(self.word(ids) + self.pos(position_ids) + self.type_emb(token_types))
        ext = mask[:, None, None, :].expand(b, 1, s, s).to(x.dtype)
        ext = (1.0 - ext) * -10000.0
        for L in self.layers:
            q, k, v = self.split(L["q"](x)), self.split(L["k"](x)), self.split(L["v"](x))
            att = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1)) + ext
            ctx = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1)
            x = L["ln1"](x + L["o"](ctx))
            x = L["ln2"](x + L["down"](F.gelu(L["up"](x))))
        return x, torch.tanh(self.pool(x[:, 0]))


class DetrSine(nn.Module):
    """Small CNN backbone (3 stride-2 conv-BN-ReLU), a 1x1 input projection, DETR's sine
    position encoding built from the feature map's size: y positions as the cumsum of an
    all-ones mask over H (DETR's), x positions as torch.arange(w, dtype=float32) + 1, both
    normalised to 2*pi, divided by temperature ** (2 * (i // 2) / F), sin/cos interleaved,
    concatenated and added to the features; flattened to a sequence [B, H*W, D] and run through
    one transformer encoder layer."""

    def __init__(self, d=32, temperature=10000.0):
        super().__init__()

        def cbr(i, o):
            return [nn.Conv2d(i, o, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]

        self.backbone = nn.Sequential(*cbr(3, 16), *cbr(16, 32), *cbr(32, 48))
        self.proj = nn.Conv2d(48, d, 1)
        self.feats = d // 2
        self.temperature = temperature
        self.encoder = nn.TransformerEncoderLayer(d, 2, 64, dropout=0.0, batch_first=True)

    def position(self, f):
        b, h, w = f.shape[0], f.shape[2], f.shape[3]
        not_mask = torch.ones((b, h, w), dtype=torch.bool)
        y = not_mask.cumsum(1, dtype=torch.float32)
        x = (torch.arange(w, dtype=torch.float32) + 1.0)[None, None, :].expand(b, h, w)
        eps, scale = 1e-6, 2 * math.pi
        y = y / (y[:, -1:, :] + eps) * scale
        x = x / (x[:, :, -1:] + eps) * scale
        dim_t = torch.arange(self.feats, dtype=torch.float32)
        dim_t = self.temperature ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / self.feats)
        px, py = x[:, :, :, None] / dim_t, y[:, :, :, None] / dim_t
        px = torch.stack((px[:, :, :, 0::2].sin(), px[:, :, :, 1::2].cos()), dim=4).flatten(3)
        py = torch.stack((py[:, :, :, 0::2].sin(), py[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return torch.cat((py, px), dim=3).permute(0, 3, 1, 2)

    def forward(self, image):
        f = self.proj(self.backbone(image))
        src = (f + self.position(f)).flatten(2).transpose(1, 2)
        return self.encoder(src)


class UNetPad(nn.Module):
    """U-Net (milesial's Pytorch-UNet layout, 2 down, 2 up, narrow): each decoder stage
    upsamples with ConvTranspose2d(2, stride 2), pads to the skip connection's size with
    diffY = skip.size(2) - x.size(2), diffX = skip.size(3) - x.size(3) and
    F.pad(x, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2]), then concatenates
    with the skip. Odd input sizes make the pads non-zero."""

    @staticmethod
    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(),
                             nn.Conv2d(o, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU())

    def __init__(self, c=8, classes=3):
        super().__init__()
        self.inc = self.block(3, c)
        self.down1 = nn.Sequential(nn.MaxPool2d(2), self.block(c, 2 * c))
        self.down2 = nn.Sequential(nn.MaxPool2d(2), self.block(2 * c, 4 * c))
        self.up1 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.conv1 = self.block(4 * c, 2 * c)
        self.up2 = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.conv2 = self.block(2 * c, c)
        self.outc = nn.Conv2d(c, classes, 1)

    @staticmethod
    def pad_to(x, skip):
        diffY = skip.size(2) - x.size(2)
        diffX = skip.size(3) - x.size(3)
        x = F.pad(x, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        return torch.cat([skip, x], dim=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        y = self.conv1(self.pad_to(self.up1(x3), x2))
        y = self.conv2(self.pad_to(self.up2(y), x1))
        return self.outc(y)


class PerceiverLatent(nn.Module):
    """Perceiver-style encoder over a variable-length input [B, N, F]: a token-type embedding of
    x.new_zeros(B, N) ids, a padding mask torch.ones(B, N) made additive, one self-attention
    layer over the input with a clamped relative-position bias
    (arange(N)[:, None] - arange(N)[None, :]).clamp(-K, K) + K, then a learned latent array
    latents.unsqueeze(0).expand(B, -1, -1) with a [CLS] latent cls.repeat(B, 1, 1) (Tile)
    cross-attending to the input, and one latent self-attention layer. Returns the latents
    [B, 1 + L, D] and logits from the [CLS] latent."""

    def __init__(self, feat=12, d=32, latents=8, heads=2, max_rel=4, classes=5):
        super().__init__()
        self.heads, self.max_rel = heads, max_rel
        self.inp = nn.Linear(feat, d)
        self.type_emb = nn.Embedding(2, d)
        self.rel = nn.Embedding(2 * max_rel + 1, heads)
        self.latents = nn.Parameter(torch.randn(latents, d))
        self.cls = nn.Parameter(torch.randn(1, 1, d))
        self.attn = nn.ModuleList([nn.ModuleDict({"q": nn.Linear(d, d), "k": nn.Linear(d, d), "v": nn.Linear(d, d),
                                                  "o": nn.Linear(d, d), "ln": nn.LayerNorm(d)}) for _ in range(3)])
        self.head = nn.Linear(d, classes)

    def attend(self, A, x, ctx, bias):
        b, n, d = x.shape
        m = ctx.size(1)
        h = self.heads
        q = A["q"](x).view(b, n, h, d // h).transpose(1, 2)
        k = A["k"](ctx).view(b, m, h, d // h).transpose(1, 2)
        v = A["v"](ctx).view(b, m, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d // h) + bias
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d)
        return A["ln"](x + A["o"](y))

    def forward(self, x):
        b, n = x.shape[0], x.shape[1]
        types = x.new_zeros(b, n, dtype=torch.long)
        mask = torch.ones(b, n)
        key_bias = ((1.0 - mask) * -10000.0)[:, None, None, :]
        pos = torch.arange(n)
        rel = (pos[:, None] - pos[None, :]).clamp(-self.max_rel, self.max_rel) + self.max_rel
        rel_bias = self.rel(rel).permute(2, 0, 1).unsqueeze(0)
        h = self.inp(x) + self.type_emb(types)
        h = self.attend(self.attn[0], h, h, rel_bias + key_bias)
        lat = torch.cat([self.cls.repeat(b, 1, 1), self.latents.unsqueeze(0).expand(x.shape[0], -1, -1)], 1)
        lat = self.attend(self.attn[1], lat, h, key_bias)
        lat = self.attend(self.attn[2], lat, lat, 0.0)
        return lat, self.head(lat[:, 0])


def bert_inputs(b, s, seed):
    """ids, token types (0 then 1 from a per-row split) and a padding mask whose rows end in
    0..s/2 padding positions (row 0 unpadded)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 100, (b, s), generator=g)
    split = torch.randint(1, s, (b, 1), generator=g)
    types = (torch.arange(s)[None, :] >= split).long()
    valid = s - torch.randint(0, s // 2 + 1, (b, 1), generator=g)
    valid[0] = s
    mask = (torch.arange(s)[None, :] < valid).long()
    return [ids, types, mask]


# name -> (builder, opset, inputs per set (seeded), input names, output names, dynamic axes)
IMG = {0: "batch", 2: "height", 3: "width"}


def image_sets(shapes):
    return [[images(s, 100 + k)] for k, s in enumerate(shapes)]


MODELS = {
    "mobilenet_v3_small": (lambda: Classifier(mobilenet_v3_small()), 13,
                           image_sets([(1, 3, 64, 64), (2, 3, 96, 80)]), ["image"], ["logits"],
                           {"image": IMG}),
    "efficientnet_b0": (lambda: Classifier(efficientnet_b0()), 14,
                        image_sets([(1, 3, 64, 64), (3, 3, 48, 72)]), ["image"], ["logits"], {"image": IMG}),
    "shufflenet_v2": (lambda: Classifier(shufflenet_v2()), 11,
                      image_sets([(2, 3, 64, 64), (1, 3, 96, 128)]), ["image"], ["logits"], {"image": IMG}),
    "regnet_y": (lambda: Classifier(regnet_y()), 12,
                 image_sets([(1, 3, 64, 64), (2, 3, 80, 48)]), ["image"], ["logits"], {"image": IMG}),
    "convnext_tiny": (lambda: Classifier(convnext_tiny()), 17,
                      image_sets([(1, 3, 64, 64), (2, 3, 96, 64)]), ["image"], ["logits"], {"image": IMG}),
    "vit_tiny": (lambda: Classifier(vit_tiny()), 17,
                 image_sets([(1, 3, 32, 32), (5, 3, 32, 32)]), ["image"], ["logits"], {"image": {0: "batch"}}),
    "lraspp_mobilenet_v3": (lraspp_mobilenet_v3, 16,
                            image_sets([(1, 3, 64, 64), (2, 3, 80, 96)]), ["image"], ["masks"], {"image": IMG}),
    "ssdlite_mobilenet_v3": (ssdlite_mobilenet_v3, 11,
                             [[images((3, 120, 160), 7).sigmoid()], [images((3, 200, 150), 8).sigmoid()]],
                             ["image"], ["boxes", "scores", "labels"],
                             {"image": {1: "height", 2: "width"}, "boxes": {0: "detections"},
                              "scores": {0: "detections"}, "labels": {0: "detections"}}),
    "lstm_tagger": (LstmTagger, 14, [[tokens((2, 9), 50, 1)], [tokens((3, 17), 50, 2)]], ["tokens"], ["logits"],
                    {"tokens": {0: "batch", 1: "time"}, "logits": {0: "batch", 1: "time"}}),
    "gru_seq2seq": (GruSeq2Seq, 15, [[tokens((2, 5), 24, 3)], [tokens((3, 8), 24, 4)]], ["source"], ["target"],
                    {"source": {0: "batch", 1: "length"}, "target": {0: "batch", 1: "steps"}}),
    "tiny_gpt": (TinyGpt, 17, [[tokens((1, 12), 64, 5)], [tokens((2, 20), 64, 6)]], ["tokens"], ["logits"],
                 {"tokens": {0: "batch", 1: "time"}, "logits": {0: "batch", 1: "time"}}),
    "flow_warp": (FlowWarp, 16, [[images((1, 3, 32, 48), 9), images((1, 3, 32, 48), 10)],
                                 [images((2, 3, 40, 24), 11), images((2, 3, 40, 24), 12)]],
                  ["frame0", "frame1"], ["flow", "warped"],
                  {"frame0": IMG, "frame1": IMG, "flow": {0: "batch", 2: "height", 3: "width"},
                   "warped": IMG}),
    "swin_window": (SwinWindow, 17, image_sets([(1, 3, 56, 72), (2, 3, 44, 60)]), ["image"], ["features", "logits"],
                    {"image": IMG, "features": {0: "batch", 1: "fheight", 2: "fwidth"}, "logits": {0: "batch"}}),
    "bert_posemb": (BertPosEmb, 17, [bert_inputs(2, 11, 13), bert_inputs(3, 37, 14)],
                    ["input_ids", "token_type_ids", "attention_mask"], ["sequence", "pooled"],
                    {"input_ids": {0: "batch", 1: "seq"}, "token_type_ids": {0: "batch", 1: "seq"},
                     "attention_mask": {0: "batch", 1: "seq"}, "sequence": {0: "batch", 1: "seq"},
                     "pooled": {0: "batch"}}),
    "detr_sine": (DetrSine, 17, image_sets([(1, 3, 64, 96), (2, 3, 80, 56)]), ["image"], ["memory"],
                  {"image": IMG, "memory": {0: "batch", 1: "tokens"}}),
    "unet_pad": (UNetPad, 17, image_sets([(1, 3, 37, 45), (2, 3, 42, 54)]), ["image"], ["masks"],
                 {"image": IMG, "masks": IMG}),
    "perceiver_latent": (PerceiverLatent, 17, [[images((2, 13, 12), 15)], [images((3, 29, 12), 16)]], ["inputs"],
                         ["latents", "logits"],
                         {"inputs": {0: "batch", 1: "seq"}, "latents": {0: "batch"}, "logits": {0: "batch"}}),
}


def randomize_norms(module):
    """Fresh BatchNorm statistics (mean 0, variance 1) make eval-mode BN an identity and let
    random-weight activations shrink layer by layer until the outputs are ~1e-12: a test that
    cannot fail. Random running statistics and affine parameters (seeded) keep them O(1), and
    linear layers get N(0, 1/fan_in) weights."""
    g = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.25)
                if m.affine:
                    m.weight.copy_(torch.rand(n, generator=g) + 0.5)
                    m.bias.copy_(torch.randn(n, generator=g) * 0.1)
            elif isinstance(m, nn.Linear):
                # zero-initialised heads (ViT's) would make every output exactly its bias, and
                # N(0, 0.01) ones (MobileNet's) shrink the logits to ~1e-3
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) / m.in_features ** 0.5)
    return module


def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def run_eager(module, inputs):
    with torch.no_grad():
        return [o.detach().numpy() for o in as_tuple(module(*inputs))]


def compare(name, what, got, want):
    """Largest float difference; raises where shapes, integers or tolerances disagree."""
    worst = 0.0
    if len(got) != len(want):
        raise RuntimeError(f"{name}: {what}: {len(got)} outputs, want {len(want)}")
    for j, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            raise RuntimeError(f"{name}: {what}: output {j} shape {g.shape}, want {w.shape}")
        if np.issubdtype(w.dtype, np.integer) or w.dtype == np.bool_:
            if not np.array_equal(g.astype(np.int64), w.astype(np.int64)):
                raise RuntimeError(f"{name}: {what}: integer output {j} differs")
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        if not np.allclose(g64, w64, rtol=RTOL, atol=ATOL):
            raise RuntimeError(f"{name}: {what}: output {j} differs by {np.abs(g64 - w64).max():.3g}")
        if g.size:
            worst = max(worst, float(np.abs(g64 - w64).max()))
    return worst


def float64_check(name, module, inputs, want):
    m64 = copy.deepcopy(module).double()
    ins = [x.double() if x.is_floating_point() else x for x in inputs]
    got = [o.astype(w.dtype) for o, w in zip(run_eager(m64, ins), want)]
    return compare(name, "float64 re-run", got, want)


ORT_TYPES = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_, "float64": np.float64,
             "uint8": np.uint8}


def ort_check(name, model_dir, set_index, want, ort_module):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, ORT_NODE_MODULE=ort_module)
        subprocess.run(["node", os.path.join(REPO, "bench/ort/ort_bench.mjs"), model_dir, f"--set={set_index}",
                        f"--dump={tmp}"], check=True, env=env)
        meta = json.load(open(os.path.join(tmp, "outputs.json")))
        got = []
        for j, o in enumerate(meta):
            data = np.fromfile(os.path.join(tmp, f"output_{j}.bin"), dtype=ORT_TYPES[o["type"]])
            got.append(data.reshape(o["dims"]))
    return compare(name, f"onnxruntime set {set_index}", got, want)


def save_tensor(path, array, name):
    t = onnx.numpy_helper.from_array(np.ascontiguousarray(array), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def export(name, spec, out_root, ort_module):
    build, opset, sets, in_names, out_names, axes = spec
    torch.manual_seed(0)
    module = randomize_norms(build()).eval()
    d = os.path.join(out_root, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    # Not under no_grad: with gradients on, nn.MultiheadAttention and nn.TransformerEncoder
    # skip their fused inference fast path, which has no ONNX export.
    torch.onnx.export(module, tuple(sets[0]), path, opset_version=opset, input_names=in_names,
                      output_names=out_names, dynamic_axes=axes, do_constant_folding=True)
    model = onnx.load(path)
    onnx.checker.check_model(model)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    size = os.path.getsize(path)
    if size > MAX_MODEL_BYTES:
        raise RuntimeError(f"{name}: model.onnx is {size} bytes, over {MAX_MODEL_BYTES}")
    meta = {"name": name, "torch": torch.__version__, "torchvision": torchvision.__version__,
            "onnx": onnx.__version__, "opset": opset, "do_constant_folding": True,
            "seed_note": "random init via torch.manual_seed(0); no pretrained weights",
            "model_bytes": size, "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest(),
            "inputs": in_names, "outputs": out_names,
            "ops": sorted({n.op_type for n in model.graph.node} | sub_ops(model.graph)), "test_sets": []}
    for k, inputs in enumerate(sets):
        want = run_eager(module, inputs)
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd)
        for i, (x, n) in enumerate(zip(inputs, in_names)):
            save_tensor(os.path.join(sd, f"input_{i}.pb"), x.numpy(), n)
        for j, (y, n) in enumerate(zip(want, out_names)):
            save_tensor(os.path.join(sd, f"output_{j}.pb"), y, n)
        entry = {"inputs": {n: list(x.shape) for n, x in zip(in_names, inputs)},
                 "outputs": {n: list(y.shape) for n, y in zip(out_names, want)},
                 "float64_max_abs_diff": float64_check(name, module, inputs, want),
                 "output_abs_mean": [float(np.abs(y.astype(np.float64)).mean()) if y.size else 0.0 for y in want]}
        if ort_module:
            entry["onnxruntime_max_abs_diff"] = ort_check(name, d, k, want, ort_module)
        meta["test_sets"].append(entry)
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    return meta


def sub_ops(graph):
    ops = set()
    for n in graph.node:
        for a in n.attribute:
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                ops |= {m.op_type for m in g.node} | sub_ops(g)
    return ops


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "test/zoo/models"))
    ap.add_argument("--only", default="")
    ap.add_argument("--no-ort", action="store_true", help="skip the ONNX Runtime cross-check")
    ap.add_argument("--ort-module", default=os.path.join(REPO, "build/ort/node_modules/onnxruntime-node"))
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(MODELS)
    ort_module = None if args.no_ort else os.path.abspath(args.ort_module)
    if ort_module and not os.path.isdir(ort_module):
        sys.exit(f"export_zoo.py: no onnxruntime-node at {ort_module} (bench/ort/ensure_ort.sh, or --no-ort)")
    total = 0
    for name in names:
        if name not in MODELS:
            sys.exit(f"export_zoo.py: unknown model {name}; known: {', '.join(MODELS)}")
        meta = export(name, MODELS[name], args.out, ort_module)
        total += meta["model_bytes"]
        sets = meta["test_sets"]
        print(f"{name:24s} opset {meta['opset']:2d} {meta['model_bytes']:8d} B  {len(meta['ops']):2d} ops  "
              f"ort {[s.get('onnxruntime_max_abs_diff') for s in sets]}  "
              f"f64 {[round(s['float64_max_abs_diff'], 9) for s in sets]}  "
              f"|out| {[[round(v, 4) for v in s['output_abs_mean']] for s in sets]}  "
              f"shapes {[list(s['outputs'].values()) for s in sets]}", flush=True)
    print(f"total {total} B")


if __name__ == "__main__":
    main()
