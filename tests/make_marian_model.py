"""Writes a Marian-layout transformers model directory as OPUS-MT publishes one, with random
weights: MarianMTModel from Helsinki-NLP/opus-mt-de-en's config.json (post-norm, SiLU ("swish"),
scaled embeddings, static [sin | cos] positions, tied embeddings, final_logits_bias), scaled
down, plus MarianTokenizer's files. No OPUS-MT weights can be downloaded here, so the test
builds this one. Every weight is random and non-zero, key biases and final_logits_bias included
(our import drops the key bias: softmax cancels it).

Two tokenizers:
  --opus SRC_TEXT TGT_TEXT: OPUS-MT's own layout. A SentencePiece model per side trained on the
      given lines (source.spm, target.spm, SentencePiece's default ids), one vocab.json joining
      their pieces as Marian does ("</s>" 0, "<unk>" 1, the pieces, "<pad>" last), config.json's
      eos 0, pad the last id and the decoder's start token pad;
  --aligned SPM_MODEL MANIFEST: one SentencePiece model of ours as both .spm files, vocab.json
      its own ids, config.json its pad, EOS and (as decoder start) BOS.

  make_marian_model.py OUT_DIR (--opus SRC_TEXT TGT_TEXT | --aligned SPM_MODEL MANIFEST) [--seed N]
"""
import argparse
import json
import os
import shutil

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


def opus_tokenizer(out, src_text, tgt_text):
    """Two SentencePiece models and Marian's joint vocab.json; returns (vocab, special ids)."""
    for side, text in (("source", src_text), ("target", tgt_text)):
        sentencepiece.SentencePieceTrainer.train(input=text, model_prefix=os.path.join(out, side), vocab_size=32,
                                                 hard_vocab_limit=False, character_coverage=1.0, minloglevel=2)
        os.replace(os.path.join(out, side + ".model"), os.path.join(out, side + ".spm"))
        os.remove(os.path.join(out, side + ".vocab"))
    vocab = {"</s>": 0, "<unk>": 1}
    for side in ("source", "target"):
        sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(out, side + ".spm"))
        for i in range(sp.get_piece_size()):
            if not (sp.is_control(i) or sp.is_unknown(i)):
                vocab.setdefault(sp.id_to_piece(i), len(vocab))
    vocab["<pad>"] = len(vocab)
    return vocab, {"eos": 0, "unk": 1, "pad": vocab["<pad>"], "start": vocab["<pad>"]}


def aligned_tokenizer(out, spm_path, manifest_path):
    special = json.load(open(manifest_path))["special_ids"]
    for name in ("source.spm", "target.spm"):
        shutil.copyfile(spm_path, os.path.join(out, name))
    sp = sentencepiece.SentencePieceProcessor(model_file=spm_path)
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    return vocab, {"eos": special["eos"], "unk": special["unk"], "pad": special["pad"], "start": special["bos"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--opus", nargs=2, metavar=("SRC_TEXT", "TGT_TEXT"))
    p.add_argument("--aligned", nargs=2, metavar=("SPM_MODEL", "MANIFEST"))
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    vocab, ids = opus_tokenizer(args.out, *args.opus) if args.opus else aligned_tokenizer(args.out, *args.aligned)
    pieces = {i: piece for piece, i in vocab.items()}
    size = len(vocab)
    config = dict(OPUS_MT_DE_EN, **SCALED, vocab_size=size, decoder_vocab_size=size, pad_token_id=ids["pad"],
                  eos_token_id=ids["eos"], forced_eos_token_id=ids["eos"], bos_token_id=ids["eos"],
                  decoder_start_token_id=ids["start"], bad_words_ids=[[ids["pad"]]])
    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(args.seed)
    model = transformers.MarianMTModel(transformers.MarianConfig(**config)).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith(".bias"):
                param.normal_(0, 0.1)  # key biases too: our import drops them
            elif "layer_norm" in name:
                param.normal_(1, 0.1)
        model.final_logits_bias.normal_(0, 0.5)
    model.save_pretrained(args.out)
    with open(os.path.join(args.out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    tokenizer = transformers.MarianTokenizer(os.path.join(args.out, "source.spm"), os.path.join(args.out, "target.spm"),
                                             os.path.join(args.out, "vocab.json"), unk_token=pieces[ids["unk"]],
                                             eos_token=pieces[ids["eos"]], pad_token=pieces[ids["pad"]])
    tokenizer.save_pretrained(args.out)
    print(f"make_marian_model: wrote {args.out}: MarianMTModel, {size} pieces ({'OPUS-MT layout' if args.opus else 'aligned'}"
          f"), d_model {SCALED['d_model']}, {SCALED['encoder_layers']}+{SCALED['decoder_layers']} layers, swish")


if __name__ == "__main__":
    main()
