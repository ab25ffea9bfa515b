#!/usr/bin/env bash
# Export a multilingual model to CTranslate2 (issue 85): a tiny model trained here on de-en,
# de-fr and en-de, once with data.lang_tag source (the tag in front of the source) and once with
# decoder (the tag as the decoder's first token), is exported with tools/export_ctranslate2.py and
# translated by our `translate --direction` and by tools/ct2_translate.py --direction: greedy
# must agree on every line in two trained directions and one zero-shot direction, and
# CTranslate2's forced scores equal the PyTorch reference's with the tag where training put it.
# bench/decode --direction on the same model (ours and CTranslate2 the same lines). Also the
# refusals of ct2_translate.py's --direction, bench/decode's and the exporter's (one line, exit 2).
#   ctranslate2_multilingual.sh BUILD_DIR PYTHON
set -uo pipefail
build=$1 python=$2
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../tools" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
TRANS=$build/eval/translate
EXPORT=("$python" "$tools/export_ctranslate2.py")
CT2=("$python" "$tools/ct2_translate.py")
"$python" -c "import ctranslate2, sentencepiece, sacrebleu" 2> /dev/null \
  || fail "$python lacks ctranslate2, sentencepiece or sacrebleu (launch/setup.sh installs them)"

# The word-for-word toy task of tests/make_toy_corpus.py, and a third language "fr": the English
# side word for word in other words. No label smoothing (tests/ctranslate2_export.sh says why).
"$python" "$here/make_toy_corpus.py" raw 2000
"$python" - <<'PY' || fail "writing the fr side"
import glob
fr = dict(zip("a dog runs in park two children play with ball".split(),
              "un chien court dans jardin deux enfants jouent avec balle".split()))
for path in glob.glob("raw/*.en"):
    with open(path) as f, open(path[:-3] + ".fr", "w") as g:
        g.writelines(" ".join(fr.get(w, w) for w in line.split()) + "\n" for line in f)
PY
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 64, num_shards: 1, max_tokens: 400,
       directions: [de-en, de-fr, en-de], lang_tag: source}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0}
optim: {label_smoothing: 0.0}
schedule: {type: inverse_sqrt, lr: 0.003, warmup_updates: 50}
train: {max_updates: 2000, threads: 1, log_interval: 1000, validate_interval_updates: 2000, save_interval_updates: 2000, save_dir: run}
YAML
# Sources: the validation and test sets and 160 training sentences (200 lines) of each source
# language; the references of de-en for the forced scores.
for l in de en fr; do
  cat raw/val.$l raw/test_2016_flickr.$l > src.$l && head -160 raw/train.$l >> src.$l
done

# check_mode TAG SHARDS RUN: preprocess, train, export to ct2_TAG and compare (overrides: the mode's).
check_mode() {
  local tag=$1 shards=$2 run=$3 d
  local over=(data.lang_tag="$tag" data.shard_dir="$shards" train.save_dir="$run")
  "$PRE" --config c.yaml "${over[@]}" > /dev/null 2>&1 || fail "preprocess ($tag)"
  SECONDS=0
  "$TRAIN" --config c.yaml "${over[@]}" > "train_$tag.log" 2>&1 || { tail -5 "train_$tag.log"; fail "train ($tag)"; }
  echo "ok: lang_tag $tag: trained in ${SECONDS}s: $(grep -o 'validation at update.*' "train_$tag.log" | tail -1)"
  "${EXPORT[@]}" --checkpoint "$run/last.pt" --output "ct2_$tag" --shard-dir "$shards" > export.log 2>&1 \
    || { cat export.log; fail "export ($tag)"; }
  grep -q "directions de-en, de-fr, en-de (lang_tag $tag)" export.log || { cat export.log; fail "the export's line"; }
  "$python" - "ct2_$tag" "$tag" <<'PY' || fail "ct2_$tag records the wrong directions, tags or start token"
import json, sys
out, tag = sys.argv[1:3]
s, c = json.load(open(f"{out}/nmtrain.json")), json.load(open(f"{out}/config.json"))
assert s["directions"] == ["de-en", "de-fr", "en-de"] and s["lang_tag"] == tag, s
assert s["language_tags"] == {"de": "<2de>", "en": "<2en>", "fr": "<2fr>"}, s
assert s["never_generate"] == ["<pad>", "<s>", "<2de>", "<2en>", "<2fr>"], s["never_generate"]
# decoder: no fixed start token; ct2_translate.py gives the tag as target_prefix.
assert c["decoder_start_token"] == (None if tag == "decoder" else "<s>"), c
print(f"ok: {out}/nmtrain.json: directions {', '.join(s['directions'])}, lang_tag {tag}; "
      f"config.json decoder_start_token {c['decoder_start_token']}")
PY
  # de-en and de-fr (the same sources, only the tag differs) and en-fr, which is zero-shot.
  for d in de-en de-fr en-fr; do
    local zs=() src=${d%-*}
    [ "$d" = en-fr ] && zs=(--zero-shot)
    "$TRANS" --config c.yaml --checkpoint "$run/last.pt" --beam 1 --direction "$d" "${zs[@]}" --input "src.$src" \
      "${over[@]}" > "ours_$tag.$d" 2> err.txt || { cat err.txt; fail "translate --direction $d ($tag)"; }
    "${CT2[@]}" --model "ct2_$tag" --beam 1 --direction "$d" "${zs[@]}" --input "src.$src" > "ct2_$tag.$d" 2> err.txt \
      || { cat err.txt; fail "ct2_translate.py --direction $d ($tag)"; }
    if [ "$d" = en-fr ]; then
      grep -q "en-fr is zero-shot" err.txt || { cat err.txt; fail "ct2_translate.py does not say en-fr is zero-shot"; }
    fi
  done
  "$python" - "$tag" <<'PY' || fail "CTranslate2 does not decode ct2_$1 as our translate"
import sys
import sacrebleu
tag = sys.argv[1]
read = lambda p: open(p, encoding="utf-8").read().split("\n")[:-1]
ok = True
for d in ("de-en", "de-fr", "en-fr"):
    ours, ct2, ref = read(f"ours_{tag}.{d}"), read(f"ct2_{tag}.{d}"), read(f"src.{d[-2:]}")
    assert len(ours) == len(ct2) == len(ref), (len(ours), len(ct2), len(ref))
    same = sum(a == b for a, b in zip(ours, ct2))
    bleu = sacrebleu.corpus_bleu(ours, [ref], force=True).score
    print(f"{'ok' if same == len(ours) else 'FAIL'}: lang_tag {tag}: {d}: greedy identical lines {same}/{len(ours)}; "
          f"BLEU {bleu:.2f}")
    if same != len(ours):
        ok = False
        for i, (a, b) in enumerate(zip(ours, ct2)):
            if a != b:
                print(f"  line {i + 1}: ours '{a}' | CTranslate2 '{b}'")
# The tag must choose the language: de-en and de-fr translate the same sources into other words.
en, fr = read(f"ct2_{tag}.de-en"), read(f"ct2_{tag}.de-fr")
differ = sum(a != b for a, b in zip(en, fr))
print(f"{'ok' if differ >= 0.9 * len(en) else 'FAIL'}: lang_tag {tag}: de-en and de-fr differ on {differ}/{len(en)} lines")
ok &= differ >= 0.9 * len(en)
raise SystemExit(0 if ok else 1)
PY
  "$python" "$here/ct2_forced_scores.py" "$run/last.pt" "ct2_$tag" "$shards/spm.model" src.de src.fr \
    "$shards/manifest.json" "$tag" "<2fr>" || fail "CTranslate2 does not score ct2_$tag as the model"
}
check_mode source shards run
check_mode decoder shards_dec run_dec

# bench/decode times a multilingual model in --direction: ours and CTranslate2 write the same
# lines there, but for the few that reach our per-sentence length limit (bench/decode gives
# CTranslate2 the largest one for all, as its users call it); a direction it was not trained on
# is refused before anything is timed.
BENCH=("$python" "$here/../bench/decode" --config c.yaml --checkpoint run/last.pt --ct2-model ct2_source
       --source src.de --beams 1 --rounds 1 --threads 1 --translate "$TRANS")
"${BENCH[@]}" --direction de-fr > bench.json 2> bench.err || { tail -3 bench.err; fail "bench/decode --direction de-fr"; }
"$python" - "$(wc -l < src.de)" <<'PY' || fail "bench/decode --direction de-fr: ours and CTranslate2 differ"
import json, sys
r, n = json.loads(open("bench.json").read().splitlines()[-1]), int(sys.argv[1])
assert r["beam"] == 1 and r["sentences"] == n and r["identical_lines"] >= 0.99 * n, r
print(f"ok: bench/decode --direction de-fr: {r['identical_lines']}/{n} lines identical to CTranslate2's")
PY
[ $? = 0 ] || exit 1
refused "bench/decode in a direction not trained" \
  "decode: error: direction en-fr: not a direction the model was trained on (de-en, de-fr, en-de)" \
  "${BENCH[@]}" --direction en-fr

# An empty line: under lang_tag source the model still reads the tag (ours translates it), under
# decoder it is an empty translation without a model run, as ours.
printf 'Hund\n\nein Ball\n' > empty.de
for tag in source decoder; do
  shards=shards run=run
  [ $tag = decoder ] && shards=shards_dec run=run_dec
  "$TRANS" --config c.yaml --checkpoint $run/last.pt --beam 1 --direction de-fr --input empty.de \
    data.lang_tag=$tag data.shard_dir=$shards > ours.empty 2> err.txt || { cat err.txt; fail "translate empty.de ($tag)"; }
  "${CT2[@]}" --model ct2_$tag --beam 1 --direction de-fr --input empty.de > ct2.empty 2> err.txt \
    || { cat err.txt; fail "ct2_translate.py empty.de ($tag)"; }
  cmp -s ours.empty ct2.empty || { paste ours.empty ct2.empty; fail "an empty line ($tag) differs"; }
  echo "ok: lang_tag $tag: empty line as ours: '$(sed -n 2p ct2.empty)'"
done

# One target language needs no --direction: the export with its directions cut to de-en.
cp -r ct2_decoder ct2_one
"$python" - <<'PY' || fail "editing ct2_one/nmtrain.json"
import json
s = json.load(open("ct2_one/nmtrain.json"))
s["directions"] = ["de-en"]
json.dump(s, open("ct2_one/nmtrain.json", "w"))
PY
"${CT2[@]}" --model ct2_one --beam 1 --input src.de > one.txt 2> err.txt || { cat err.txt; fail "ct2_one without --direction"; }
cmp -s one.txt ct2_decoder.de-en || fail "one target language without --direction is not de-en"
echo "ok: an export into one language translates without --direction"

# ct2_translate.py's refusals: one line, exit 2 (usage errors: argparse's last line).
refused "no --direction for an export into 3 languages" \
  "ct2_source: a multilingual export translating into 3 languages (de-en, de-fr, en-de): give --direction SRC-TGT" \
  "${CT2[@]}" --model ct2_source --input src.de
refused "an untrained direction without --zero-shot" \
  "direction en-fr: not a direction the model was trained on (de-en, de-fr, en-de); decode it zero-shot with --zero-shot" \
  "${CT2[@]}" --model ct2_decoder --direction en-fr --input src.en
refused "a target language the model never translated into" "direction de-cs: the model never translated into 'cs'" \
  "${CT2[@]}" --model ct2_source --direction de-cs --zero-shot --input src.de
refused "a source language the model never saw" "direction cs-en: the model never saw 'cs'" \
  "${CT2[@]}" --model ct2_source --direction cs-en --zero-shot --input src.de
"${CT2[@]}" --model ct2_source --direction deen --input src.de > out.txt 2> err.txt
rc=$?
[ $rc = 2 ] && tail -1 err.txt | grep -q "^ct2_translate: error: argument --direction" \
  || { cat err.txt; fail "ct2_translate --direction deen: exit $rc"; }
echo "ok: refused ct2_translate --direction deen: $(tail -1 err.txt)"

# A bilingual model (de-en, 10 updates): --direction and --zero-shot are refused.
BI=(data.directions=[] data.lang_tag=none data.vocab_size=40 data.shard_dir=shards_bi train.save_dir=run_bi
    train.max_updates=10 train.validate_interval_updates=10 train.save_interval_updates=10)
"$PRE" --config c.yaml "${BI[@]}" > /dev/null 2>&1 || fail "preprocess (bilingual)"
"$TRAIN" --config c.yaml "${BI[@]}" > train_bi.log 2>&1 || { tail -5 train_bi.log; fail "train (bilingual)"; }
"${EXPORT[@]}" --checkpoint run_bi/last.pt --output ct2_bi --shard-dir shards_bi > export.log 2>&1 \
  || { cat export.log; fail "export (bilingual)"; }
refused "--direction for a bilingual export" \
  "--direction de-en: ct2_bi is a bilingual export (de-en); --direction and --zero-shot are for a multilingual model" \
  "${CT2[@]}" --model ct2_bi --direction de-en --input src.de
refused "--zero-shot for a bilingual export" "--zero-shot: ct2_bi is a bilingual export (de-en)" \
  "${CT2[@]}" --model ct2_bi --zero-shot --input src.de

# The exporter: shards of the other lang_tag (the same SentencePiece model) or a checkpoint whose
# stored directions differ from the shards' are refused before anything is written.
refused "shards of the other lang_tag" \
  "run_dec/last.pt: trained with data.lang_tag=decoder, but shards/manifest.json records source" \
  "${EXPORT[@]}" --checkpoint run_dec/last.pt --output out_bad --config c.yaml
"$python" - run/last.pt <<'PY' || fail "write a checkpoint with other stored directions"
import sys, torch, yaml
ckpt = torch.load(sys.argv[1], map_location="cpu", weights_only=True)
config = yaml.safe_load(ckpt["config"])
config["data"]["directions"] = ["de-en", "de-fr"]
torch.save(dict(ckpt, config=yaml.safe_dump(config)), "other_dirs.pt")
PY
refused "a checkpoint of other directions than the shards'" \
  "other_dirs.pt: a multilingual [de-en, de-fr] model (data.directions), but shards/manifest.json records multilingual [de-en, de-fr, en-de]" \
  "${EXPORT[@]}" --checkpoint other_dirs.pt --output out_bad --config c.yaml
[ ! -e out_bad ] || fail "a refused export wrote out_bad"
echo "ctranslate2 multilingual export: greedy compared on $(wc -l < src.de) sentences a direction, lang_tag source and decoder"
