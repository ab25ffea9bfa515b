"""The benchmark model written the way a strong PyTorch user writes it today, for a fair
comparison with our trainer (bench/compare runs both alternately):

  * the Python torch of the same wheel as our LibTorch, the same intra-op threads;
  * post-norm (or, with --pre-norm, pre-norm with a final LayerNorm per stack, as our
    model.pre_norm) encoder-decoder layers on F.scaled_dot_product_attention, nn.Linear,
    nn.LayerNorm, tied embeddings scaled by sqrt(d_model), sinusoidal positions;
  * eager, or under torch.compile (--compile default | max-autotune-no-cudagraphs: inductor
    on the CPU), the first thing a PyTorch user tries for speed. The compile happens in
    the warmup updates; their time is reported apart (warmup_seconds);
  * fp32, or with --precision bf16 the forward under torch.autocast(device, bfloat16), the
    counterpart of train.precision=bf16 (bench/compare passes the config's precision);
  * on the CPU, or with --device cuda on the GPU: batches copied from pinned memory without
    waiting, no host synchronisation inside an update (losses are read after the timing),
    cuDNN's attention off unless --cudnn-sdpa and TF32 matmuls with --tf32, as our
    train.cudnn_sdpa and train.tf32;
  * F.cross_entropy(label_smoothing=..., ignore_index=pad), Adam(fused=True), the same
    inverse_sqrt schedule;
  * the very same micro-batches, read from our HDF5 shards with h5py (plan.json written
    by `train --benchmark N --bench-out DIR`), and the same initial weights (init.pt).

Prints one JSON line: tgt_tokens_per_s, updates_per_s, warmup_seconds, recompiles (graphs
compiled after the warmup, whose time the steady state then includes), per-update losses.
"""
import argparse
import json
import math
import os
import time

import h5py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Shards:
    def __init__(self, shard_dir, split="train"):
        m = json.load(open(os.path.join(shard_dir, "manifest.json")))
        self.special = m["special_ids"]
        self.vocab = m["vocab_size"]
        self.src, self.tgt = [], []
        for entry in m["splits"][split]["shards"]:
            with h5py.File(os.path.join(shard_dir, entry["file"]), "r") as f:
                for side, out in (("src", self.src), ("tgt", self.tgt)):
                    tok, off = f[side + "/tokens"][:], f[side + "/offsets"][:]
                    out.extend(tok[off[i]:off[i + 1]] for i in range(len(off) - 1))

    def batch(self, ids):
        pad, bos, eos = self.special["pad"], self.special["bos"], self.special["eos"]
        n, s_len, t_len = len(ids), max(len(self.src[i]) for i in ids) + 1, max(len(self.tgt[i]) for i in ids) + 1
        src = np.full((n, s_len), pad, np.int64)
        tin = np.full((n, t_len), pad, np.int64)
        tout = np.full((n, t_len), pad, np.int64)
        for r, i in enumerate(ids):
            s, t = self.src[i], self.tgt[i]
            src[r, :len(s)], src[r, len(s)] = s, eos
            tin[r, 0], tin[r, 1:len(t) + 1] = bos, t
            tout[r, :len(t)], tout[r, len(t)] = t, eos
        return torch.from_numpy(src), torch.from_numpy(tin), torch.from_numpy(tout)


def sinusoids(n, d):
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    angle = pos / torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float64) / d)
    return torch.stack([angle.sin(), angle.cos()], 2).view(n, d).float()


class SelfAttention(nn.Module):
    def __init__(self, d, h, p):
        super().__init__()
        self.h, self.p = h, p
        self.in_proj = nn.Linear(d, 3 * d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.in_proj(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.p if self.training else 0.0)
        return self.out_proj(y.transpose(1, 2).reshape(b, t, d))


class CrossAttention(nn.Module):
    def __init__(self, d, h, p):
        super().__init__()
        self.h, self.p = h, p
        self.q_proj = nn.Linear(d, d)
        self.kv_proj = nn.Linear(d, 2 * d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x, memory, mask):
        b, t, d = x.shape
        q = self.q_proj(x).view(b, t, self.h, d // self.h).transpose(1, 2)
        k, v = self.kv_proj(memory).view(b, memory.shape[1], 2, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.p if self.training else 0.0)
        return self.out_proj(y.transpose(1, 2).reshape(b, t, d))


class FFN(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, f), nn.Linear(f, d)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def residual(x, norm, drop, pre_norm, f):
    """x + f(x) with the LayerNorm after the sum (post-norm) or on f's input (pre-norm)."""
    return x + drop(f(norm(x))) if pre_norm else norm(x + drop(f(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d, h, f, p, pre_norm):
        super().__init__()
        self.self_attn, self.ffn, self.pre_norm = SelfAttention(d, h, 0.0), FFN(d, f), pre_norm
        self.norm1, self.norm2, self.drop = nn.LayerNorm(d), nn.LayerNorm(d), nn.Dropout(p)

    def forward(self, x, mask):
        x = residual(x, self.norm1, self.drop, self.pre_norm, lambda h: self.self_attn(h, mask))
        return residual(x, self.norm2, self.drop, self.pre_norm, self.ffn)


class DecoderLayer(nn.Module):
    def __init__(self, d, h, f, p, pre_norm):
        super().__init__()
        self.self_attn, self.cross_attn, self.ffn = SelfAttention(d, h, 0.0), CrossAttention(d, h, 0.0), FFN(d, f)
        self.norm1, self.norm2, self.norm3, self.drop = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d), nn.Dropout(p)
        self.pre_norm = pre_norm

    def forward(self, x, memory, self_mask, mem_mask):
        x = residual(x, self.norm1, self.drop, self.pre_norm, lambda h: self.self_attn(h, self_mask))
        x = residual(x, self.norm2, self.drop, self.pre_norm, lambda h: self.cross_attn(h, memory, mem_mask))
        return residual(x, self.norm3, self.drop, self.pre_norm, self.ffn)


class Transformer(nn.Module):
    def __init__(self, vocab, d, h, f, enc, dec, p, pad, pre_norm):
        super().__init__()
        self.d, self.pad, self.drop = d, pad, nn.Dropout(p)
        self.embed = nn.Embedding(vocab, d)
        self.encoder_layers = nn.ModuleList(EncoderLayer(d, h, f, p, pre_norm) for _ in range(enc))
        self.decoder_layers = nn.ModuleList(DecoderLayer(d, h, f, p, pre_norm) for _ in range(dec))
        # Pre-norm stacks end with a LayerNorm each (model.pre_norm's encoder_norm/decoder_norm).
        self.encoder_norm = nn.LayerNorm(d) if pre_norm else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d) if pre_norm else nn.Identity()
        self.register_buffer("positions", sinusoids(1024, d), persistent=False)

    def emb(self, t):
        return self.drop(self.embed(t) * math.sqrt(self.d) + self.positions[: t.shape[1]])

    def forward(self, src, tgt):
        src_mask = (src != self.pad)[:, None, None, :]
        t = tgt.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool, device=tgt.device).tril()
        self_mask = causal[None, None] & (tgt != self.pad)[:, None, None, :]
        x = self.emb(src)
        for layer in self.encoder_layers:
            x = layer(x, src_mask)
        x = self.encoder_norm(x)
        y = self.emb(tgt)
        for layer in self.decoder_layers:
            y = layer(y, x, self_mask, src_mask)
        return self.decoder_norm(y) @ self.embed.weight.t()


def graphs_compiled():
    """Frames TorchDynamo has compiled so far in this process (0 in eager)."""
    from torch._dynamo.utils import counters
    return counters["stats"]["unique_graphs"]


def profiler(device):
    """torch.profiler over CPU operators, and CUDA kernels on a GPU: what train --profile records."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return torch.profiler.profile(activities=activities, record_shapes=True)


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shard-dir", required=True)
    ap.add_argument("--bench-out", required=True, help="directory with init.pt and plan.json from train --benchmark")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--updates", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=3, help="encoder layers")
    ap.add_argument("--decoder-layers", type=int, default=None, help="decoder layers (default: --layers)")
    ap.add_argument("--pre-norm", action="store_true")
    ap.add_argument("--compile", choices=("none", "default", "max-autotune-no-cudagraphs"), default="none")
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                    help="bf16: the forward under torch.autocast(device, bfloat16), as train.precision=bf16")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--tf32", action="store_true", help="CUDA: fp32 matmuls may use TF32 (train.tf32)")
    ap.add_argument("--cudnn-sdpa", action="store_true", help="CUDA: allow cuDNN's attention (train.cudnn_sdpa)")
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup-updates", type=int, default=800)
    ap.add_argument("--profile", help="record the timed updates with torch.profiler; write a Chrome trace here")
    a = ap.parse_args()
    if a.updates < 1 or a.warmup < 0:
        ap.error(f"--updates must be at least 1 and --warmup at least 0 (got {a.updates} and {a.warmup})")
    return a


def load_model(a, data, device):
    """The model as train --benchmark initialised it (init.pt), on the device, and the callable the loop runs."""
    model = Transformer(data.vocab, a.d_model, a.heads, a.ffn, a.layers, a.decoder_layers or a.layers, a.dropout,
                        data.special["pad"], a.pre_norm)
    init = torch.load(os.path.join(a.bench_out, "init.pt"), weights_only=True)["model"]
    model.load_state_dict(init, strict=True)
    model.to(device).train()
    forward = model if a.compile == "none" else torch.compile(model, mode=a.compile)
    return model, forward


def one_update(a, data, device, forward, opt, micro, u):
    """One update of plan.json's micro-batches at the warmup schedule's rate: returns (loss tensor, target tokens)."""
    pad = data.special["pad"]
    lr = a.lr * min((u + 1) / a.warmup_updates, math.sqrt(a.warmup_updates / (u + 1)))
    for g in opt.param_groups:
        g["lr"] = lr
    batches = [data.batch(ids) for ids in micro if ids]
    total = sum(int((tout != pad).sum()) for _, _, tout in batches)  # counted on the host: no sync
    if a.device == "cuda":
        batches = [tuple(t.pin_memory().to(device, non_blocking=True) for t in b) for b in batches]
    loss_sum = 0.0
    for src, tin, tout in batches:
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            logits = forward(src, tin)
        loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tout.view(-1), ignore_index=pad,
                               label_smoothing=a.label_smoothing, reduction="sum")
        (loss / total).backward()
        loss_sum = loss_sum + loss.detach()
    opt.step()
    opt.zero_grad(set_to_none=False)
    return loss_sum / total, total


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    device = torch.device(a.device)
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = a.tf32
        torch.backends.cuda.enable_cudnn_sdp(a.cudnn_sdpa)
    data = Shards(a.shard_dir)
    model, forward = load_model(a, data, device)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-9, fused=True)
    plan = json.load(open(os.path.join(a.bench_out, "plan.json")))
    assert len(plan) >= a.warmup + a.updates, "plan.json has fewer updates than asked for"
    losses, tgt_tokens, start, began = [], 0, None, time.perf_counter()
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    for u, micro in enumerate(plan[: a.warmup + a.updates]):
        if u == a.warmup:
            sync()
            start, tgt_tokens, compiled = time.perf_counter(), 0, graphs_compiled()
            if a.profile:
                recording = profiler(a.device)
                recording.__enter__()
        loss, total = one_update(a, data, device, forward, opt, micro, u)
        losses.append(loss)
        tgt_tokens += total
    sync()
    secs = time.perf_counter() - start
    if a.profile:
        recording.__exit__(None, None, None)
        recording.export_chrome_trace(a.profile)
    losses = [float(x) for x in losses]
    print(json.dumps({"tgt_tokens_per_s": tgt_tokens / secs, "updates_per_s": a.updates / secs, "seconds": secs,
                      "warmup_seconds": start - began, "recompiles": graphs_compiled() - compiled,
                      "compile": a.compile, "precision": a.precision, "device": a.device, "threads": a.threads,
                      "losses": losses}))


if __name__ == "__main__":
    main()
