"""Exports an nmtrain checkpoint to a CTranslate2 model directory.

  python tools/export_ctranslate2.py --checkpoint P --output DIR [--shard-dir D | --config C]
                                     [--quantization TYPE] [--force]

The vocabulary is the SentencePiece model of the shard directory the checkpoint was trained
on: --shard-dir D, else --config C's data.shard_dir, else the checkpoint's own. The model
shape always comes from the checkpoint (its stored config and weights); the decoding
settings written to DIR/nmtrain.json (beam, lenpen, max_len_a/b) from C's eval section over
the checkpoint's. DIR gets model.bin, config.json, shared_vocabulary.json, spm.model and
nmtrain.json; tools/ct2_translate.py translates with it as our `translate` does. A multilingual
checkpoint (data.directions) goes out with its directions, lang_tag and language tags in
nmtrain.json (ct2_translate.py --direction puts the tag in front of the source, or makes it the
decoder's start token: config.json's decoder_start_token is null under lang_tag decoder). DIR must not
exist or be empty; --force replaces an earlier export there, and never a directory this tool
did not write (a run, shards, raw data) nor one that is or holds an input.
Exit 0 done, 2 input refused (one line on stderr), 1 anything else."""
import argparse
import os
import sys

from nmtrain_checkpoint import BadInput
from nmtrain_cli import run_cli
import nmtrain_checkpoint
import nmtrain_vocab
from nmtrain_config import read_config
from export_dir import ExportLayout, SETTINGS_FILE, check_not_input, replace_directory, write_settings

PROG = "export_ctranslate2"
EVAL_KEYS = ("beam", "lenpen", "max_len_a", "max_len_b")


# What this tool puts in DIR: CTranslate2's converter writes model.bin, config.json and the
# vocabulary (shared, or source + target), we add spm.model and nmtrain.json. --force replaces
# a directory that holds these files only, with an nmtrain.json of ours: never one it did not write.
LAYOUT = ExportLayout(PROG, {"model.bin", "config.json", "shared_vocabulary.json", "source_vocabulary.json",
                             "target_vocabulary.json", "spm.model", SETTINGS_FILE},
                      main_file="model.bin", format_version=1)


def decoding_settings(ckpt, config, vocab):
    """What tools/ct2_translate.py needs beyond the CTranslate2 model: our search's rules."""
    ev = dict(ckpt.config.get("eval") or {})
    ev.update({k: v for k, v in (config.get("eval") or {}).items() if k in EVAL_KEYS})
    missing = [k for k in EVAL_KEYS if not isinstance(ev.get(k), (int, float))]
    if missing:
        raise BadInput(f"config key 'eval.{missing[0]}' is missing or not a number")
    # Our search never emits pad, BOS or another control symbol (a source or language tag;
    # eval/translator.cpp): EOS ends a hypothesis instead.
    never = [vocab.special["pad"], vocab.special["bos"]] + vocab.control_ids(exclude=vocab.special.values())
    settings = {"format_version": LAYOUT.format_version, "checkpoint": os.path.abspath(ckpt.path),
                "src_lang": vocab.src_lang, "tgt_lang": vocab.tgt_lang, "max_positions": ckpt.model.max_positions,
                "eval": {k: ev[k] for k in EVAL_KEYS}, "never_generate": [vocab.pieces[i] for i in never]}
    if vocab.directions:  # a multilingual model: what tools/ct2_translate.py --direction needs
        settings.update(directions=list(vocab.directions), lang_tag=vocab.lang_tag,
                        language_tags=dict(vocab.language_tags))
    return settings


def export(args):
    inputs = [("checkpoint", args.checkpoint), ("checkpoint's checksum", args.checkpoint + ".sha256"),
              ("config", args.config), ("shard directory", args.shard_dir)]
    LAYOUT.check_output(args.output, args.force, inputs)
    ckpt = nmtrain_checkpoint.load(args.checkpoint)
    config = read_config(args.config) if args.config else {}
    shard_dir = args.shard_dir or (config.get("data") or {}).get("shard_dir") \
        or (ckpt.config.get("data") or {}).get("shard_dir")
    if not shard_dir:
        raise BadInput("no shard directory: give --shard-dir or --config with data.shard_dir")
    vocab = nmtrain_vocab.load(shard_dir, ckpt)
    if vocab.vocab_json_path:
        raise BadInput(f"{shard_dir}: a Marian vocabulary (data.hf_tokenizer) has two SentencePiece models and a "
                       f"vocab.json, which this exporter does not write yet; use tools/export_hf.py")
    settings = decoding_settings(ckpt, config, vocab)
    # The shard directory and SentencePiece model are known only now (from the config or the
    # checkpoint): checked again before anything is written.
    check_not_input(args.output, [("shard directory", shard_dir), ("SentencePiece model", vocab.spm_path)])

    import ct2_spec  # imports ctranslate2 and its converter machinery: only once input is fine

    def write(tmp):
        ct2_spec.NmtrainConverter(ckpt, vocab).convert(tmp, quantization=args.quantization, force=True)
        write_settings(tmp, settings)

    replace_directory(args.output, write)
    m = ckpt.model
    norms = "ScaleNorm" if m.norm == "scale" else "LayerNorm"
    norms += ", FixNorm" if m.fix_norm else ""
    multilingual = f", directions {', '.join(vocab.directions)} (lang_tag {vocab.lang_tag})" if vocab.directions else ""
    print(f"{PROG}: wrote {args.output}: {'pre' if m.pre_norm else 'post'}-norm Transformer ({norms}), "
          f"{m.encoder_layers}+{m.decoder_layers} layers, d_model {m.d_model}, {m.heads} heads, "
          f"vocabulary {m.vocab_size} ({vocab.spm_path}), weights {args.quantization or 'float32'}{multilingual}")


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="nmtrain checkpoint (.pt)")
    parser.add_argument("--output", required=True, help="CTranslate2 model directory to write")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--shard-dir", help="shard directory with manifest.json and the SentencePiece model")
    where.add_argument("--config", help="run config: its data.shard_dir and eval section")
    parser.add_argument("--quantization", default=None,
                        choices=("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16",
                                 "bfloat16", "float32"),
                        help="weight type of the model (default: float32, as trained)")
    parser.add_argument("--force", action="store_true",
                        help="replace an earlier export in --output (never a directory this tool did not write)")
    args = parser.parse_args()  # usage errors: argparse's message, exit 2
    return run_cli(PROG, export, args, BadInput)


if __name__ == "__main__":
    sys.exit(main())
