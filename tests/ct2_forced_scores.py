"""Forced decoding through an export: CTranslate2's score_batch gives each reference token's
log-probability, and so does the PyTorch reference forward of tests/make_model_fixtures.py (the
one the C++ model is tested against) on the checkpoint's weights. They must agree to 1e-4 on
every token. Beam search cannot show this alone: the two searches remove pad and BOS at
different points, which moves hypotheses' scores by those tokens' probability.

  ct2_forced_scores.py CHECKPOINT EXPORT_DIR SPM_MODEL SOURCES REFERENCES MANIFEST [source|decoder TAG]

A multilingual export (data.lang_tag source or decoder) adds where its language tag goes and the
tag: in front of every source, or as the decoder's first token in place of BOS (given to
CTranslate2 as the target's first token: the export has no fixed decoder_start_token).
"""
import functools
import json
import os
import sys

import ctranslate2
import sentencepiece
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import make_model_fixtures as reference  # noqa: E402
import nmtrain_checkpoint  # noqa: E402

TOLERANCE = 1e-4


def main():
    ckpt_path, export, spm_path, src_path, ref_path, manifest_path = sys.argv[1:7]
    ckpt = nmtrain_checkpoint.load(ckpt_path)
    m = ckpt.model
    special = json.load(open(manifest_path))["special_ids"]
    reference.D, reference.H, reference.PAD = m.d_model, m.heads, special["pad"]
    reference.ENC, reference.DEC, reference.MAXPOS = m.encoder_layers, m.decoder_layers, m.max_positions
    reference.sinusoids = functools.lru_cache(maxsize=None)(reference.sinusoids)  # one table, not one a call
    sp = sentencepiece.SentencePieceProcessor(model_file=spm_path)
    translator = ctranslate2.Translator(export, device="cpu", intra_threads=1)
    sources = open(src_path, encoding="utf-8").read().splitlines()
    targets = open(ref_path, encoding="utf-8").read().splitlines()
    where, tag = sys.argv[7:9] if len(sys.argv) > 8 else (None, None)
    prefix = [sp.piece_to_id(tag)] if where == "source" else []
    start = sp.piece_to_id(tag) if where == "decoder" else special["bos"]
    worst, tokens = 0.0, 0
    for src, tgt in zip(sources, targets):
        src_ids, tgt_ids = prefix + sp.encode(src) + [special["eos"]], sp.encode(tgt) + [special["eos"]]
        with torch.no_grad():
            logits, _, _ = reference.forward(ckpt.weights, torch.tensor([src_ids]),
                                             torch.tensor([[start] + tgt_ids[:-1]]), m.pre_norm,
                                             scale_norm=m.norm == "scale", fix_norm=m.fix_norm,
                                             activation=m.activation)
        ours = torch.log_softmax(logits[0], -1)[torch.arange(len(tgt_ids)), torch.tensor(tgt_ids)]
        # The export adds the source's EOS and the target's EOS itself (tools/ct2_spec.py).
        target = ([tag] if where == "decoder" else []) + sp.id_to_piece(tgt_ids[:-1])
        theirs = translator.score_batch([sp.id_to_piece(src_ids[:-1])], [target])[0].log_probs
        assert len(theirs) == len(tgt_ids), (len(theirs), len(tgt_ids))
        worst = max(worst, float((torch.tensor(theirs) - ours).abs().max()))
        tokens += len(tgt_ids)
    good = worst <= TOLERANCE
    print(f"{'ok' if good else 'FAIL'}: {export}: forced scores of {len(sources)} references ({tokens} tokens): "
          f"largest |CTranslate2 - reference| {worst:.2e} (need <= {TOLERANCE:.0e})")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
