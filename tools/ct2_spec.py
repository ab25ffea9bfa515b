"""Our Transformer (model/transformer.cpp, model/attention.cpp) as a CTranslate2
TransformerSpec, through CTranslate2's own converter API: a Converter whose _load()
returns the spec, so validate(), optimize() and save() are CTranslate2's.

What the mapping has to get right (each point read from our C++):
  * post-norm (the paper) or pre-norm, from model.pre_norm; pre-norm adds final
    encoder_norm / decoder_norm, which the spec has only when pre_norm is set;
  * the FFN's ReLU, GELU or SiLU (model.activation); LayerNorm eps 1e-5 (torch::nn::LayerNorm's default);
  * model.norm=scale: ScaleNorm g x / max(||x||, 1e-5) is CTranslate2's RMSNorm
    gamma x / sqrt(mean(x^2) + eps) with every gamma g / sqrt(d) and eps 1e-10 / d, so that
    d * eps = (1e-5)^2: the two agree to float32 rounding except on vectors shorter than about
    1e-5, where both stay finite;
  * model.fix_norm: the tied matrix is written with its rows at unit length, as the model
    uses it in the inputs and the output projection;
  * one embedding matrix for encoder input, decoder input and output projection (tied,
    the logits bias only under model.output_bias), scaled by sqrt(d_model) (CTranslate2's scale_embeddings);
  * sinusoidal positions from 0, pe[p, 2i] = sin, pe[p, 2i+1] = cos (interleaved):
    CTranslate2's built-in table concatenates [sin | cos] and starts at position 1, so
    our table is written into the spec's position_encodings explicitly;
  * attention: self-attention's fused [3d, d] q,k,v matrix and cross-attention's q plus
    fused [2d, d] k,v matrix are exactly CTranslate2's linear[0] / linear[1] layout. Our
    forward multiplies the key slice of those biases by 0 (a key bias cannot change
    softmax, see attention.h), so the export writes that slice as zeros;
  * a multilingual model's data.lang_tag decoder: the decoder starts from the language tag,
    not BOS, so decoder_start_token is null and the caller gives the tag as target_prefix."""
import torch
from ctranslate2.converters.converter import Converter
from ctranslate2.specs import common_spec, transformer_spec

LAYER_NORM_EPS = 1e-5
# model.activation: CTranslate2's GELU is the exact (erf) one, as torch::gelu; SWISH is SiLU.
ACTIVATIONS = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU,
               "silu": common_spec.Activation.SWISH}
SCALE_NORM_EPS = 1e-5


def sinusoidal_positions(max_positions, d_model):
    """model::sinusoidal_positions(), op for op (float64, then float32)."""
    pos = torch.arange(max_positions, dtype=torch.float64).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / float(d_model))
    return torch.stack([torch.sin(angle), torch.cos(angle)], 2).view(max_positions, d_model).float()


def _linear(spec, w, name, bias_mask=None):
    spec.weight = w[name + ".weight"].numpy()
    bias = w[name + ".bias"]
    spec.bias = (bias * bias_mask if bias_mask is not None else bias).numpy()


def _norm(spec, w, name, d):
    if name + ".scale" in w:  # ScaleNorm as an RMSNorm (module docstring): gamma only
        spec.gamma = (w[name + ".scale"].reshape(1) / d ** 0.5).expand(d).contiguous().numpy()
        return
    spec.gamma = w[name + ".weight"].numpy()
    spec.beta = w[name + ".bias"].numpy()


def _key_bias_mask(d, parts):
    """1 for query / value entries, 0 for the key slice: in_bias_mask / kv_bias_mask."""
    return torch.cat([torch.zeros(d) if p == "k" else torch.ones(d) for p in parts])


def _set_layer(layer, w, p, d, decoder):
    _linear(layer.self_attention.linear[0], w, p + "self_attn.in_proj", _key_bias_mask(d, "qkv"))
    _linear(layer.self_attention.linear[1], w, p + "self_attn.out_proj")
    _norm(layer.self_attention.layer_norm, w, p + "norm1", d)
    ffn_norm = "norm2"
    if decoder:
        _linear(layer.attention.linear[0], w, p + "cross_attn.q_proj")
        _linear(layer.attention.linear[1], w, p + "cross_attn.kv_proj", _key_bias_mask(d, "kv"))
        _linear(layer.attention.linear[2], w, p + "cross_attn.out_proj")
        _norm(layer.attention.layer_norm, w, p + "norm2", d)
        ffn_norm = "norm3"
    _linear(layer.ffn.linear_0, w, p + "ffn.fc1")
    _linear(layer.ffn.linear_1, w, p + "ffn.fc2")
    _norm(layer.ffn.layer_norm, w, p + ffn_norm, d)


def build_spec(ckpt, vocab):
    m, w = ckpt.model, ckpt.weights
    spec = transformer_spec.TransformerSpec.from_config(
        (m.encoder_layers, m.decoder_layers), m.heads, pre_norm=m.pre_norm,
        activation=ACTIVATIONS[m.activation], rms_norm=m.norm == "scale")
    positions = sinusoidal_positions(m.max_positions, m.d_model).numpy()
    embed = w["embed.weight"]
    if m.fix_norm:  # model::TransformerImpl::word_vectors()
        embed = embed / embed.norm(dim=1, keepdim=True).clamp_min(1e-12)
    embed = embed.numpy()
    for side, stack in (("encoder", spec.encoder), ("decoder", spec.decoder)):
        embeddings = stack.embeddings[0] if side == "encoder" else stack.embeddings
        embeddings.weight = embed
        stack.scale_embeddings = True  # x * sqrt(d_model), d_model = the embedding width
        stack.position_encodings.encodings = positions
        for i, layer in enumerate(stack.layer):
            _set_layer(layer, w, f"{side}_layers.{i}.", m.d_model, decoder=side == "decoder")
        if m.pre_norm:
            _norm(stack.layer_norm, w, side + "_norm", m.d_model)
    spec.decoder.projection.weight = embed  # tied output projection
    if m.output_bias:  # model.output_bias
        spec.decoder.projection.bias = w["output_bias"].numpy()

    # Our translate: source = pieces + EOS (no BOS); the decoder starts from BOS. Under
    # data.lang_tag decoder it starts from the target language's tag instead: no fixed start
    # token (null), so the first token of translate_batch's target_prefix is the start, as
    # CTranslate2's mBART and fairseq converters do; tools/ct2_translate.py passes [<2tgt>].
    spec.config.add_source_bos = False
    spec.config.add_source_eos = True
    spec.config.decoder_start_token = None if vocab.lang_tag == "decoder" else vocab.piece("bos")
    spec.config.bos_token = vocab.piece("bos")
    spec.config.eos_token = vocab.piece("eos")
    spec.config.unk_token = vocab.piece("unk")
    spec.config.layer_norm_epsilon = SCALE_NORM_EPS ** 2 / m.d_model if m.norm == "scale" else LAYER_NORM_EPS
    spec.register_source_vocabulary(vocab.pieces)
    spec.register_target_vocabulary(vocab.pieces)
    # The SentencePiece model travels with the model, so the directory is all a user needs.
    spec.register_file(vocab.spm_path, "spm.model")
    return spec


class NmtrainConverter(Converter):
    """CTranslate2 converter for one loaded nmtrain checkpoint and its vocabulary."""

    def __init__(self, ckpt, vocab):
        self._ckpt, self._vocab = ckpt, vocab

    def _load(self):
        with torch.no_grad():
            return build_spec(self._ckpt, self._vocab)
