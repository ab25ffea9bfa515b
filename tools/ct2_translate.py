"""Translates with a model written by tools/export_ctranslate2.py the way our
`translate` does (eval/translator.cpp, eval/search.cpp), with ctranslate2.Translator:

  python tools/ct2_translate.py --model DIR [--beam K] [--lenpen P] [--input FILE] [--device D] [--threads N] < source > hypotheses

What makes CTranslate2 decode as ours (the figures come from DIR/nmtrain.json, which the
exporter writes from the run's eval section):
  * source ids = SentencePiece ids, cut to max_positions - 1, then EOS: CTranslate2 adds
    the EOS itself (config add_source_eos); the decoder starts from BOS (decoder_start_token);
  * per sentence at most int(max_len_a * (source pieces + 1)) + max_len_b pieces, capped at
    max_positions - 1. CTranslate2 takes one max_decoding_length per call, so sentences are
    grouped by their limit;
  * EOS may come first (min_decoding_length=0; CTranslate2's default 1 forbids it);
  * pad and BOS are never generated (suppress_sequences);
  * hypotheses ranked by log-probability / (pieces + 1)^lenpen: CTranslate2 counts the EOS
    in the length as we do (length_penalty=lenpen); beam search stops once beam hypotheses
    have finished (patience=1);
  * an empty source gives an empty translation without running the model.
Beam search still differs where ours finalizes an EOS below the k best candidates, or a
sentence reaches its limit (tools/README.md); greedy search is the same."""
import argparse
import gzip
import json
import os
import sys
from collections import defaultdict

SETTINGS_FILE = "nmtrain.json"


def load_settings(model_dir):
    with open(os.path.join(model_dir, SETTINGS_FILE), encoding="utf-8") as f:
        return json.load(f)


def read_lines(path):
    """data::read_lines(): plain or gzip, split at "\\n", a trailing "\\r" dropped (not
    str.splitlines(), which also splits at Unicode separators our reader keeps)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    lines = raw.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [l[:-1] if l.endswith("\r") else l for l in lines]


def decode_limit(source_pieces, settings):
    """eval/search.cpp max_lengths(): the source length there counts the EOS."""
    e = settings["eval"]
    limit = int(e["max_len_a"] * float(source_pieces + 1)) + int(e["max_len_b"])
    return max(1, min(limit, settings["max_positions"] - 1))


def translate_options(settings, beam, lenpen, limit):
    """translate_batch() keyword arguments for sentences whose limit is `limit`."""
    return dict(beam_size=beam, length_penalty=lenpen, patience=1.0, num_hypotheses=1,
                max_input_length=settings["max_positions"], max_decoding_length=limit,
                min_decoding_length=0, suppress_sequences=[[t] for t in settings["never_generate"]],
                return_end_token=False)


def translate(translator, sp, lines, settings, beam=None, lenpen=None, **batch_options):
    """Detokenized translations of `lines`, in order. `sp`: the SentencePiece model."""
    beam = settings["eval"]["beam"] if beam is None else beam
    lenpen = settings["eval"]["lenpen"] if lenpen is None else lenpen
    keep = settings["max_positions"] - 1
    # Ids, then pieces by id: encode(out_type=str) would give an unknown character's own
    # text, not the unk piece, which CTranslate2 maps to unk only by luck of absence.
    sources = [[sp.id_to_piece(i) for i in sp.encode(line)[:keep]] for line in lines]
    groups = defaultdict(list)
    for j, pieces in enumerate(sources):
        if pieces:
            groups[decode_limit(len(pieces), settings)].append(j)
    out = [""] * len(lines)
    for limit, rows in sorted(groups.items()):
        results = translator.translate_batch([sources[j] for j in rows],
                                             **translate_options(settings, beam, lenpen, limit), **batch_options)
        for j, r in zip(rows, results):
            out[j] = sp.decode([sp.piece_to_id(p) for p in r.hypotheses[0]])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="directory written by tools/export_ctranslate2.py")
    parser.add_argument("--beam", type=int, help="beam size (default: the run's eval.beam; 1 = greedy)")
    parser.add_argument("--lenpen", type=float, help="length penalty (default: the run's eval.lenpen)")
    parser.add_argument("--input", help="read sources from this file instead of stdin")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    # CTranslate2's default (0: min(4, cores) OpenMP threads that spin while they wait) is
    # 10-100x slower than 1 thread on a machine whose cores are busy with other work.
    parser.add_argument("--threads", type=int, default=1,
                        help="intra_threads (default 1; 0 = CTranslate2's default; above 1 on a busy "
                             "machine, also set OMP_WAIT_POLICY=PASSIVE)")
    args = parser.parse_args()

    if not os.path.isfile(os.path.join(args.model, SETTINGS_FILE)):
        print(f"ct2_translate: error: {args.model}: no {SETTINGS_FILE} there (not written by "
              "tools/export_ctranslate2.py)", file=sys.stderr)
        return 2
    import ctranslate2
    import sentencepiece

    settings = load_settings(args.model)
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(args.model, "spm.model"))
    translator = ctranslate2.Translator(args.model, device=args.device, intra_threads=args.threads)
    if args.input:
        lines = read_lines(args.input)
    else:  # std::getline on stdin: split at "\n" only
        sys.stdin.reconfigure(encoding="utf-8")
        lines = sys.stdin.read().split("\n")
        if lines[-1] == "":
            lines.pop()
    sys.stdout.reconfigure(encoding="utf-8")
    for hyp in translate(translator, sp, lines, settings, beam=args.beam, lenpen=args.lenpen):
        sys.stdout.write(hyp + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
