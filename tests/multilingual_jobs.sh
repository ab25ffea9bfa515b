#!/usr/bin/env bash
# Multilingual models (issue 85; data.directions, data.lang_tag) end to end on the first lines of
# Multi30k's four languages:
#   - preprocess: one shard split per direction and split; each language tag "<2xx>" is one
#     control symbol of the joint SentencePiece model, which Python's SentencePiece never produces
#     from text ("<2de>" written in a sentence included); under lang_tag source every source of a
#     direction starts with its target's tag, once, and the rest is Python's encoding of the raw
#     line (h5py); under lang_tag decoder no shard holds a tag, and the manifest gives each
#     direction's decoder start, the tag's id; the vocabulary's sample holds the languages equally;
#   - a bilingual config on the same raw files writes no direction fields (its manifest's keys
#     are today's);
#   - training: per-direction validation losses in metrics.jsonl, which average to valid_loss,
#     and in TensorBoard (valid/loss/de-en, by TensorBoard's own reader); under
#     train.validate_bleu each direction's BLEU too (valid/bleu/de-en), their mean or
#     train.select_direction's chosen;
#     a resume mid-run is bit for bit the run never stopped, and mpirun -np 2 equals -np 1 with
#     update_freq 2, bit for bit;
#   - evaluate --all-directions prints one row per direction and their mean; translate never
#     emits a tag; a direction not trained needs --zero-shot and is reported as zero-shot; a
#     translation job (--output) resumes in its own direction only;
#   - bad input, each one line and exit 2, nothing written: a direction whose files are
#     missing, a language with no files, a direction listed twice, a temperature of 0 or less, a
#     tag that clashes with a piece (an ordinary piece of a reused vocabulary, or a source tag),
#     a language the model never saw (evaluate and translate), a multilingual checkpoint given to a bilingual config and
#     the reverse, a resume whose directions changed;
#   - a corpus named "extra.fr-en" is read in fr-en only; an ensemble decodes a direction.
#   multilingual_jobs.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2
here=$(cd "$(dirname "$0")" && pwd)
multi30k=$(cd "$here/../../shared/data/multi30k" 2> /dev/null && pwd) || { echo "FAIL: no ../shared/data/multi30k"; exit 1; }
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"  # PRE, TRAIN, EVAL, MPIRUN, a scratch working directory, fail, refused, same
export PYTHONPATH="$here"   # shard_pairs.py
TRANS=$build/eval/translate
mkdir raw
for lang in en de fr cs; do
  zcat "$multi30k/train.$lang.gz" | head -n 300 > "raw/train.$lang"
  zcat "$multi30k/val.$lang.gz" | head -n 30 > "raw/val.$lang"
  zcat "$multi30k/test_2016_flickr.$lang.gz" | head -n 30 > "raw/test_2016_flickr.$lang"
done
sed -i '1s/^/<2de> /' raw/train.fr  # the tag's text in a real sentence
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: src_tag, vocab_size: 400, num_shards: 2, max_tokens: 400,
       directions: [de-en, en-de, fr-en, en-fr], lang_tag: source, sampling_temperature: 2}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.1}
schedule: {lr: 0.005, warmup_updates: 10}
train: {max_updates: 12, threads: 1, validate_interval_updates: 6, save_interval_updates: 3, save_dir: run, tensorboard: false}
dist: {deterministic_reduce: true}
eval: {beam: 2}
YAML
"$PRE" --config c.yaml > pre.log 2>&1 || { cat pre.log; fail "preprocess, tags on the source"; }
grep -q "on de 300 of 300, en 300 of 300, fr 300 of 300 lines (data.spm_temperature = equal)" pre.log ||
  { grep "joint" pre.log; fail "the vocabulary's sample is not the languages' equal shares"; }
"$PRE" --config c.yaml data.shard_dir=dec_tag data.lang_tag=decoder > /dev/null 2>&1 || fail "preprocess, tags in the decoder"
"$PRE" --config c.yaml data.shard_dir=bilingual 'data.directions=[]' data.lang_tag=none \
  data.sampling_temperature=off > /dev/null 2>&1 || fail "preprocess, bilingual"
# A corpus named with a direction is read in that direction only, from its prefix's files.
cp raw/train.fr raw/extra.fr && cp raw/train.en raw/extra.en
"$PRE" --config c.yaml data.shard_dir=extra 'data.train_corpora={train: 1, extra.fr-en: 0.5}' > extra.log 2>&1 ||
  { tail -3 extra.log; fail "preprocess with a corpus of one direction"; }
"$python" - <<'PY' || fail "a corpus of one direction"
import json
splits = set(json.load(open("extra/manifest.json"))["splits"])
assert "extra.fr-en" in splits and not any(s.startswith("extra.") and s != "extra.fr-en" for s in splits), splits
assert {f"train.{d}" for d in ("de-en", "en-de", "fr-en", "en-fr")} <= splits, splits
print("ok: extra.fr-en is read in fr-en only; train in every direction")
PY
[ $? = 0 ] || exit 1
"$python" - <<'PY' || fail "the tags in the shards, by h5py and Python's SentencePiece"
import json
import sentencepiece as spm
from shard_pairs import split_pairs as pairs
dirs = ["de-en", "en-de", "fr-en", "en-fr"]
sp = spm.SentencePieceProcessor(model_file="src_tag/spm.model")
tags = {t: sp.piece_to_id(f"<2{t}>") for t in ("en", "de", "fr")}
assert all(i != sp.unk_id() and sp.is_control(i) for i in tags.values()), tags
raw = {f"{s}.{l}": open(f"raw/{s}.{l}", encoding="utf-8").read().splitlines()
       for s in ("train", "val", "test_2016_flickr") for l in ("en", "de", "fr")}
for split in ("train", "val", "test_2016_flickr"):
    for d in dirs:
        src, tgt = d.split("-")
        got = pairs("src_tag", f"{split}.{d}")
        assert len(got) == len(raw[f"{split}.{src}"]), (split, d, len(got))
        for (s, t), a, b in zip(got, raw[f"{split}.{src}"], raw[f"{split}.{tgt}"]):
            assert s[0] == tags[tgt] and not set(tags.values()) & set(s[1:] + t), (split, d, s)
            assert list(s[1:]) == sp.encode(a) and list(t) == sp.encode(b), (split, d, a)
assert "<2de>" in raw["train.fr"][0] and tags["de"] not in sp.encode(raw["train.fr"][0]), "text '<2de>' became the tag"
m = json.load(open("dec_tag/manifest.json"))
sp2 = spm.SentencePieceProcessor(model_file="dec_tag/spm.model")
assert m["directions"] == dirs and m["lang_tag"] == "decoder", m["directions"]
for name, e in m["splits"].items():
    d = name.rsplit(".", 1)[1]
    assert e["direction"] == d and e["decoder_start"] == sp2.piece_to_id("<2" + d.split("-")[1] + ">"), (name, e)
    tag_ids = {sp2.piece_to_id(f"<2{t}>") for t in ("en", "de", "fr")}
    assert not any(tag_ids & set(s + t) for s, t in pairs("dec_tag", name)), f"a tag in {name}'s shards"
b = json.load(open("bilingual/manifest.json"))
assert "directions" not in b and "lang_tag" not in b and not any("direction" in e for e in b["splits"].values())
assert sorted(b["splits"]) == ["test_2016_flickr", "train", "val"], sorted(b["splits"])
print(f"ok: tags {tags} are control symbols, each direction's sources start with their target's tag once "
      f"(and are Python's encoding after it); text '<2de>' encodes as {sp.encode_as_pieces('<2de>')}; "
      "decoder tags are manifest starts, in no shard; a bilingual manifest has no direction fields")
PY
[ $? = 0 ] || exit 1

# Training: per-direction validation, resume bit for bit, -np 2 == -np 1 x update_freq 2.
"$TRAIN" --config c.yaml train.save_dir=straight train.tensorboard=true > straight.log 2>&1 || { tail straight.log; fail "train"; }
"$python" "$here/tensorboard_events.py" straight 1 > /dev/null || fail "TensorBoard's reader does not read metrics.jsonl's scalars"
"$python" - <<'PY' || fail "no per-direction tags in TensorBoard"
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator("straight", size_guidance={"scalars": 0})
acc.Reload()
want = {f"valid/{m}/{d}" for m in ("loss", "nll") for d in ("de-en", "en-de", "fr-en", "en-fr")}
missing = want - set(acc.Tags()["scalars"])
assert not missing, missing
print("ok: TensorBoard's reader shows", ", ".join(sorted(t for t in want if t.startswith("valid/loss/"))))
PY
[ $? = 0 ] || exit 1
"$TRAIN" --config c.yaml train.save_dir=stopped train.max_updates=7 > stop.log 2>&1 || { tail stop.log; fail "train to 7"; }
"$TRAIN" --config c.yaml train.save_dir=stopped --resume auto > resumed.log 2>&1 || { tail resumed.log; fail "resume"; }
same straight/last.pt stopped/last.pt
# Without dropout: its masks are drawn per rank (train.seed and the rank), by design.
"${MPIRUN[@]}" -np 2 "$TRAIN" --config c.yaml model.dropout=0 train.save_dir=np2 > np2.log 2>&1 || { tail -5 np2.log; fail "mpirun -np 2"; }
"$TRAIN" --config c.yaml model.dropout=0 train.update_freq=2 train.save_dir=np1 > np1.log 2>&1 || { tail -5 np1.log; fail "-np 1 update_freq 2"; }
same np2/last.pt np1/last.pt
"$TRAIN" --config c.yaml data.shard_dir=dec_tag data.lang_tag=decoder train.select_direction=en-fr train.save_dir=dec > dec.log 2>&1 || { tail dec.log; fail "train, decoder tags"; }
"$python" - <<'PY' || fail "per-direction validation records"
import json
for run in ("straight", "dec"):
    recs = [json.loads(l) for l in open(f"{run}/metrics.jsonl") if '"valid"' in l]
    assert recs, run
    for r in recs:
        per = [r[f"valid_loss/{d}"] for d in ("de-en", "en-de", "fr-en", "en-fr")]
        if run == "straight":
            assert abs(sum(per) / 4 - r["valid_loss"]) < 1e-12, (run, per, r["valid_loss"])
        else:  # train.select_direction=en-fr
            assert r["valid_loss"] == r["valid_loss/en-fr"] and r["valid_nll"] == r["valid_nll/en-fr"], r
print("ok: valid_loss is the mean of the four directions' losses, or train.select_direction's (decoder tags)")
PY
[ $? = 0 ] || exit 1
grep -q "validation at update 12 | loss [0-9.]* | nll [0-9.]* | ppl [0-9.]* | de-en [0-9.]* en-de [0-9.]* fr-en [0-9.]* en-fr" \
  straight.log || { grep "validation at" straight.log; fail "the validation line lacks the directions"; }
# train.validate_bleu: each direction's greedy BLEU at each validation, in metrics.jsonl, in
# TensorBoard and on the one log line; the selected BLEU is their mean, or select_direction's.
"$TRAIN" --config c.yaml train.save_dir=bleu train.max_updates=6 train.validate_bleu=true train.tensorboard=true \
  > bleu.log 2>&1 || { tail bleu.log; fail "train with train.validate_bleu"; }
"$TRAIN" --config c.yaml train.save_dir=bleu_fr train.max_updates=6 train.validate_bleu=true train.select_direction=en-fr \
  > bleu_fr.log 2>&1 || { tail bleu_fr.log; fail "train with train.validate_bleu and select_direction"; }
"$python" - <<'PY' || fail "per-direction validation BLEU"
import json
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
dirs = ("de-en", "en-de", "fr-en", "en-fr")
for run in ("bleu", "bleu_fr"):
    recs = [json.loads(l) for l in open(f"{run}/metrics.jsonl") if '"valid"' in l]
    assert recs, run
    for r in recs:
        per = [r[f"valid_bleu/{d}"] for d in dirs]
        assert all(0 <= b <= 100 for b in per), (run, per)
        want = r["valid_bleu/en-fr"] if run == "bleu_fr" else sum(per) / 4
        assert abs(r["valid_bleu"] - want) < 1e-9, (run, per, r["valid_bleu"])
acc = EventAccumulator("bleu", size_guidance={"scalars": 0})
acc.Reload()
missing = {f"valid/bleu/{d}" for d in dirs} - set(acc.Tags()["scalars"])
assert not missing, missing
print("ok: valid_bleu/<direction> for the four directions (TensorBoard: valid/bleu/<direction>); "
      "valid_bleu is their mean, or train.select_direction's")
PY
[ $? = 0 ] || exit 1
[ "$(grep -c "validation at update 6 | loss [0-9.]* | nll [0-9.]* | ppl [0-9.]* | bleu [0-9.]* | de-en [0-9.]*/[0-9.]* en-de [0-9.]*/[0-9.]* fr-en [0-9.]*/[0-9.]* en-fr [0-9.]*/[0-9.]*" bleu.log)" = 1 ] ||
  { grep "validation at" bleu.log; fail "the validation line lacks each direction's BLEU"; }

# Evaluate and translate choose the direction.
"$EVAL" --config c.yaml --checkpoint straight/last.pt --split val --all-directions > table.txt 2> err.txt ||
  { cat err.txt; fail "evaluate --all-directions"; }
[ "$(grep -cE '^(de-en|en-de|fr-en|en-fr) ' table.txt)" = 4 ] && grep -q "^mean " table.txt ||
  { cat table.txt; fail "the table lacks a direction or the mean"; }
"$EVAL" --config c.yaml --checkpoint straight/last.pt --split val --direction fr-en --beam 1 --output fr-en.hyp > one.txt 2>&1 ||
  { cat one.txt; fail "evaluate --direction fr-en"; }
for run_dir in straight:src_tag:source dec:dec_tag:decoder; do
  IFS=: read -r run shards tag <<< "$run_dir"
  "$TRANS" --config c.yaml data.shard_dir=$shards data.lang_tag=$tag --checkpoint $run/last.pt --direction en-de --nbest 2 --beam 2 \
    --input raw/val.en > $run.de 2> err.txt || { cat err.txt; fail "translate en-de ($run)"; }
  ! grep -q "<2" $run.de || fail "a tag emitted ($run)"
  [ "$(wc -l < $run.de)" = 60 ] || fail "translate gave $(wc -l < $run.de) n-best lines ($run)"
done
"$TRANS" --config c.yaml --checkpoint straight/last.pt --checkpoint straight/update_6.pt --direction en-fr \
  --input raw/val.en > ensemble.fr 2> err.txt || { cat err.txt; fail "translate with an ensemble"; }
[ "$(wc -l < ensemble.fr)" = 30 ] && ! grep -q "<2" ensemble.fr || fail "the ensemble's translations"
"$TRANS" --config c.yaml --checkpoint straight/last.pt --direction fr-de --zero-shot --input raw/val.fr > zs.de 2> zs.err ||
  { cat zs.err; fail "translate zero-shot"; }
grep -q "fr-de is zero-shot" zs.err || fail "zero-shot not reported"
echo "ok: evaluate --all-directions (4 rows and the mean), --direction; translate never emits a tag; zero-shot reported"

# A translation job (--output) resumes only in the direction it started in.
for i in 1 2 3 4 5 6; do cat raw/val.en; done > job.en
JOB=("$TRANS" --config c.yaml --checkpoint straight/last.pt --input job.en --chunk-lines 2)
"${JOB[@]}" --direction en-de --output job_ref.de 2> job.err || { tail -3 job.err; fail "the job, uninterrupted"; }
"${JOB[@]}" --direction en-de --output job.de > /dev/null 2>&1 &
pid=$!
for _ in $(seq 600); do [ "$(find job.de.parts -name 'chunk_*' 2> /dev/null | wc -l)" -ge 2 ] && break; sleep 0.05; done
kill -9 $pid; wait $pid 2> /dev/null
[ -d job.de.parts ] && [ ! -e job.de ] || fail "the job was not stopped midway"
refused "a job resumed in another direction" 'a decoding setting changed (direction: was "en-de", now "en-fr")' \
  "${JOB[@]}" --direction en-fr --output job.de
"${JOB[@]}" --direction en-de --output job.de 2> /dev/null || fail "the job resumed in its direction"
cmp job_ref.de job.de || fail "the resumed job's output differs from the uninterrupted one"
echo "ok: a job stopped midway resumes in its direction to the uninterrupted output; another direction is refused"

# Bad input: one line, exit 2, nothing written.
refused "a direction not trained" "not a direction the model was trained on (de-en, en-de, fr-en, en-fr); decode it zero-shot" \
  "$TRANS" --config c.yaml --checkpoint straight/last.pt --direction fr-de --input raw/val.fr
refused "a language never seen" "the model never translated into 'cs'" \
  "$EVAL" --config c.yaml --checkpoint straight/last.pt --direction en-cs
refused "translating into a language never seen" "the model never translated into 'cs'" \
  "$TRANS" --config c.yaml --checkpoint straight/last.pt --direction en-cs --input raw/val.en
refused "translating into a language never seen, zero-shot" "the model never translated into 'cs'" \
  "$TRANS" --config c.yaml --checkpoint straight/last.pt --direction fr-cs --zero-shot --input raw/val.fr
refused "a multilingual checkpoint given to a bilingual config" "a multilingual [de-en, en-de, fr-en, en-fr] model" \
  "$TRANS" --config c.yaml data.shard_dir=bilingual 'data.directions=[]' data.lang_tag=none data.src_lang=de \
  data.tgt_lang=en --checkpoint straight/last.pt --input raw/val.de
"$TRAIN" --config c.yaml data.shard_dir=bilingual 'data.directions=[]' data.lang_tag=none train.max_updates=2 \
  train.save_dir=bi > bi.log 2>&1 || { tail bi.log; fail "train the bilingual model"; }
refused "a bilingual checkpoint given to a multilingual config" "a bilingual model (data.directions), but the config is multilingual" \
  "$TRANS" --config c.yaml data.shard_dir=bilingual --checkpoint bi/last.pt --input raw/val.de
refused "--all-directions with --output" "--all-directions scores --split val or test of every direction" \
  "$EVAL" --config c.yaml --checkpoint straight/last.pt --all-directions --output all.txt
[ ! -e all.txt ] || fail "--all-directions with --output wrote all.txt"
"$TRANS" --config c.yaml --checkpoint straight/last.pt --direction deen < /dev/null > out.txt 2> err.txt
[ $? = 2 ] && grep -q -- "--direction: must be SRC-TGT, such as fr-en" err.txt || { cat err.txt; fail "--direction deen"; }
echo "ok: refused --direction deen: $(head -1 err.txt)"
cp -r stopped changed && rm -f changed/last.pt changed/update_12.pt changed/update_9.pt
"$PRE" --config c.yaml 'data.directions=[de-en, en-de]' data.shard_dir=two > /dev/null 2>&1 || fail "preprocess two directions"
ls -l --time-style=+%s.%N changed > changed.before
refused "a resume whose directions changed" "a multilingual [de-en, en-de, fr-en, en-fr] model (data.directions), but the config is multilingual [de-en, en-de]" \
  "$TRAIN" --config c.yaml 'data.directions=[de-en, en-de]' data.shard_dir=two train.save_dir=changed --resume auto
ls -l --time-style=+%s.%N changed | cmp -s - changed.before || fail "a refused resume with other directions changed changed/"
pre_refused() {  # NAME TEXT ARGS...: preprocess refuses, and writes no shard directory
  local name=$1 want=$2; shift 2
  refused "$name" "$want" "$PRE" --config c.yaml data.shard_dir=refused "$@"
  [ ! -e refused ] || fail "$name: refused/ was written"
}
rm raw/train.cs  # cs keeps its val and test files
pre_refused "a direction whose files are missing" "missing raw files: raw/train.cs[.gz] (en-cs)" 'data.directions=[de-en, en-cs]'
rm raw/*.cs
pre_refused "a language code with no files" "language 'cs' has no files in data.raw_dir" 'data.directions=[de-en, en-cs]'
pre_refused "a direction listed twice" "direction 'de-en' is listed twice" 'data.directions=[de-en, en-de, de-en]'
pre_refused "a temperature of 0" "must be a number > 0 (and <= 1e6), or off" data.sampling_temperature=0
pre_refused "a negative temperature" "must be a number > 0 (and <= 1e6), or off" data.sampling_temperature=-1
pre_refused "a vocabulary temperature of 0" "or equal" data.spm_temperature=0
pre_refused "a language tag a reused vocabulary lacks" "data.lang_tag: '<2de>' is not a symbol of the SentencePiece model" \
  data.spm_model=bilingual/spm.model
"$python" - <<'PY' || fail "train a vocabulary whose <2en> is an ordinary piece"
import sentencepiece as spm
spm.SentencePieceTrainer.train(input="raw/train.en,raw/train.de,raw/train.fr", model_prefix="ordinary", vocab_size=400,
                               pad_id=0, unk_id=1, bos_id=2, eos_id=3, user_defined_symbols=["<2en>", "<2de>", "<2fr>"],
                               minloglevel=2)
PY
pre_refused "a language tag that is an ordinary piece of a reused vocabulary" "data.lang_tag: '<2de>' is an ordinary piece" \
  data.spm_model=ordinary.model
pre_refused "a language tag that is also a source tag" "is the language tag of target language 'en'" \
  'data.train_corpora={train: 1, train2: 1}' 'data.source_tags={train2: "<2en>"}'
pre_refused "a vocabulary temperature for one direction" "data.spm_temperature' = '2' (command line 'data.spm_temperature=2'): needs data.directions" \
  'data.directions=[]' data.lang_tag=none data.sampling_temperature=off data.spm_temperature=2
pre_refused "a direction without a training corpus" "config key 'data.directions' = 'de-en'" \
  'data.train_corpora={extra.fr-en: 1}'
grep -q "has no training corpus: every data.train_corpora name is restricted to another direction" err.txt || fail "no-corpus message"
pre_refused "a corpus read twice in one direction" "shard split 'train.de-en' would be made twice" \
  'data.train_corpora={train: 1, train.de-en: 1}'
pre_refused "a corpus restricted to a pair not trained" "names direction 'fr-de', which is not one of data.directions" \
  'data.train_corpora={train: 1, extra.fr-de: 1}'
refused "noisy-channel reranking of a multilingual model" "noisy-channel reranking scores one direction's reverse model" \
  "$EVAL" --config c.yaml --checkpoint stopped/last.pt eval.channel_checkpoint=stopped/last.pt --split val
refused "a bilingual config on multilingual shards (train)" "config key 'data.directions' = [] but src_tag/manifest.json records [de-en, en-de, fr-en, en-fr]" \
  "$TRAIN" --config c.yaml 'data.directions=[]' data.lang_tag=none data.sampling_temperature=off train.save_dir=bi_on_multi
! compgen -G 'bi_on_multi/*.pt' > /dev/null && [ ! -s bi_on_multi/metrics.jsonl ] || { ls -la bi_on_multi; fail "a refused run wrote a checkpoint or metrics"; }
cp -r stopped selection && rm -f selection/last.pt selection/update_12.pt selection/update_9.pt
ls -l --time-style=+%s.%N selection > selection.before
refused "a resume whose train.select_direction changed" "its best checkpoint and early stopping follow the mean over its directions (train.select_direction=''), this run's would follow de-en" \
  "$TRAIN" --config c.yaml train.save_dir=selection train.select_direction=de-en --resume auto
ls -l --time-style=+%s.%N selection | cmp -s - selection.before || fail "a refused resume changed selection/"
echo "PASS multilingual"
