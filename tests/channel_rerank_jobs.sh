#!/usr/bin/env bash
# Noisy-channel reranking (eval.channel_checkpoint, eval/channel.h) end to end on the toy
# corpus: a de->en model and an en->de channel of another shape, trained on one vocabulary.
# The channel's log p(x|y) that translate adds (printed n-best scores with and without it, at
# lenpen 0) equals PyTorch's on the same weights (bench/pytorch_reference.py's model), the
# n-best comes back ranked by the combined score, weight 0 keeps the search's ranking, and
# bad channels are refused before anything is decoded.
#   channel_rerank_jobs.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"  # PRE, TRAIN, EVAL, a scratch working directory, fail
TRANSLATE=$build/eval/translate
"$python" "$here/make_toy_corpus.py" raw 300
cat > fwd.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: fwd, vocab_size: 40, num_shards: 1, max_tokens: 200}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0, pre_norm: true}
schedule: {lr: 0.005, warmup_updates: 10}
train: {max_updates: 60, threads: 1, validate_interval_updates: 60, save_dir: fwd_run, tensorboard: false}
eval: {lenpen: 0.0}
YAML
"$PRE" --config fwd.yaml > /dev/null 2>&1 || fail "preprocess de->en"
rev=(data.src_lang=en data.tgt_lang=de data.shard_dir=rev data.spm_model=fwd/spm.model train.save_dir=rev_run
     model.ffn_dim=48 model.encoder_layers=2)
"$PRE" --config fwd.yaml "${rev[@]}" > /dev/null 2>&1 || fail "preprocess en->de"
"$TRAIN" --config fwd.yaml > fwd_train.log 2>&1 || { tail fwd_train.log; fail "train de->en"; }
"$TRAIN" --config fwd.yaml "${rev[@]}" > rev_train.log 2>&1 || { tail rev_train.log; fail "train en->de"; }
head -n 12 raw/val.de > src.txt
"$TRANSLATE" --config fwd.yaml --checkpoint fwd_run/last.pt --beam 4 --nbest 4 --input src.txt > plain.nbest ||
  fail "translate without a channel"
"$TRANSLATE" --config fwd.yaml --checkpoint fwd_run/last.pt --beam 4 --nbest 4 --input src.txt \
  --channel rev_run/last.pt --channel-weight 1 > channel.nbest || fail "translate with the channel"
"$python" - "$here/../bench" <<'PY' || fail "channel scores against PyTorch"
import collections, sys, torch
sys.path.insert(0, sys.argv[1])
import pytorch_reference as R
import sentencepiece as spm
sp = spm.SentencePieceProcessor(model_file="fwd/spm.model")
data = R.Shards("fwd", "val")
pad, bos, eos = data.special["pad"], data.special["bos"], data.special["eos"]
def model(path, ffn, layers):
    m = R.Transformer(data.vocab, 32, 4, ffn, layers, 1, 0.0, pad, True)
    m.load_state_dict(torch.load(path, weights_only=True)["model"], strict=True)
    return m.eval()
def logp(m, src, tgt):  # log p(tgt + EOS | src + EOS), teacher-forced, one sentence
    s = torch.tensor([src + [eos]]); tin = torch.tensor([[bos] + tgt]); tout = torch.tensor(tgt + [eos])
    with torch.no_grad():
        return torch.log_softmax(m(s, tin)[0].double(), -1).gather(-1, tout[:, None]).sum().item()
fwd, chan = model("fwd_run/last.pt", 64, 1), model("rev_run/last.pt", 48, 2)
def read(path):
    out = collections.defaultdict(list)
    for line in open(path):
        i, text, score = line.rstrip("\n").split(" ||| ")
        out[int(i)].append((text, float(score)))
    return out
plain, reranked = read("plain.nbest"), read("channel.nbest")
sources = [l.rstrip("\n") for l in open("src.txt")]
checked = 0
for i, src_text in enumerate(sources):
    assert sorted(t for t, _ in plain[i]) == sorted(t for t, _ in reranked[i]), (i, plain[i], reranked[i])
    scores = [s for _, s in reranked[i]]
    assert scores == sorted(scores, reverse=True), (i, scores)
    direct = dict(plain[i])
    x = sp.encode(src_text)
    for text, combined in reranked[i]:
        y = sp.encode(text)
        if abs(logp(fwd, x, y) - direct[text]) > 1e-3:
            continue  # the search's pieces were not SentencePiece's own segmentation of the text
        channel = combined - direct[text]
        want = logp(chan, y, x)
        assert abs(channel - want) < 1e-3, (i, text, channel, want)
        checked += 1
total = sum(len(v) for v in reranked.values())
assert checked >= total // 2, (checked, total)
print(f"ok: log p(x|y) of {checked} of {total} hypotheses equal PyTorch's within 1e-3; each n-best ranked by the combined score")
PY
[ $? = 0 ] || exit 1
"$TRANSLATE" --config fwd.yaml --checkpoint fwd_run/last.pt --beam 4 --input src.txt eval.lenpen=1.0 > a.txt &&
  "$TRANSLATE" --config fwd.yaml --checkpoint fwd_run/last.pt --beam 4 --input src.txt eval.lenpen=1.0 \
    --channel rev_run/last.pt --channel-weight 0 > b.txt || fail "translate at weight 0"
cmp -s a.txt b.txt || fail "weight 0 changed the output"
"$EVAL" --config fwd.yaml --checkpoint fwd_run/last.pt --split val --channel rev_run/last.pt > eval.txt 2>&1 &&
  grep -q "^BLEU = " eval.txt || { cat eval.txt; fail "evaluate with the channel"; }
echo "ok: weight 0 keeps the search's output; evaluate scores with the channel"
# Bad channels: one line, exit 2, nothing on stdout.
refuse() {  # refuse WHAT PATTERN ARGS...: translate must exit 2 with PATTERN on stderr
  local what=$1 pattern=$2; shift 2
  out=$("$TRANSLATE" --config fwd.yaml --checkpoint fwd_run/last.pt --input src.txt "$@" 2> err.txt); rc=$?
  [ $rc = 2 ] && [ -z "$out" ] && grep -q -- "$pattern" err.txt || { cat err.txt; fail "$what: exit $rc"; }
  echo "ok: $what refused: $(head -c 200 err.txt)"
}
refuse "a channel of the same direction" "trained for de->en, but the channel of de->en decoding must translate en->de" \
  --channel fwd_run/last.pt
refuse "a missing channel" "eval.channel_checkpoint.*file does not exist" --channel nowhere.pt
"$PRE" --config fwd.yaml "${rev[@]}" data.shard_dir=rev36 data.spm_model= data.vocab_size=36 > /dev/null 2>&1 ||
  fail "preprocess a 36-piece vocabulary"
"$TRAIN" --config fwd.yaml "${rev[@]}" data.shard_dir=rev36 data.spm_model= data.vocab_size=36 train.max_updates=2 \
  train.save_dir=rev36_run > /dev/null 2>&1 || fail "train on it"
refuse "a channel of another vocabulary" "vocab_sha256" --channel rev36_run/last.pt
refuse "a negative weight" "channel-weight" --channel rev_run/last.pt --channel-weight -1
refuse "a NaN weight" "channel-weight" --channel rev_run/last.pt --channel-weight nan
# evaluate refuses a bad channel before decoding, and leaves an existing --output as it was.
echo "earlier hypotheses" > kept.hyp
"$EVAL" --config fwd.yaml --checkpoint fwd_run/last.pt --split val --output kept.hyp --channel fwd_run/last.pt \
  > eval_err.txt 2>&1; rc=$?
[ $rc = 2 ] && grep -q "must translate en->de" eval_err.txt && [ "$(cat kept.hyp)" = "earlier hypotheses" ] ||
  { cat eval_err.txt; fail "evaluate with a channel of the same direction: exit $rc, kept.hyp: $(head -c 100 kept.hyp)"; }
echo "ok: evaluate refused it too: $(head -c 160 eval_err.txt); kept.hyp unchanged"
