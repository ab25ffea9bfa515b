"""Translates with a model written by tools/export_ctranslate2.py the way our
`translate` does (eval/translator.cpp, eval/search.cpp), with ctranslate2.Translator:

  python tools/ct2_translate.py --model DIR [--beam K] [--lenpen P] [--input FILE] [--device D] [--threads N]
                                [--direction SRC-TGT [--zero-shot]] < source > hypotheses

What makes CTranslate2 decode as ours (the figures come from DIR/nmtrain.json, which the
exporter writes from the run's eval section):
  * source ids = SentencePiece ids, cut to max_positions - 1, then EOS: CTranslate2 adds
    the EOS itself (config add_source_eos); the decoder starts from BOS (decoder_start_token);
  * per sentence at most int(max_len_a * (source pieces + 1)) + max_len_b pieces, capped at
    max_positions - 1. CTranslate2 takes one max_decoding_length per call, so sentences are
    grouped by their limit;
  * EOS may come first (min_decoding_length=0; CTranslate2's default 1 forbids it);
  * pad, BOS and the other control symbols but EOS (source and language tags) are never
    generated (suppress_sequences: never_generate);
  * hypotheses ranked by log-probability / (pieces + 1)^lenpen: CTranslate2 counts the EOS
    in the length as we do (length_penalty=lenpen); beam search stops once beam hypotheses
    have finished (patience=1);
  * an empty source gives an empty translation without running the model;
  * a multilingual export (nmtrain.json's directions; --direction picks one, as translate's):
    under lang_tag source the target language's tag goes in front of the source pieces (before
    the cut to max_positions - 1, and counted in the source length, so an empty line is
    translated too); under lang_tag decoder the tag is the decoder's first token instead of
    BOS (target_prefix=[tag]: the export has no fixed decoder_start_token); every tag is in
    never_generate. A direction the model never saw a language of is refused; one it was not
    trained on too, unless --zero-shot.
Beam search still differs where ours finalizes an EOS below the k best candidates, or a
sentence reaches its limit (tools/README.md); greedy search is the same."""
import argparse
import gzip
import json
import math
import os
import sys
import zlib
from collections import defaultdict

from nmtrain_checkpoint import BadInput
from nmtrain_cli import run_cli

PROG = "ct2_translate"
SETTINGS_FILE = "nmtrain.json"
EVAL_KEYS = ("beam", "lenpen", "max_len_a", "max_len_b")


def load_settings(model_dir):
    """DIR/nmtrain.json, checked for what translate() reads."""
    path = os.path.join(model_dir, SETTINGS_FILE)
    if not os.path.isfile(path):
        raise BadInput(f"{model_dir}: no {SETTINGS_FILE} there (not written by tools/export_ctranslate2.py)")
    try:
        with open(path, encoding="utf-8") as f:
            settings = json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: not readable JSON ({type(e).__name__})") from None
    ev = settings.get("eval") if isinstance(settings, dict) else None
    if not isinstance(ev, dict) or any(not isinstance(ev.get(k), (int, float)) for k in EVAL_KEYS):
        raise BadInput(f"{path}: no 'eval' section with numbers {', '.join(EVAL_KEYS)}")
    if not isinstance(settings.get("max_positions"), int) or settings["max_positions"] < 2:
        raise BadInput(f"{path}: 'max_positions' is missing or not an integer >= 2")
    never = settings.get("never_generate")
    if not isinstance(never, list) or not all(isinstance(t, str) for t in never):
        raise BadInput(f"{path}: 'never_generate' is missing or not a list of pieces")
    if "directions" in settings:  # a multilingual export
        dirs, tag, tags = settings["directions"], settings.get("lang_tag"), settings.get("language_tags")
        if not isinstance(dirs, list) or not dirs or not all(isinstance(d, str) and split_direction(d) for d in dirs):
            raise BadInput(f"{path}: 'directions' is not a non-empty list of SRC-TGT")
        if tag not in ("none", "source", "decoder") or not isinstance(tags, dict) \
                or (tag != "none" and any(not isinstance(tags.get(split_direction(d)[1]), str) for d in dirs)):
            raise BadInput(f"{path}: 'lang_tag' is not none, source or decoder, or 'language_tags' lacks a target "
                           f"language's tag")
    return settings


def split_direction(text):
    """("fr", "en") for "fr-en"; None for text that is not SRC-TGT."""
    parts = text.split("-")
    return tuple(parts) if len(parts) == 2 and all(parts) else None


def direction_prefixes(settings, direction=None, zero_shot=False, model_dir="the export"):
    """(source prefix, target prefix, zero-shot?) of --direction SRC-TGT: the pieces in front of
    every source, and translate_batch's target_prefix (None: the export's own start token, BOS).
    A bilingual export takes no direction; a multilingual one into several languages needs one
    (eval/translator.cpp check_direction's rules, its messages)."""
    dirs = settings.get("directions")
    if not dirs:
        if direction or zero_shot:
            raise BadInput(f"--{'direction ' + direction if direction else 'zero-shot'}: {model_dir} is a bilingual "
                           f"export ({settings.get('src_lang')}-{settings.get('tgt_lang')}); --direction and "
                           f"--zero-shot are for a multilingual model")
        return [], None, False
    listed = ", ".join(dirs)
    targets = {split_direction(d)[1] for d in dirs}
    if direction is None:
        if len(targets) > 1:
            raise BadInput(f"{model_dir}: a multilingual export translating into {len(targets)} languages ({listed}): "
                           f"give --direction SRC-TGT")
        direction = dirs[0]  # one target language: its tag whatever the source
    src, tgt = split_direction(direction)
    which = f"direction {direction}"
    if tgt not in targets:
        raise BadInput(f"{which}: the model never translated into '{tgt}'; it was trained on {listed}")
    if src not in {lang for d in dirs for lang in split_direction(d)}:
        raise BadInput(f"{which}: the model never saw '{src}'; it was trained on {listed}")
    untrained = direction not in dirs
    if untrained and not zero_shot:
        raise BadInput(f"{which}: not a direction the model was trained on ({listed}); decode it zero-shot with "
                       f"--zero-shot")
    tag = settings["language_tags"].get(tgt) if settings["lang_tag"] != "none" else None
    if settings["lang_tag"] == "source":
        return [tag], None, untrained
    return [], ([tag] if settings["lang_tag"] == "decoder" else None), untrained


def read_lines(path):
    """data::read_lines(): plain or gzip, split at "\\n", a trailing "\\r" dropped (not
    str.splitlines(), which also splits at Unicode separators our reader keeps)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        lines = raw.decode("utf-8").split("\n")
    except FileNotFoundError:
        raise BadInput(f"{path}: input file does not exist") from None
    except (OSError, EOFError, zlib.error) as e:
        raise BadInput(f"{path}: not a readable text or gzip file ({type(e).__name__}: {e})") from None
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not UTF-8 text (byte {e.start})") from None
    if lines and lines[-1] == "":
        lines.pop()
    return [l[:-1] if l.endswith("\r") else l for l in lines]


def read_stdin_lines():
    """std::getline on stdin: split at "\\n" only."""
    try:
        text = sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"standard input: not UTF-8 text (byte {e.start})") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def decode_limit(source_pieces, settings):
    """eval/search.cpp max_lengths(): the source length there counts the EOS."""
    e = settings["eval"]
    limit = int(e["max_len_a"] * float(source_pieces + 1)) + int(e["max_len_b"])
    return max(1, min(limit, settings["max_positions"] - 1))


def source_pieces(sp, line, settings, source_prefix=()):
    """The source pieces of `line` as our translate's encode(): prefix + SentencePiece ids, cut to
    max_positions - 1 (CTranslate2 adds the EOS)."""
    # Ids, then pieces by id: encode(out_type=str) would give an unknown character's own
    # text, not the unk piece, which CTranslate2 maps to unk only by luck of absence.
    return (list(source_prefix) + [sp.id_to_piece(i) for i in sp.encode(line)])[:settings["max_positions"] - 1]


def translate_options(settings, beam, lenpen, limit):
    """translate_batch() keyword arguments for sentences whose limit is `limit`."""
    return dict(beam_size=beam, length_penalty=lenpen, patience=1.0, num_hypotheses=1,
                max_input_length=settings["max_positions"], max_decoding_length=limit,
                min_decoding_length=0, suppress_sequences=[[t] for t in settings["never_generate"]],
                return_end_token=False)


def translate(translator, sp, lines, settings, beam=None, lenpen=None, source_prefix=(), target_prefix=None,
              **batch_options):
    """Detokenized translations of `lines`, in order. `sp`: the SentencePiece model; the
    prefixes: direction_prefixes()'s."""
    beam = settings["eval"]["beam"] if beam is None else beam
    lenpen = settings["eval"]["lenpen"] if lenpen is None else lenpen
    sources = [source_pieces(sp, line, settings, source_prefix) for line in lines]
    groups = defaultdict(list)
    for j, pieces in enumerate(sources):
        if pieces:
            groups[decode_limit(len(pieces), settings)].append(j)
    out = [""] * len(lines)
    for limit, rows in sorted(groups.items()):
        if target_prefix:
            batch_options["target_prefix"] = [list(target_prefix)] * len(rows)
        results = translator.translate_batch([sources[j] for j in rows],
                                             **translate_options(settings, beam, lenpen, limit), **batch_options)
        for j, r in zip(rows, results):
            out[j] = sp.decode([sp.piece_to_id(p) for p in r.hypotheses[0]])
    return out


def positive_int(text):
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def non_negative_int(text):
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


def finite_non_negative(text):
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(text)
    return value


def direction(text):
    if not split_direction(text):
        raise ValueError(text)
    return text


positive_int.__name__, non_negative_int.__name__ = "integer >= 1", "integer >= 0"
direction.__name__ = "direction (SRC-TGT, such as fr-en)"
finite_non_negative.__name__ = "finite number >= 0"


def load_model(model_dir, device, threads):
    """The SentencePiece model and the ctranslate2.Translator of an export."""
    import ctranslate2
    import sentencepiece

    for name in ("spm.model", "model.bin"):
        if not os.path.isfile(os.path.join(model_dir, name)):
            raise BadInput(f"{model_dir}: no {name} there (an incomplete export: run tools/export_ctranslate2.py again)")
    try:
        sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(model_dir, "spm.model"))
    except (OSError, RuntimeError) as e:
        raise BadInput(f"{os.path.join(model_dir, 'spm.model')}: not a SentencePiece model ({e})") from None
    try:
        translator = ctranslate2.Translator(model_dir, device=device, intra_threads=threads)
    except (OSError, RuntimeError, ValueError) as e:
        raise BadInput(f"{model_dir}: CTranslate2 cannot load it ({str(e).strip().splitlines()[0]})") from None
    return sp, translator


def run(args):
    settings = load_settings(args.model)
    source_prefix, target_prefix, zero_shot = direction_prefixes(settings, args.direction, args.zero_shot, args.model)
    lines = read_lines(args.input) if args.input else read_stdin_lines()
    sp, translator = load_model(args.model, args.device, args.threads)
    if zero_shot:
        print(f"{PROG}: {args.direction} is zero-shot: the model was not trained on it (--zero-shot)", file=sys.stderr)
    sys.stdout.reconfigure(encoding="utf-8")
    for hyp in translate(translator, sp, lines, settings, beam=args.beam, lenpen=args.lenpen,
                         source_prefix=source_prefix, target_prefix=target_prefix):
        sys.stdout.write(hyp + "\n")


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="directory written by tools/export_ctranslate2.py")
    parser.add_argument("--beam", type=positive_int, help="beam size (default: the run's eval.beam; 1 = greedy)")
    parser.add_argument("--lenpen", type=finite_non_negative, help="length penalty (default: the run's eval.lenpen)")
    parser.add_argument("--input", help="read sources from this file (plain or gzip) instead of stdin")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"), help="where CTranslate2 runs")
    # CTranslate2's default (0: min(4, cores) OpenMP threads that spin while they wait) is
    # 10-100x slower than 1 thread on a machine whose cores are busy with other work.
    parser.add_argument("--threads", type=non_negative_int, default=1,
                        help="intra_threads (default 1; 0 = CTranslate2's default; above 1 on a busy "
                             "machine, also set OMP_WAIT_POLICY=PASSIVE)")
    parser.add_argument("--direction", type=direction,
                        help="a multilingual export's direction to decode, such as fr-en (needed when it translates "
                             "into several languages)")
    parser.add_argument("--zero-shot", action="store_true",
                        help="allow a direction the multilingual model was not trained on")
    args = parser.parse_args()  # usage errors: argparse's message, exit 2
    return run_cli(PROG, run, args, BadInput)


if __name__ == "__main__":
    sys.exit(main())
