"""Exports an nmtrain checkpoint to a CTranslate2 model directory.

  python tools/export_ctranslate2.py --checkpoint P --output DIR [--shard-dir D | --config C]
                                     [--quantization TYPE] [--force]

The vocabulary is the SentencePiece model of the shard directory the checkpoint was trained
on: --shard-dir D, else --config C's data.shard_dir, else the checkpoint's own. The model
shape always comes from the checkpoint (its stored config and weights); the decoding
settings written to DIR/nmtrain.json (beam, lenpen, max_len_a/b) from C's eval section over
the checkpoint's. DIR gets model.bin, config.json, shared_vocabulary.json, spm.model and
nmtrain.json; tools/ct2_translate.py translates with it as our `translate` does. DIR must not
exist or be empty; --force replaces an earlier export there, and never a directory this tool
did not write (a run, shards, raw data) nor one that is or holds an input.
Exit 0 done, 2 input refused (one line on stderr), 1 anything else."""
import argparse
import json
import os
import shutil
import sys

import yaml

from nmtrain_checkpoint import BadInput
from nmtrain_cli import run_cli
import nmtrain_checkpoint
import nmtrain_vocab
from nmtrain_dirs import nmtrain_content

PROG = "export_ctranslate2"
EVAL_KEYS = ("beam", "lenpen", "max_len_a", "max_len_b")


# What this tool puts in DIR: CTranslate2's converter writes model.bin, config.json and the
# vocabulary (shared, or source + target), we add spm.model and nmtrain.json. --force replaces
# a directory that holds these files only, with an nmtrain.json of ours: never one it did not write.
EXPORT_FILES = {"model.bin", "config.json", "shared_vocabulary.json", "source_vocabulary.json",
                "target_vocabulary.json", "spm.model", "nmtrain.json"}
SETTINGS_FORMAT_VERSION = 1


def _is_within(path, directory):
    """True when path (resolved) is directory or lies inside it."""
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def check_not_input(output, inputs):
    """Refuse an output that is, or contains, one of inputs [(what, path)]: replacing it would
    delete what the export reads."""
    for what, path in inputs:
        if path and os.path.exists(path) and _is_within(path, output):
            where = "is" if os.path.realpath(path) == os.path.realpath(output) else "contains"
            raise BadInput(f"--output {output}: {where} the {what} {path}, an input; choose another --output")


def foreign_content(path, entries):
    """Why the non-empty directory path is not an export this tool wrote, or None."""
    if nmtrain_content(entries):
        return "holds " + nmtrain_content(entries)
    for entry in sorted(entries):
        if entry not in EXPORT_FILES or not os.path.isfile(os.path.join(path, entry)):
            return f"holds '{entry}', which {PROG} does not write"
    try:
        with open(os.path.join(path, "nmtrain.json"), encoding="utf-8") as f:
            settings = json.load(f)
        ours = isinstance(settings, dict) and settings.get("format_version") == SETTINGS_FORMAT_VERSION \
            and "checkpoint" in settings and "model.bin" in entries
    except (OSError, ValueError):
        ours = False
    return None if ours else f"holds a model without the nmtrain.json {PROG} writes"


def check_output(path, force, inputs):
    # Refused before anything is read or written: an existing model is never half-replaced,
    # and --force never deletes what this tool did not write (a run, shards, raw data, an input).
    check_not_input(path, inputs)
    if os.path.exists(path) and not os.path.isdir(path):
        raise BadInput(f"{path}: exists and is not a directory")
    entries = os.listdir(path) if os.path.isdir(path) else []
    if not entries:
        return
    why = foreign_content(path, entries)
    if why:
        raise BadInput(f"{path}: output directory exists and {why}, not an earlier export: --force replaces "
                       f"only a directory {PROG} wrote; choose another --output")
    if not force:
        raise BadInput(f"{path}: output directory exists and is not empty (use --force to replace it)")


def read_config(path):
    if not os.path.isfile(path):
        raise BadInput(f"{path}: config file does not exist")
    try:
        with open(path, encoding="utf-8") as f:
            config = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as e:
        raise BadInput(f"{path}: not a readable YAML config ({type(e).__name__})") from None
    if not isinstance(config, dict):
        raise BadInput(f"{path}: not a YAML mapping of sections")
    return config


def decoding_settings(ckpt, config, vocab):
    """What tools/ct2_translate.py needs beyond the CTranslate2 model: our search's rules."""
    ev = dict(ckpt.config.get("eval") or {})
    ev.update({k: v for k, v in (config.get("eval") or {}).items() if k in EVAL_KEYS})
    missing = [k for k in EVAL_KEYS if not isinstance(ev.get(k), (int, float))]
    if missing:
        raise BadInput(f"config key 'eval.{missing[0]}' is missing or not a number")
    return {"format_version": SETTINGS_FORMAT_VERSION, "checkpoint": os.path.abspath(ckpt.path),
            "src_lang": vocab.src_lang, "tgt_lang": vocab.tgt_lang, "max_positions": ckpt.model.max_positions,
            "eval": {k: ev[k] for k in EVAL_KEYS},
            "never_generate": [vocab.piece("pad"), vocab.piece("bos")]}


def export(args):
    inputs = [("checkpoint", args.checkpoint), ("checkpoint's checksum", args.checkpoint + ".sha256"),
              ("config", args.config), ("shard directory", args.shard_dir)]
    check_output(args.output, args.force, inputs)
    ckpt = nmtrain_checkpoint.load(args.checkpoint)
    config = read_config(args.config) if args.config else {}
    shard_dir = args.shard_dir or (config.get("data") or {}).get("shard_dir") \
        or (ckpt.config.get("data") or {}).get("shard_dir")
    if not shard_dir:
        raise BadInput("no shard directory: give --shard-dir or --config with data.shard_dir")
    vocab = nmtrain_vocab.load(shard_dir, ckpt)
    settings = decoding_settings(ckpt, config, vocab)
    # The shard directory and SentencePiece model are known only now (from the config or the
    # checkpoint): checked again before anything is written.
    check_not_input(args.output, [("shard directory", shard_dir), ("SentencePiece model", vocab.spm_path)])

    import ct2_spec  # imports ctranslate2 and its converter machinery: only once input is fine

    # Written beside DIR and renamed into place: an interrupted export leaves no half model.
    # A symlinked DIR: the directory it points at is replaced, the link kept.
    out = os.path.realpath(args.output)
    tmp = os.path.join(os.path.dirname(out), f".{os.path.basename(out)}.tmp-{os.getpid()}")
    old = os.path.join(os.path.dirname(out), f".{os.path.basename(out)}.old-{os.getpid()}")
    try:
        ct2_spec.NmtrainConverter(ckpt, vocab).convert(tmp, quantization=args.quantization, force=True)
        with open(os.path.join(tmp, "nmtrain.json"), "w", encoding="utf-8") as f:
            json.dump(settings, f, indent=2, sort_keys=True)
            f.write("\n")
        # The earlier export (checked above to be ours) is moved aside, and deleted only once
        # the new one is in place.
        if os.path.isdir(out):
            os.rename(out, old)
        try:
            os.rename(tmp, out)
        except OSError:
            if os.path.isdir(old):
                os.rename(old, out)
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    m = ckpt.model
    norms = "ScaleNorm" if m.norm == "scale" else "LayerNorm"
    norms += ", FixNorm" if m.fix_norm else ""
    print(f"{PROG}: wrote {args.output}: {'pre' if m.pre_norm else 'post'}-norm Transformer ({norms}), "
          f"{m.encoder_layers}+{m.decoder_layers} layers, d_model {m.d_model}, {m.heads} heads, "
          f"vocabulary {m.vocab_size} ({vocab.spm_path}), weights {args.quantization or 'float32'}")


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
