"""Our Transformer (model/transformer.cpp, model/attention.cpp) as a stock Hugging Face
`transformers` model, parameter by parameter, both ways (export_hf.py; the table is one, so
export then import gives the same tensors back, bit for bit).

Which class. The stock encoder-decoders whose layers are ours are Marian's and Pegasus's: the
same attention, a ReLU / GELU / SiLU FFN, LayerNorm (eps 1e-5), embeddings scaled by
sqrt(d_model) and tied to the output projection, an output bias (final_logits_bias), and a
fixed sinusoidal table from position 0. They differ only where our model.pre_norm does:
  * post-norm (the paper): MarianMTModel, norm(x + f(x)) in every sublayer, no final norms;
  * pre-norm: PegasusForConditionalGeneration, x + f(norm(x)), and a final LayerNorm after each
    stack, as our encoder_norm / decoder_norm.
(M2M100 and NLLB are pre-norm too, but their positions start at pad_id + 1 and their
embedding scale is a separate module; BART adds a LayerNorm on the embeddings.) Both classes
load with AutoModelForSeq2SeqLM and run in pipeline("translation") with no custom code.

What the table has to get right:
  * positions: ours interleave pe[p, 2i] = sin, pe[p, 2i+1] = cos; theirs put the sines in the
    first half of the features and the cosines in the second. Permuting the model's feature
    axis (the residual stream: our feature FEATURE_ORDER[k] is their feature k) turns one into
    the other exactly: every matrix that reads the stream has its columns permuted, every one
    that writes it its rows and bias, and each norm its weight and bias; the tied embedding's
    columns too, so the logits, h . e, are the same sums in another order. Attention's heads
    and the FFN's hidden layer are not the stream and keep their order;
  * fused projections: our self-attention's [3d, d] q,k,v matrix is their q_proj, k_proj,
    v_proj, in that order; our cross-attention's [2d, d] k,v matrix their k_proj, v_proj;
  * the key bias: our forward multiplies it by 0 (a key bias cannot change the softmax,
    attention.h), so it is exported as zeros and imported as zeros: theirs may hold anything;
  * FixNorm (model.fix_norm): the tied matrix is exported with its rows at unit length, as the
    model uses it; ScaleNorm has no stock equivalent and is refused by the caller;
  * model.activation is their activation_function, model.output_bias their final_logits_bias.
The import (checkpoint/hf_import.cpp) reads this table back in C++; tests/hf_import.sh checks
that export then import gives every tensor back bit for bit."""
import torch

PEGASUS, MARIAN = "pegasus", "marian"


def hf_model_type(pre_norm):
    return PEGASUS if pre_norm else MARIAN


def feature_order(d_model):
    """Our feature index of each of their features: [0, 2, 4, ..., 1, 3, 5, ...]."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def sinusoidal_positions(max_positions, d_model):
    """model::sinusoidal_positions(), op for op (float64, then float32)."""
    pos = torch.arange(max_positions, dtype=torch.float64).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / float(d_model))
    return torch.stack([torch.sin(angle), torch.cos(angle)], 2).view(max_positions, d_model).float()


# How a tensor's axes meet the residual stream, which the permutation reorders:
READS = "reads"    # a weight [out, d] whose input is the stream: columns
WRITES = "writes"  # a weight [d, in] or bias [d] whose output is the stream: rows
VECTOR = "vector"  # a norm's weight or bias [d]
KEEPS = "keeps"    # a bias of an internal axis (attention's q, k, v; the FFN's hidden layer)
TABLE = "table"    # [rows, d]: the embedding, the positions: columns


def _linear(rows, ours, theirs, reads, writes, row_slice=None):
    rows.append((ours + ".weight", row_slice, theirs + ".weight", READS if reads else WRITES))
    rows.append((ours + ".bias", row_slice, theirs + ".bias", WRITES if writes else KEEPS))


def _norm(rows, ours, theirs):
    rows.append((ours + ".weight", None, theirs + ".weight", VECTOR))
    rows.append((ours + ".bias", None, theirs + ".bias", VECTOR))


def _attention(rows, ours, theirs, d, fused_names):
    """q, k, v (+ out) of one attention: `fused_names` maps each of our fused matrices to
    the stock projections it holds, in row order."""
    for fused, parts in fused_names:
        for i, part in enumerate(parts):
            _linear(rows, f"{ours}.{fused}", f"{theirs}.{part}_proj", reads=True, writes=False,
                    row_slice=(i * d, (i + 1) * d))
    _linear(rows, ours + ".out_proj", theirs + ".out_proj", reads=False, writes=True)


def parameter_table(m):
    """[(our name, our row slice or None, their name, kind)] for every parameter of model
    config `m` (nmtrain_checkpoint.ModelConfig) but the embedding and positions."""
    d, rows = m.d_model, []
    for side, count in (("encoder", m.encoder_layers), ("decoder", m.decoder_layers)):
        for i in range(count):
            ours, theirs = f"{side}_layers.{i}", f"model.{side}.layers.{i}"
            _attention(rows, ours + ".self_attn", theirs + ".self_attn", d, [("in_proj", "qkv")])
            _norm(rows, ours + ".norm1", theirs + ".self_attn_layer_norm")
            ffn_norm = ours + ".norm2"
            if side == "decoder":
                _attention(rows, ours + ".cross_attn", theirs + ".encoder_attn", d, [("q_proj", "q"), ("kv_proj", "kv")])
                _norm(rows, ours + ".norm2", theirs + ".encoder_attn_layer_norm")
                ffn_norm = ours + ".norm3"
            _linear(rows, ours + ".ffn.fc1", theirs + ".fc1", reads=True, writes=False)
            _linear(rows, ours + ".ffn.fc2", theirs + ".fc2", reads=False, writes=True)
            _norm(rows, ffn_norm, theirs + ".final_layer_norm")
        if m.pre_norm:
            _norm(rows, side + "_norm", f"model.{side}.layer_norm")
    return rows


def _is_key_bias(our_name, row_slice, d):
    """The key slice of a fused projection's bias (attention.h: multiplied by 0 in the forward)."""
    if not our_name.endswith(".bias") or row_slice is None:
        return False
    key_start = d if our_name.endswith("in_proj.bias") else 0 if our_name.endswith("kv_proj.bias") else None
    return row_slice[0] == key_start


def _to_theirs(t, kind, order):
    if kind == READS or kind == TABLE:
        return t[:, order]
    if kind in (WRITES, VECTOR):
        return t[order]
    return t


def export_state(weights, m):
    """Their state dict (float32, contiguous) for our weights `weights` (name -> tensor)."""
    order = feature_order(m.d_model)
    state = {}
    for ours, row_slice, theirs, kind in parameter_table(m):
        t = weights[ours] if row_slice is None else weights[ours][row_slice[0]:row_slice[1]]
        if _is_key_bias(ours, row_slice, m.d_model):
            t = torch.zeros_like(t)
        state[theirs] = _to_theirs(t, kind, order).contiguous()
    embed = weights["embed.weight"]
    if m.fix_norm:  # model::TransformerImpl::word_vectors()
        embed = embed / embed.norm(dim=1, keepdim=True).clamp_min(1e-12)
    state["model.shared.weight"] = _to_theirs(embed, TABLE, order).contiguous()
    positions = _to_theirs(sinusoidal_positions(m.max_positions, m.d_model), TABLE, order).contiguous()
    state["model.encoder.embed_positions.weight"] = positions
    state["model.decoder.embed_positions.weight"] = positions.clone()
    bias = weights["output_bias"] if m.output_bias else torch.zeros(m.vocab_size)
    state["final_logits_bias"] = bias.reshape(1, m.vocab_size).float().contiguous()
    return state


def hf_config(m, training, special):
    """The keyword arguments of their config class for model config `m`: the run's dropout
    settings `training` (our model section), special ids `special` (pad, bos, eos, unk)."""
    return dict(
        vocab_size=m.vocab_size, d_model=m.d_model, max_position_embeddings=m.max_positions,
        encoder_layers=m.encoder_layers, decoder_layers=m.decoder_layers,
        encoder_attention_heads=m.heads, decoder_attention_heads=m.heads,
        encoder_ffn_dim=m.ffn_dim, decoder_ffn_dim=m.ffn_dim, activation_function=m.activation,
        dropout=float(training.get("dropout", 0.1)), attention_dropout=float(training.get("attention_dropout", 0.0)),
        activation_dropout=float(training.get("activation_dropout", 0.0)),
        encoder_layerdrop=float(training.get("encoder_layerdrop", 0.0)),
        decoder_layerdrop=float(training.get("decoder_layerdrop", 0.0)),
        scale_embedding=True, tie_word_embeddings=True,
        pad_token_id=special["pad"], eos_token_id=special["eos"], bos_token_id=special["bos"],
        decoder_start_token_id=special["bos"], forced_eos_token_id=special["eos"],
        **({"share_encoder_decoder_embeddings": True, "decoder_vocab_size": m.vocab_size}
           if hf_model_type(m.pre_norm) == MARIAN else {}))
