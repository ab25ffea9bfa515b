"""Writes a Marian-layout transformers model directory as OPUS-MT publishes one, with random
weights: MarianMTModel from Helsinki-NLP/opus-mt-de-en's config.json (post-norm, SiLU ("swish"),
scaled embeddings, static [sin | cos] positions, tied embeddings, final_logits_bias), scaled
down, plus MarianTokenizer's files (source.spm, target.spm, one shared vocab.json). No OPUS-MT
weights can be downloaded here, so the test builds this one.

The tokenizer is a SentencePiece model trained on a few thousand lines (given), and vocab.json
gives each piece its SentencePiece id, with config.json's special ids the model's own pad,
EOS and, as the decoder's start, BOS. Every weight is random and non-zero, key biases and
final_logits_bias included (our import drops the key bias: softmax cancels it).

  make_marian_model.py SPM_MODEL MANIFEST OUT_DIR [SEED]
"""
import json
import os
import shutil
import sys

import sentencepiece
import torch
import transformers

# Helsinki-NLP/opus-mt-de-en's config.json (transformers 4.22 conversion), as published.
OPUS_MT_DE_EN = {
    "activation_dropout": 0.0, "activation_function": "swish", "add_bias_logits": False,
    "add_final_layer_norm": False, "architectures": ["MarianMTModel"], "attention_dropout": 0.0,
    "bad_words_ids": [[58100]], "bos_token_id": 0, "classif_dropout": 0.0, "classifier_dropout": 0.0,
    "d_model": 512, "decoder_attention_heads": 8, "decoder_ffn_dim": 2048, "decoder_layerdrop": 0.0,
    "decoder_layers": 6, "decoder_start_token_id": 58100, "decoder_vocab_size": 58101, "dropout": 0.1,
    "encoder_attention_heads": 8, "encoder_ffn_dim": 2048, "encoder_layerdrop": 0.0, "encoder_layers": 6,
    "eos_token_id": 0, "forced_eos_token_id": 0, "init_std": 0.02, "is_encoder_decoder": True, "max_length": 512,
    "max_position_embeddings": 512, "model_type": "marian", "normalize_before": False, "normalize_embedding": False,
    "num_beams": 4, "num_hidden_layers": 6, "pad_token_id": 58100, "scale_embedding": True,
    "share_encoder_decoder_embeddings": True, "static_position_embeddings": True, "use_cache": True,
    "vocab_size": 58101}
SCALED = {"d_model": 32, "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 64,
          "decoder_ffn_dim": 64, "encoder_layers": 2, "decoder_layers": 2, "num_hidden_layers": 2,
          "max_position_embeddings": 256, "max_length": 256}


def main():
    spm_path, manifest_path, out = sys.argv[1:4]
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    special = json.load(open(manifest_path))["special_ids"]
    sp = sentencepiece.SentencePieceProcessor(model_file=spm_path)
    size = sp.get_piece_size()
    config = dict(OPUS_MT_DE_EN, **SCALED, vocab_size=size, decoder_vocab_size=size, pad_token_id=special["pad"],
                  eos_token_id=special["eos"], forced_eos_token_id=special["eos"], bos_token_id=special["bos"],
                  decoder_start_token_id=special["bos"], bad_words_ids=[[special["pad"]]])
    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(seed)
    model = transformers.MarianMTModel(transformers.MarianConfig(**config)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0, 0.1)  # key biases too: our import drops them
            elif "layer_norm" in name:
                p.normal_(1, 0.1)
        model.final_logits_bias.normal_(0, 0.5)
    model.save_pretrained(out)
    for name in ("source.spm", "target.spm"):
        shutil.copyfile(spm_path, os.path.join(out, name))
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({sp.id_to_piece(i): i for i in range(size)}, f, ensure_ascii=False)
    tokenizer = transformers.MarianTokenizer(os.path.join(out, "source.spm"), os.path.join(out, "target.spm"),
                                             os.path.join(out, "vocab.json"), unk_token=sp.id_to_piece(special["unk"]),
                                             eos_token=sp.id_to_piece(special["eos"]),
                                             pad_token=sp.id_to_piece(special["pad"]))
    tokenizer.save_pretrained(out)
    print(f"make_marian_model: wrote {out}: MarianMTModel, {size} pieces, d_model {SCALED['d_model']}, "
          f"{SCALED['encoder_layers']}+{SCALED['decoder_layers']} layers, swish")


if __name__ == "__main__":
    main()
