"""Reads an nmtrain checkpoint (checkpoint/checkpoint.h) for the Python tools:
torch.load(weights_only=True), the `<file>.sha256` sidecar, the fields, and the model
configuration the run was trained with (the resolved YAML stored in the checkpoint).
Every refusal is a BadInput with one line that names the file and what is wrong."""
import hashlib
import os
import pickle
from dataclasses import dataclass

import yaml

FORMAT_VERSION = 1  # checkpoint::kCheckpointFormatVersion
REQUIRED_FIELDS = ("format_version", "model", "config", "vocab_sha256")
ACTIVATIONS = ("relu", "gelu", "silu")  # model::Activation


class BadInput(Exception):
    """Input the tool refuses (exit 2, like the C++ executables' kExitBadInput)."""


@dataclass
class ModelConfig:
    """model::ModelConfig plus the vocabulary size the embedding matrix has."""
    vocab_size: int
    d_model: int
    ffn_dim: int
    heads: int
    encoder_layers: int
    decoder_layers: int
    pre_norm: bool
    max_positions: int
    norm: str = "layer"     # model.norm: layer | scale (model/norm.h)
    fix_norm: bool = False  # model.fix_norm: the tied matrix's rows used at unit length
    activation: str = "relu"  # model.activation: relu | gelu | silu (the FFN's)
    output_bias: bool = False  # model.output_bias: a learned [vocab] bias on the logits


@dataclass
class Checkpoint:
    path: str
    weights: dict      # parameter name -> float tensor (checkpoint "model")
    config: dict       # the resolved YAML of the run, parsed
    vocab_sha256: str  # SHA-256 of the SentencePiece model it was trained with
    model: ModelConfig


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check_sidecar(path):
    # Same rule as load_checkpoint(): a sidecar that exists must match, so a truncated or
    # corrupt file is named as such instead of failing somewhere inside the unpickler.
    sidecar = path + ".sha256"
    if not os.path.exists(sidecar):
        return
    try:
        with open(sidecar, encoding="utf-8") as f:
            want = f.read().split()[:1]
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"{sidecar}: not a readable checksum file ({type(e).__name__}); remove it or restore it "
                       f"beside {path}") from None
    if [sha256_file(path)] != want:
        raise BadInput(f"{path}: checksum differs from {sidecar} (corrupt or truncated checkpoint)")


def _model_config(path, config, weights):
    section = config.get("model") if isinstance(config, dict) else None
    if not isinstance(section, dict):
        raise BadInput(f"{path}: field 'config' has no model section (not an nmtrain checkpoint?)")
    values = {}
    for key, kind in (("d_model", int), ("ffn_dim", int), ("heads", int), ("encoder_layers", int),
                      ("decoder_layers", int), ("pre_norm", bool), ("max_positions", int)):
        if not isinstance(section.get(key), kind):
            raise BadInput(f"{path}: config key 'model.{key}' is missing or not {kind.__name__}")
        values[key] = section[key]
    # Keys added later: a checkpoint written before them has the defaults they were added with.
    values["norm"] = section.get("norm", "layer")
    if values["norm"] not in ("layer", "scale"):
        raise BadInput(f"{path}: config key 'model.norm' is {values['norm']!r}, not layer or scale")
    values["fix_norm"] = section.get("fix_norm", False)
    if not isinstance(values["fix_norm"], bool):
        raise BadInput(f"{path}: config key 'model.fix_norm' is not bool")
    values["activation"] = section.get("activation", "relu")
    if values["activation"] not in ACTIVATIONS:
        raise BadInput(f"{path}: config key 'model.activation' is {values['activation']!r}, not one of "
                       f"{', '.join(ACTIVATIONS)}")
    values["output_bias"] = section.get("output_bias", False)
    if not isinstance(values["output_bias"], bool):
        raise BadInput(f"{path}: config key 'model.output_bias' is not bool")
    m = ModelConfig(vocab_size=0, **values)
    embed = weights.get("embed.weight")
    if embed is None or embed.dim() != 2 or embed.shape[1] != m.d_model:
        raise BadInput(f"{path}: parameter 'embed.weight' is missing or not [vocab, model.d_model = {m.d_model}]")
    m.vocab_size = int(embed.shape[0])
    return m


def expected_shapes(m):
    """Parameter name -> shape of model/transformer.cpp's Transformer for config `m`."""
    d, f = m.d_model, m.ffn_dim
    shapes = {"embed.weight": (m.vocab_size, d)}
    if m.output_bias:
        shapes["output_bias"] = (m.vocab_size,)

    def linear(name, out, inp):
        shapes[name + ".weight"], shapes[name + ".bias"] = (out, inp), (out,)

    def norm(name):
        if m.norm == "scale":
            shapes[name + ".scale"] = (1,)
        else:
            shapes[name + ".weight"], shapes[name + ".bias"] = (d,), (d,)

    for side, count in (("encoder", m.encoder_layers), ("decoder", m.decoder_layers)):
        for i in range(count):
            p = f"{side}_layers.{i}."
            linear(p + "self_attn.in_proj", 3 * d, d)
            linear(p + "self_attn.out_proj", d, d)
            if side == "decoder":
                linear(p + "cross_attn.q_proj", d, d)
                linear(p + "cross_attn.kv_proj", 2 * d, d)
                linear(p + "cross_attn.out_proj", d, d)
            linear(p + "ffn.fc1", f, d)
            linear(p + "ffn.fc2", d, f)
            for n in ("norm1", "norm2") + (("norm3",) if side == "decoder" else ()):
                norm(p + n)
        if m.pre_norm:
            norm(side + "_norm")
    return shapes


def _check_weights(path, m, weights):
    # The same refusals as load_model_weights(): every name present, none extra, shapes equal.
    want = expected_shapes(m)
    for name in weights:
        if name not in want:
            raise BadInput(f"{path}: parameter '{name}' does not exist in the model its config describes")
    for name, shape in want.items():
        if name not in weights:
            raise BadInput(f"{path}: lacks parameter '{name}' of the model its config describes")
        if tuple(weights[name].shape) != shape:
            raise BadInput(f"{path}: parameter '{name}' has shape {list(weights[name].shape)} but the model "
                           f"its config describes needs {list(shape)}")


def load(path):
    import torch  # imported here, not at the top: a tool's refusals before it reads a checkpoint need no torch
    if os.path.isdir(path):
        raise BadInput(f"{path}: is a directory, not a checkpoint file (give a .pt file, e.g. "
                       f"{os.path.join(path, 'last.pt')})")
    if not os.path.isfile(path):
        raise BadInput(f"{path}: checkpoint does not exist or cannot be read")
    _check_sidecar(path)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"PK\x03\x04":  # torch::pickle_save, like torch.save, writes a zip archive
        raise BadInput(f"{path}: not a readable nmtrain checkpoint (not a zip archive, as our trainer writes)")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise BadInput(f"{path}: not an nmtrain checkpoint (it holds Python objects that "
                       "torch.load(weights_only=True) refuses; ours hold dicts of tensors, numbers and strings)") from None
    except Exception as e:
        first = str(e).strip().split(". ")[0].splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"{path}: not a readable nmtrain checkpoint (corrupt or truncated? {first[:100]})") from None
    if not isinstance(ckpt, dict):
        raise BadInput(f"{path}: not an nmtrain checkpoint (holds a {type(ckpt).__name__}, not a dict)")
    for field in REQUIRED_FIELDS:
        if field not in ckpt:
            raise BadInput(f"{path}: not an nmtrain checkpoint (no field '{field}')")
    if ckpt["format_version"] != FORMAT_VERSION:
        raise BadInput(f"{path}: field 'format_version' is {ckpt['format_version']}, expected {FORMAT_VERSION}")
    weights = ckpt["model"]
    if not isinstance(weights, dict) or not all(isinstance(v, torch.Tensor) for v in weights.values()):
        raise BadInput(f"{path}: field 'model' is not a dict of tensors")
    if not isinstance(ckpt["config"], str) or not isinstance(ckpt["vocab_sha256"], str):
        raise BadInput(f"{path}: field 'config' or 'vocab_sha256' is not a string")
    try:
        config = yaml.safe_load(ckpt["config"])
    except yaml.YAMLError:
        raise BadInput(f"{path}: field 'config' is not YAML") from None
    m = _model_config(path, config, weights)
    _check_weights(path, m, weights)
    return Checkpoint(path=path, weights={k: v.float() for k, v in weights.items()}, config=config,
                      vocab_sha256=ckpt["vocab_sha256"], model=m)
