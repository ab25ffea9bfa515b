"""Generates tests/fixtures/transformer_*.pt: fixed weights, inputs, masks and outputs of
the Transformer computed with PyTorch's own Python ops, written independently of our
C++ model (explicit softmax attention, F.layer_norm, F.linear), so the C++ model is
checked against another implementation, not against itself. ScaleNorm and FixNorm are
written from Nguyen & Salazar 2019's formulas: g * x / max(||x||, 1e-5), and the tied matrix
with unit rows (F.normalize) in the inputs and the output projection.

Run with the Python of the pinned torch wheel:  python tests/make_model_fixtures.py
"""
import math
import os

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
V, D, H, FFN, ENC, DEC, PAD, MAXPOS = 23, 16, 4, 32, 2, 2, 0, 64


def sinusoids(n, d):
    pe = torch.zeros(n, d, dtype=torch.float64)
    for p in range(n):
        for i in range(0, d, 2):
            angle = p / (10000 ** (i / d))
            pe[p, i] = math.sin(angle)
            pe[p, i + 1] = math.cos(angle)
    return pe.float()


def make_weights(gen):
    w = {}

    def rnd(*shape, scale=0.3):
        return torch.randn(*shape, generator=gen) * scale

    w["embed.weight"] = rnd(V, D)
    w["embed.weight"][PAD] = 0
    for l in range(ENC):
        p = f"encoder_layers.{l}."
        w[p + "self_attn.in_proj.weight"], w[p + "self_attn.in_proj.bias"] = rnd(3 * D, D), rnd(3 * D)
        w[p + "self_attn.out_proj.weight"], w[p + "self_attn.out_proj.bias"] = rnd(D, D), rnd(D)
        w[p + "ffn.fc1.weight"], w[p + "ffn.fc1.bias"] = rnd(FFN, D), rnd(FFN)
        w[p + "ffn.fc2.weight"], w[p + "ffn.fc2.bias"] = rnd(D, FFN), rnd(D)
        for n in ("norm1", "norm2"):
            w[p + n + ".weight"], w[p + n + ".bias"] = 1 + rnd(D, scale=0.1), rnd(D, scale=0.1)
    for l in range(DEC):
        p = f"decoder_layers.{l}."
        w[p + "self_attn.in_proj.weight"], w[p + "self_attn.in_proj.bias"] = rnd(3 * D, D), rnd(3 * D)
        w[p + "self_attn.out_proj.weight"], w[p + "self_attn.out_proj.bias"] = rnd(D, D), rnd(D)
        w[p + "cross_attn.q_proj.weight"], w[p + "cross_attn.q_proj.bias"] = rnd(D, D), rnd(D)
        w[p + "cross_attn.kv_proj.weight"], w[p + "cross_attn.kv_proj.bias"] = rnd(2 * D, D), rnd(2 * D)
        w[p + "cross_attn.out_proj.weight"], w[p + "cross_attn.out_proj.bias"] = rnd(D, D), rnd(D)
        w[p + "ffn.fc1.weight"], w[p + "ffn.fc1.bias"] = rnd(FFN, D), rnd(FFN)
        w[p + "ffn.fc2.weight"], w[p + "ffn.fc2.bias"] = rnd(D, FFN), rnd(D)
        for n in ("norm1", "norm2", "norm3"):
            w[p + n + ".weight"], w[p + n + ".bias"] = 1 + rnd(D, scale=0.1), rnd(D, scale=0.1)
    for n in ("encoder_norm", "decoder_norm"):
        w[n + ".weight"], w[n + ".bias"] = 1 + rnd(D, scale=0.1), rnd(D, scale=0.1)
    return w


def attention(q, k, v, mask):
    """q: [b, tq, d], k, v: [b, tk, d] (already projected); mask: bool [b, 1, tq|1, tk]."""
    b, tq, _ = q.shape
    split = lambda x: x.view(b, x.shape[1], H, D // H).transpose(1, 2)
    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D // H)
    scores = scores.masked_fill(~mask, float("-inf"))
    out = torch.softmax(scores, -1) @ v
    return out.transpose(1, 2).reshape(b, tq, D)


def scale_weights(w, gen):
    """LayerNorm's weight and bias -> ScaleNorm's one scalar g, near its sqrt(D) start."""
    out = {k: v for k, v in w.items() if not k.endswith(("norm1.bias", "norm2.bias", "norm3.bias", "_norm.bias"))}
    for k in list(out):
        if k.endswith((".weight",)) and ("norm1" in k or "norm2" in k or "norm3" in k or "_norm" in k):
            del out[k]
            out[k[: -len(".weight")] + ".scale"] = math.sqrt(D) * (1 + 0.1 * torch.randn(1, generator=gen))
    return out


ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}  # F.gelu: the exact (erf) one


def forward(w, src, tgt, pre_norm, scale_norm=False, fix_norm=False, activation="relu"):
    if scale_norm:
        ln = lambda x, n: x * (w[n + ".scale"] / x.norm(dim=-1, keepdim=True).clamp(min=1e-5))
    else:
        ln = lambda x, n: F.layer_norm(x, (D,), w[n + ".weight"], w[n + ".bias"], 1e-5)
    pe = sinusoids(MAXPOS, D)
    table = F.normalize(w["embed.weight"], dim=-1) if fix_norm else w["embed.weight"]
    embed = lambda t: F.embedding(t, table) * math.sqrt(D) + pe[: t.shape[1]]

    def sub(x, norm, f):
        return x + f(ln(x, norm)) if pre_norm else ln(x + f(x), norm)

    src_mask = (src != PAD)[:, None, None, :]
    t = tgt.shape[1]
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool))[None, None]
    seen = tgt != PAD
    seen[:, 0] = True  # the decoder's start token, pad itself in Marian's models (model/attention.h)
    self_mask = causal & seen[:, None, None, :]

    lin = lambda h, name: F.linear(h, w[name + ".weight"], w[name + ".bias"])
    ffn = lambda h, p: lin(ACTIVATIONS[activation](lin(h, p + "ffn.fc1")), p + "ffn.fc2")

    def self_attn(h, p, mask):
        q, k, v = lin(h, p + "self_attn.in_proj").chunk(3, -1)
        return lin(attention(q, k, v, mask), p + "self_attn.out_proj")

    def cross_attn(h, p):
        k, v = lin(memory, p + "cross_attn.kv_proj").chunk(2, -1)
        return lin(attention(lin(h, p + "cross_attn.q_proj"), k, v, src_mask), p + "cross_attn.out_proj")

    x = embed(src)
    for l in range(ENC):
        p = f"encoder_layers.{l}."
        x = sub(x, p + "norm1", lambda h: self_attn(h, p, src_mask))
        x = sub(x, p + "norm2", lambda h: ffn(h, p))
    memory = ln(x, "encoder_norm") if pre_norm else x

    y = embed(tgt)
    for l in range(DEC):
        p = f"decoder_layers.{l}."
        y = sub(y, p + "norm1", lambda h: self_attn(h, p, self_mask))
        y = sub(y, p + "norm2", lambda h: cross_attn(h, p))
        y = sub(y, p + "norm3", lambda h: ffn(h, p))
    if pre_norm:
        y = ln(y, "decoder_norm")
    logits = y @ table.t() + w["output_bias"] if "output_bias" in w else y @ table.t()
    return logits, src_mask, self_mask


def main():
    gen = torch.Generator().manual_seed(1234)
    src = torch.tensor([[5, 6, 7, 8, 9, 10, 3], [11, 12, 3, 0, 0, 0, 0], [13, 14, 15, 16, 3, 0, 0]])
    tgt = torch.tensor([[2, 17, 18, 19, 20], [2, 21, 0, 0, 0], [2, 22, 5, 6, 0]])
    for pre_norm in (False, True):
        w = make_weights(gen)
        if not pre_norm:
            w = {k: v for k, v in w.items() if not k.startswith(("encoder_norm", "decoder_norm"))}
        with torch.no_grad():
            logits, src_mask, self_mask = forward(w, src, tgt, pre_norm)
        name = "transformer_prenorm.pt" if pre_norm else "transformer_postnorm.pt"
        torch.save({"weights": w, "src": src, "tgt_in": tgt, "logits": logits, "src_mask": src_mask,
                    "self_mask": self_mask, "positions": sinusoids(MAXPOS, D),
                    "config": {"vocab": V, "d_model": D, "heads": H, "ffn_dim": FFN, "encoder_layers": ENC,
                               "decoder_layers": DEC, "pad": PAD, "max_positions": MAXPOS, "pre_norm": int(pre_norm)}},
                   os.path.join(HERE, "fixtures", name))
        print("wrote", name, "max |logit| =", float(logits.abs().max()))
    # model.norm=scale and model.fix_norm, from their own generator so that the fixtures above
    # keep their values: pre-norm with both, and post-norm with ScaleNorm alone.
    gen = torch.Generator().manual_seed(4321)
    for pre_norm, fix_norm, name in ((True, True, "transformer_prenorm_scale_fixnorm.pt"),
                                     (False, False, "transformer_postnorm_scale.pt")):
        w = scale_weights(make_weights(gen), gen)
        if not pre_norm:
            w = {k: v for k, v in w.items() if not k.startswith(("encoder_norm", "decoder_norm"))}
        with torch.no_grad():
            logits, src_mask, self_mask = forward(w, src, tgt, pre_norm, scale_norm=True, fix_norm=fix_norm)
        torch.save({"weights": w, "src": src, "tgt_in": tgt, "logits": logits, "src_mask": src_mask,
                    "self_mask": self_mask, "positions": sinusoids(MAXPOS, D),
                    "config": {"vocab": V, "d_model": D, "heads": H, "ffn_dim": FFN, "encoder_layers": ENC,
                               "decoder_layers": DEC, "pad": PAD, "max_positions": MAXPOS, "pre_norm": int(pre_norm),
                               "norm": "scale", "fix_norm": int(fix_norm)}},
                   os.path.join(HERE, "fixtures", name))
        print("wrote", name, "max |logit| =", float(logits.abs().max()))
    # model.activation and model.output_bias (what Marian / OPUS-MT models bring), from a generator
    # of their own: post-norm with SiLU as OPUS-MT, pre-norm with GELU, both with a logits bias.
    gen = torch.Generator().manual_seed(5678)
    for pre_norm, activation, name in ((False, "silu", "transformer_postnorm_silu_bias.pt"),
                                       (True, "gelu", "transformer_prenorm_gelu_bias.pt")):
        w = make_weights(gen)
        w["output_bias"] = torch.randn(V, generator=gen)
        if not pre_norm:
            w = {k: v for k, v in w.items() if not k.startswith(("encoder_norm", "decoder_norm"))}
        with torch.no_grad():
            logits, src_mask, self_mask = forward(w, src, tgt, pre_norm, activation=activation)
        torch.save({"weights": w, "src": src, "tgt_in": tgt, "logits": logits, "src_mask": src_mask,
                    "self_mask": self_mask, "positions": sinusoids(MAXPOS, D),
                    "config": {"vocab": V, "d_model": D, "heads": H, "ffn_dim": FFN, "encoder_layers": ENC,
                               "decoder_layers": DEC, "pad": PAD, "max_positions": MAXPOS, "pre_norm": int(pre_norm),
                               "activation": activation, "output_bias": 1}},
                   os.path.join(HERE, "fixtures", name))
        print("wrote", name, "max |logit| =", float(logits.abs().max()))


if __name__ == "__main__":
    main()
