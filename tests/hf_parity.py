"""An export of tools/export_hf.py, loaded by stock `transformers` (no custom code), against
our model and our translate:
  1. AutoTokenizer encodes the validation split exactly as our preprocess did (the shards'
     ids, read with h5py), source and target side;
  2. on a padded batch of the sources, with the references as decoder input, the model's
     logits equal the PyTorch reference forward's on the checkpoint's weights (the one the C++
     model is tested against, tests/make_model_fixtures.py) within 1e-4 at every non-pad position;
  3. greedy generate gives our `translate --beam 1` lines on at least 99% of the sources;
  4. generate with the export's generation config (the recipe's beam and length penalty)
     scores within 0.1 BLEU of our `translate` at the same beam.

A multilingual export is checked in one DIRECTION (its shard split SHARD_SPLIT.DIRECTION, our
lines from translate --direction): under data.lang_tag source every source text starts with
">>tgt<< ", as OPUS-MT's models take it; under decoder, generate and the decoder input start from
the tag (decoder_start_token_id = the ">>tgt<<" token), as the shards' decoder_start says.

  hf_parity.py CHECKPOINT EXPORT_DIR SHARD_DIR SHARD_SPLIT RAW_PREFIX SOURCES REFERENCES OURS_GREEDY OURS_BEAM [DIRECTION]
  hf_parity.py logits CHECKPOINT MODEL_DIR SHARD_DIR SOURCES REFERENCES     (2. alone: an import's check)

(RAW_PREFIX: the split's raw text, RAW_PREFIX.SRC and RAW_PREFIX.TGT.)
"""
import functools
import json
import os
import sys

import sacrebleu
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import make_model_fixtures as reference  # noqa: E402
import nmtrain_checkpoint  # noqa: E402
from shard_pairs import split_pairs  # noqa: E402

LOGITS_TOLERANCE, GREEDY_SAME, BLEU_TOLERANCE, BATCH = 1e-4, 0.99, 0.1, 50


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


class Direction:
    """How text goes in and decoding starts for one direction of an export: a prefix for the
    source text ("" or ">>de<< ") and generate's decoder_start_token_id."""

    def __init__(self, tokenizer, manifest, split, direction=None):
        self.src, self.tgt = direction.split("-") if direction else (manifest["src_lang"], manifest["tgt_lang"])
        self.split = f"{split}.{direction}" if direction else split
        tag_place = manifest.get("lang_tag", "none")
        code = tokenizer.convert_tokens_to_ids(f">>{self.tgt}<<") if tag_place != "none" else None
        self.prefix = f">>{self.tgt}<< " if tag_place == "source" else ""
        self.start = code if tag_place == "decoder" else manifest["special_ids"]["bos"]
        assert self.start == manifest["splits"][self.split].get("decoder_start", self.start), \
            (self.split, self.start, manifest["splits"][self.split])

    def sources(self, lines):
        return [self.prefix + line for line in lines]


def check_tokenizer(tokenizer, shard_dir, split, raw_src, raw_tgt, way):
    """The split's pairs as the tokenizer encodes them == the shards' (as multisets: the shards
    may keep another order), EOS dropped: make_batch adds it."""
    eos = tokenizer.eos_token_id
    src = tokenizer(way.sources(read_lines(raw_src))).input_ids
    tgt = tokenizer(text_target=read_lines(raw_tgt)).input_ids
    assert all(s[-1] == eos for s in src + tgt), "the tokenizer does not end sequences with EOS"
    theirs = sorted((tuple(s[:-1]), tuple(t[:-1])) for s, t in zip(src, tgt))
    ours = sorted(split_pairs(shard_dir, split))
    same = sum(a == b for a, b in zip(theirs, ours))
    good = len(ours) == len(theirs) == same
    print(f"{'ok' if good else 'FAIL'}: AutoTokenizer encodes {same}/{len(ours)} {split} pairs as the shards hold them")
    return good


def check_logits(model, tokenizer, ckpt, manifest, sources, references, start=None):
    m, special = ckpt.model, manifest["special_ids"]
    reference.D, reference.H, reference.PAD = m.d_model, m.heads, special["pad"]
    reference.ENC, reference.DEC, reference.MAXPOS = m.encoder_layers, m.decoder_layers, m.max_positions
    reference.sinusoids = functools.lru_cache(maxsize=None)(reference.sinusoids)
    batch = tokenizer(sources[:BATCH], text_target=references[:BATCH], padding=True, return_tensors="pt")
    labels = batch.pop("labels")
    start = special["bos"] if start is None else start
    decoder_in = torch.cat([torch.full((labels.shape[0], 1), start), labels[:, :-1]], 1)
    decoder_in = decoder_in.masked_fill(decoder_in == -100, special["pad"])
    with torch.no_grad():
        theirs = model(**batch, decoder_input_ids=decoder_in).logits
        ours, _, _ = reference.forward(ckpt.weights, batch["input_ids"], decoder_in, m.pre_norm, fix_norm=m.fix_norm,
                                        activation=m.activation)
    real = decoder_in != special["pad"]
    real[:, 0] = True
    worst = float((theirs - ours)[real].abs().max())
    good = worst <= LOGITS_TOLERANCE
    print(f"{'ok' if good else 'FAIL'}: logits of a padded batch of {labels.shape[0]} sentences "
          f"({int(real.sum())} positions): largest |transformers - reference| {worst:.2e} "
          f"(need <= {LOGITS_TOLERANCE:.0e})")
    return good


def generate(model, tokenizer, sources, **settings):
    out = []
    for i in range(0, len(sources), BATCH):
        batch = tokenizer(sources[i:i + BATCH], padding=True, return_tensors="pt")
        with torch.no_grad():
            ids = model.generate(**batch, **settings)
        out += tokenizer.batch_decode(ids, skip_special_tokens=True)
    return out


def compare_lines(what, ours, theirs, refs, need_same, bleu_tolerance):
    same = sum(a == b for a, b in zip(ours, theirs))
    bleu_ours = sacrebleu.corpus_bleu(ours, [refs], force=True).score
    bleu_theirs = sacrebleu.corpus_bleu(theirs, [refs], force=True).score
    good = len(ours) == len(theirs) and same >= need_same * len(ours) \
        and (bleu_tolerance is None or abs(bleu_ours - bleu_theirs) <= bleu_tolerance)
    print(f"{'ok' if good else 'FAIL'}: {what}: identical lines {same}/{len(ours)} (need {need_same:.0%}); BLEU "
          f"ours {bleu_ours:.2f}, transformers {bleu_theirs:.2f}"
          + (f" (need a difference <= {bleu_tolerance})" if bleu_tolerance is not None else ""))
    if not good:
        for i, (a, b) in enumerate(zip(ours, theirs)):
            if a != b:
                print(f"  line {i + 1}: ours '{a}' | transformers '{b}'")
    return good


def logits_only(ckpt_path, model_dir, shard_dir, src_path, ref_path):
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
    with open(os.path.join(shard_dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    good = check_logits(model, tokenizer, nmtrain_checkpoint.load(ckpt_path), manifest, read_lines(src_path),
                        read_lines(ref_path))
    return 0 if good else 1


def main():
    if sys.argv[1] == "logits":
        return logits_only(*sys.argv[2:7])
    ckpt_path, export, shard_dir, split, raw_prefix, src_path, ref_path, greedy_path, beam_path = sys.argv[1:10]
    direction = sys.argv[10] if len(sys.argv) > 10 else None
    torch.set_num_threads(1)
    tokenizer = transformers.AutoTokenizer.from_pretrained(export)
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(export).eval()
    ckpt = nmtrain_checkpoint.load(ckpt_path)
    with open(os.path.join(shard_dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    way = Direction(tokenizer, manifest, split, direction)
    sources, refs = way.sources(read_lines(src_path)), read_lines(ref_path)
    good = check_tokenizer(tokenizer, shard_dir, way.split, f"{raw_prefix}.{way.src}", f"{raw_prefix}.{way.tgt}", way)
    good &= check_logits(model, tokenizer, ckpt, manifest, sources, refs, way.start)
    # decoder_start_token_id given on each call, as a user picks the target language.
    greedy = generate(model, tokenizer, sources, num_beams=1, decoder_start_token_id=way.start)
    good &= compare_lines("greedy generate against translate --beam 1", read_lines(greedy_path), greedy, refs,
                          GREEDY_SAME, None)
    beam = generate(model, tokenizer, sources, decoder_start_token_id=way.start)
    good &= compare_lines(f"generate (beam {model.generation_config.num_beams}, length penalty "
                          f"{model.generation_config.length_penalty}) against translate", read_lines(beam_path), beam,
                          refs, 0.0, BLEU_TOLERANCE)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
