"""Exports an nmtrain checkpoint as a Hugging Face `transformers` model directory.

  python tools/export_hf.py --checkpoint P --config C [section.key=value ...] --output DIR [--force]

Give the config and overrides the model was trained with, as `evaluate` takes them: the
shard directory (its SentencePiece model and special ids) and the eval section (beam, length
penalty) come from them, the model's shape from the checkpoint, and a model key of the config
that disagrees with the checkpoint is refused by name. DIR then loads in stock `transformers`
with no custom code: AutoModelForSeq2SeqLM (Pegasus's classes for a pre-norm model, Marian's
for a post-norm one: tools/hf_layout.py says why), AutoTokenizer (MarianTokenizer over our
SentencePiece model: source.spm = target.spm, vocab.json), pipeline("translation"), generate
with the recipe's beam and length penalty (generation_config.json). DIR gets config.json,
model.safetensors, generation_config.json, the tokenizer files and nmtrain.json (what made it).
ScaleNorm has no stock equivalent and is refused; FixNorm exports as unit-length rows. A
multilingual checkpoint (data.directions) keeps its language tags as OPUS-MT's codes: our "<2de>"
is ">>de<<" in vocab.json, a special token of the tokenizer (never split, dropped by
skip_special_tokens). Under data.lang_tag source it goes before the source text, as OPUS-MT's
multilingual models take it (">>de<< Ein Hund ..."); under decoder it is generate's
decoder_start_token_id, the generation config's default being the config's data.tgt_lang.
DIR must not exist or be empty; --force replaces an earlier export there, and never a
directory this tool did not write. Exit 0 done, 2 input refused (one line on stderr), 1 anything else."""
import argparse
import json
import os
import shutil
import sys

from export_dir import SETTINGS_FILE, ExportLayout, check_not_input, replace_directory, write_settings
from nmtrain_checkpoint import BadInput
from nmtrain_cli import run_cli
from nmtrain_config import read_config
import nmtrain_checkpoint
import nmtrain_vocab

PROG = "export_hf"
TOKENIZER_FILES = ("source.spm", "target.spm", "vocab.json", "tokenizer_config.json", "special_tokens_map.json")
LAYOUT = ExportLayout(PROG, {"config.json", "model.safetensors", "generation_config.json", SETTINGS_FILE}
                      | set(TOKENIZER_FILES), main_file="model.safetensors", format_version=1)
# The checkpoint's model keys that a config given with it must not contradict.
MODEL_KEYS = ("d_model", "ffn_dim", "heads", "encoder_layers", "decoder_layers", "pre_norm", "max_positions",
              "norm", "fix_norm")


def check_model_section(ckpt, config, config_path):
    given, trained = config.get("model") or {}, ckpt.config.get("model") or {}
    for key in MODEL_KEYS:
        if key in given and key in trained and given[key] != trained[key]:
            raise BadInput(f"{ckpt.path}: trained with model.{key}={trained[key]}, but {config_path} and its "
                           f"overrides say {given[key]}: give the config the model was trained with")


def refuse_unsupported(ckpt):
    if ckpt.model.norm == "scale":
        raise BadInput(f"{ckpt.path}: model.norm=scale (ScaleNorm) has no equivalent in transformers' Marian or "
                       f"Pegasus layers, which are LayerNorm only; export it with tools/export_ctranslate2.py")


def marian_code(lang):
    """A language tag as OPUS-MT's models spell it, which MarianTokenizer knows (">>de<<")."""
    return f">>{lang}<<"


def default_target(ckpt, config, vocab):
    """The target language evaluate decodes into without --direction: data.tgt_lang of the
    config and overrides, else of the checkpoint's config."""
    tgt = (config.get("data") or {}).get("tgt_lang") or (ckpt.config.get("data") or {}).get("tgt_lang")
    if tgt not in vocab.language_tags:
        raise BadInput(f"data.tgt_lang '{tgt}' is not a target language of this model (directions "
                       f"{', '.join(vocab.directions)}): the generation config's default needs one")
    return tgt


def generation_settings(ckpt, config, vocab):
    """Our search's settings as transformers' GenerationConfig keywords. Under data.lang_tag
    decoder, the decoder starts from the target language's tag instead of BOS (data/source_tags.h)."""
    ev = dict(ckpt.config.get("eval") or {})
    ev.update(config.get("eval") or {})
    for key in ("beam", "lenpen"):
        if not isinstance(ev.get(key), (int, float)) or isinstance(ev.get(key), bool):
            raise BadInput(f"config key 'eval.{key}' is missing or not a number")
    special = vocab.special
    # Our search never emits pad, BOS or a source tag (eval/translator.cpp): removed from every
    # step's log-probabilities after normalising, as suppress_tokens does.
    never = [special["pad"], special["bos"]] + vocab.control_ids(exclude=special.values())
    start = special["bos"]
    if vocab.lang_tag == "decoder":
        start = vocab.pieces.index(vocab.language_tags[default_target(ckpt, config, vocab)])
    return dict(num_beams=int(ev["beam"]), length_penalty=float(ev["lenpen"]), early_stopping=True,
                max_length=ckpt.model.max_positions, decoder_start_token_id=start,
                bos_token_id=special["bos"], eos_token_id=special["eos"], pad_token_id=special["pad"],
                forced_eos_token_id=special["eos"], suppress_tokens=sorted(set(never)))


def write_tokenizer(tmp, vocab, max_positions):
    from transformers import MarianTokenizer

    if vocab.vocab_json_path:  # shards made with a Marian vocabulary (data.hf_tokenizer): its own files
        for name, path in (("source.spm", vocab.spm_path), ("target.spm", vocab.target_spm_path),
                           ("vocab.json", vocab.vocab_json_path)):
            shutil.copyfile(path, os.path.join(tmp, name))
    else:  # our joint SentencePiece model on both sides, its ids as vocab.json, tags as >>xx<<
        for name in ("source.spm", "target.spm"):
            shutil.copyfile(vocab.spm_path, os.path.join(tmp, name))
        codes = {tag: marian_code(lang) for lang, tag in vocab.language_tags.items()}
        with open(os.path.join(tmp, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump({codes.get(piece, piece): i for i, piece in enumerate(vocab.pieces)}, f, ensure_ascii=False,
                      indent=1)
    # Special, so that a tag is one token wherever it stands and decode(skip_special_tokens=True)
    # drops the decoder's start tag: SentencePiece has no piece ">>de<<" to decode it by.
    codes = sorted(marian_code(lang) for lang in (vocab.language_tags or {}))
    tokenizer = MarianTokenizer(os.path.join(tmp, "source.spm"), os.path.join(tmp, "target.spm"),
                                os.path.join(tmp, "vocab.json"), source_lang=vocab.src_lang,
                                target_lang=vocab.tgt_lang, unk_token=vocab.piece("unk"),
                                eos_token=vocab.piece("eos"), pad_token=vocab.piece("pad"),
                                model_max_length=max_positions, **({"additional_special_tokens": codes} if codes else {}))
    tokenizer.save_pretrained(tmp)


def write_model(tmp, ckpt, vocab, generation):
    import torch
    import transformers
    import hf_layout

    transformers.utils.logging.disable_progress_bar()  # one line of output, not tqdm's

    m = ckpt.model
    kind = hf_layout.hf_model_type(m.pre_norm)
    config_class, model_class = {
        hf_layout.PEGASUS: (transformers.PegasusConfig, transformers.PegasusForConditionalGeneration),
        hf_layout.MARIAN: (transformers.MarianConfig, transformers.MarianMTModel)}[kind]
    config = config_class(**hf_layout.hf_config(m, ckpt.config.get("model") or {}, vocab.special))
    with torch.no_grad():
        model = model_class(config)
        state = hf_layout.export_state(ckpt.weights, m)
        # Every tensor of theirs is ours: strict, so that a name the table misses is an error here.
        missing, unexpected = model.load_state_dict(state, strict=False)
        missing = [k for k in missing if k not in ("lm_head.weight", "model.encoder.embed_tokens.weight",
                                                   "model.decoder.embed_tokens.weight")]
        if missing or unexpected:
            raise RuntimeError(f"hf_layout does not map {kind}'s parameters: missing {missing}, unexpected {unexpected}")
    model.generation_config = transformers.GenerationConfig(**generation)
    model.save_pretrained(tmp)
    return kind


def export(args):
    inputs = [("checkpoint", args.checkpoint), ("checkpoint's checksum", args.checkpoint + ".sha256"),
              ("config", args.config)]
    LAYOUT.check_output(args.output, args.force, inputs)
    config = read_config(args.config, args.overrides)
    ckpt = nmtrain_checkpoint.load(args.checkpoint)
    check_model_section(ckpt, config, args.config)
    refuse_unsupported(ckpt)
    shard_dir = (config.get("data") or {}).get("shard_dir") or (ckpt.config.get("data") or {}).get("shard_dir")
    if not shard_dir:
        raise BadInput(f"{args.config}: no data.shard_dir, and the checkpoint records none")
    vocab = nmtrain_vocab.load(shard_dir, ckpt)
    generation = generation_settings(ckpt, config, vocab)
    check_not_input(args.output, [("shard directory", shard_dir), ("SentencePiece model", vocab.spm_path)])
    kind = []

    def write(tmp):
        os.makedirs(tmp)
        kind.append(write_model(tmp, ckpt, vocab, generation))
        write_tokenizer(tmp, vocab, ckpt.model.max_positions)
        write_settings(tmp, {"format_version": LAYOUT.format_version, "checkpoint": os.path.abspath(ckpt.path),
                             "config": os.path.abspath(args.config), "overrides": list(args.overrides),
                             "src_lang": vocab.src_lang, "tgt_lang": vocab.tgt_lang,
                             **({"directions": list(vocab.directions), "lang_tag": vocab.lang_tag,
                                 "language_codes": {lang: marian_code(lang) for lang in vocab.language_tags}}
                                if vocab.directions else {})})
        extra = sorted(set(os.listdir(tmp)) - LAYOUT.files)
        if extra:  # a transformers version that writes more: --force could not replace it later
            raise RuntimeError(f"transformers wrote {extra}, which {PROG} does not know (LAYOUT.files)")

    replace_directory(args.output, write)
    m = ckpt.model
    tags = {"source": "language codes >>xx<< before the source text",
            "decoder": "language codes >>xx<< as decoder_start_token_id", "none": "no language codes"}
    multilingual = f", directions {', '.join(vocab.directions)} ({tags[vocab.lang_tag]})" if vocab.directions else ""
    print(f"{PROG}: wrote {args.output}: {kind[0]} ({'pre' if m.pre_norm else 'post'}-norm"
          f"{', FixNorm as unit rows' if m.fix_norm else ''}), {m.encoder_layers}+{m.decoder_layers} layers, "
          f"d_model {m.d_model}, {m.heads} heads, vocabulary {m.vocab_size}, beam {generation['num_beams']}, "
          f"length penalty {generation['length_penalty']}{multilingual}")


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="nmtrain checkpoint (.pt)")
    parser.add_argument("--config", required=True, help="the run's config: data.shard_dir and the eval section")
    parser.add_argument("--output", required=True, help="transformers model directory to write")
    parser.add_argument("--force", action="store_true",
                        help="replace an earlier export in --output (never a directory this tool did not write)")
    parser.add_argument("overrides", nargs="*", metavar="section.key=value",
                        help="the overrides the model was trained with, as evaluate takes them")
    args = parser.parse_args()  # usage errors: argparse's message, exit 2
    return run_cli(PROG, export, args, BadInput)


if __name__ == "__main__":
    sys.exit(main())
