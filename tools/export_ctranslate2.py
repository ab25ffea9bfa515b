"""Exports an nmtrain checkpoint to a CTranslate2 model directory.

  python tools/export_ctranslate2.py --checkpoint P --output DIR [--shard-dir D | --config C]
                                     [--quantization TYPE] [--force]

The vocabulary is the SentencePiece model of the shard directory the checkpoint was trained
on: --shard-dir D, else --config C's data.shard_dir, else the checkpoint's own. The model
shape always comes from the checkpoint (its stored config and weights); the decoding
settings written to DIR/nmtrain.json (beam, lenpen, max_len_a/b) from C's eval section over
the checkpoint's. DIR gets model.bin, config.json, shared_vocabulary.json, spm.model and
nmtrain.json; tools/ct2_translate.py translates with it as our `translate` does.
Exit 0 done, 2 input refused (one line on stderr), 1 anything else."""
import argparse
import json
import os
import shutil
import sys

import yaml

from nmtrain_checkpoint import BadInput
import nmtrain_checkpoint
import nmtrain_vocab

PROG = "export_ctranslate2"
EVAL_KEYS = ("beam", "lenpen", "max_len_a", "max_len_b")


def check_output(path, force):
    # Refused before anything is read or written: an existing model is never half-replaced.
    if os.path.exists(path) and not os.path.isdir(path):
        raise BadInput(f"{path}: exists and is not a directory")
    if os.path.isdir(path) and os.listdir(path) and not force:
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
    return {"format_version": 1, "checkpoint": os.path.abspath(ckpt.path), "src_lang": vocab.src_lang,
            "tgt_lang": vocab.tgt_lang, "max_positions": ckpt.model.max_positions,
            "eval": {k: ev[k] for k in EVAL_KEYS},
            "never_generate": [vocab.piece("pad"), vocab.piece("bos")]}


def export(args):
    check_output(args.output, args.force)
    ckpt = nmtrain_checkpoint.load(args.checkpoint)
    config = read_config(args.config) if args.config else {}
    shard_dir = args.shard_dir or (config.get("data") or {}).get("shard_dir") \
        or (ckpt.config.get("data") or {}).get("shard_dir")
    if not shard_dir:
        raise BadInput("no shard directory: give --shard-dir or --config with data.shard_dir")
    vocab = nmtrain_vocab.load(shard_dir, ckpt)
    settings = decoding_settings(ckpt, config, vocab)

    import ct2_spec  # imports ctranslate2 and its converter machinery: only once input is fine

    # Written beside DIR and renamed into place: an interrupted export leaves no half model.
    out = os.path.abspath(args.output)
    tmp = os.path.join(os.path.dirname(out), f".{os.path.basename(out)}.tmp-{os.getpid()}")
    try:
        ct2_spec.NmtrainConverter(ckpt, vocab).convert(tmp, quantization=args.quantization, force=True)
        with open(os.path.join(tmp, "nmtrain.json"), "w", encoding="utf-8") as f:
            json.dump(settings, f, indent=2, sort_keys=True)
            f.write("\n")
        if os.path.isdir(out):
            shutil.rmtree(out)
        os.rename(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    m = ckpt.model
    print(f"{PROG}: wrote {args.output}: {'pre' if m.pre_norm else 'post'}-norm Transformer, "
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
    parser.add_argument("--force", action="store_true", help="replace an existing output directory")
    args = parser.parse_args()  # usage errors: argparse's message, exit 2
    try:
        export(args)
    except BadInput as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a fault, not bad input: one line still
        print(f"{PROG}: error: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
