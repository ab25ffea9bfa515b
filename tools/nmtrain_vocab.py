"""The vocabulary a checkpoint was trained with: the shard directory's manifest.json
(data/manifest.h) and its SentencePiece model, checked against the checkpoint the way
checkpoint/model_setup.cpp does (same SHA-256, same language pair, same size)."""
import hashlib
import json
import os
from dataclasses import dataclass

import sentencepiece

from nmtrain_checkpoint import BadInput, sha256_file


@dataclass
class Vocab:
    spm_path: str
    pieces: list    # piece of every id, in id order: CTranslate2's vocabulary is id-ordered too
    special: dict   # {"pad", "unk", "bos", "eos"} -> id, from the manifest
    src_lang: str
    tgt_lang: str
    control: tuple = ()  # ids of SentencePiece's control symbols (BOS, EOS, source tags, ...)
    # A Marian vocabulary (data.hf_tokenizer): the target side's SentencePiece model and vocab.json
    # beside spm_path (the source side's); None for one joint SentencePiece model.
    target_spm_path: str = None
    vocab_json_path: str = None
    # A multilingual model (manifest "directions", "lang_tag"; data/manifest.h): its directions
    # ("de-en", ...), where its language tags go (source | decoder | none), and the tag of each
    # target language ({"en": "<2en>"}, data::language_tag; empty under none). () for a bilingual one.
    directions: tuple = ()
    lang_tag: str = "none"
    language_tags: dict = None

    def piece(self, name):
        return self.pieces[self.special[name]]

    def control_ids(self, exclude=()):
        """Control symbols but those in exclude: the source tags (data/source_tags.h)."""
        return [i for i in self.control if i not in set(exclude)]


def load(shard_dir, ckpt):
    manifest_path = os.path.join(shard_dir, "manifest.json")
    if not os.path.isfile(manifest_path):
        raise BadInput(f"{shard_dir}: no manifest.json there (give the shard directory the checkpoint was "
                       "trained on: --shard-dir, or --config with data.shard_dir)")
    try:
        with open(manifest_path, encoding="utf-8") as f:
            manifest = json.load(f)
        spm_path = os.path.join(shard_dir, manifest["spm_model"])
        special = {k: int(manifest["special_ids"][k]) for k in ("pad", "unk", "bos", "eos")}
        size, want_sha = int(manifest["vocab_size"]), manifest["spm_sha256"]
        src_lang, tgt_lang = manifest["src_lang"], manifest["tgt_lang"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BadInput(f"{manifest_path}: not a readable manifest ({type(e).__name__}: {e})") from None
    if want_sha != ckpt.vocab_sha256:
        raise BadInput(f"{ckpt.path}: field 'vocab_sha256' ({ckpt.vocab_sha256[:12]}...) differs from the "
                       f"vocabulary of {shard_dir} ({want_sha[:12]}...): the checkpoint was trained on other data")
    if "vocab_json" in manifest:
        return _marian(shard_dir, manifest, manifest_path, spm_path, special, size, src_lang, tgt_lang, ckpt)
    if not os.path.isfile(spm_path) or sha256_file(spm_path) != want_sha:
        raise BadInput(f"{spm_path}: missing, or its SHA-256 differs from {manifest_path}'s spm_sha256")
    data = ckpt.config.get("data") or {}
    directions, lang_tag = _directions(manifest, manifest_path, data, ckpt)
    # A multilingual model's data.src_lang / data.tgt_lang only choose the direction to decode.
    for key, theirs in () if directions else (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
        if data.get(key, theirs) != theirs:
            raise BadInput(f"{ckpt.path}: config key 'data.{key}' = '{data.get(key)}' but {manifest_path} "
                           f"records '{theirs}': the shards were made for {src_lang}->{tgt_lang}")
    bad = [f"{k} = {v}" for k, v in special.items() if not 0 <= v < size]
    if bad:
        raise BadInput(f"{manifest_path}: special_ids {', '.join(bad)} not below vocab_size {size}")
    sp = sentencepiece.SentencePieceProcessor(model_file=spm_path)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    if len(pieces) != size or size != ckpt.model.vocab_size:
        raise BadInput(f"{spm_path}: {len(pieces)} pieces, manifest vocab_size {size}, checkpoint embedding "
                       f"{ckpt.model.vocab_size} rows: they must be equal")
    control = tuple(i for i in range(size) if sp.is_control(i))
    tags = {}
    if lang_tag != "none":
        for tgt in sorted({d.split("-")[1] for d in directions}):
            tags[tgt] = f"<2{tgt}>"  # data::language_tag
            i = sp.piece_to_id(tags[tgt])
            if i == sp.unk_id() or not sp.is_control(i):
                raise BadInput(f"{spm_path}: no control symbol {tags[tgt]}, the language tag of '{tgt}' "
                               f"(data.lang_tag {lang_tag})")
    return Vocab(spm_path=spm_path, pieces=pieces, special=special, src_lang=src_lang, tgt_lang=tgt_lang,
                 control=control, directions=directions, lang_tag=lang_tag, language_tags=tags)


def _directions(manifest, manifest_path, data, ckpt):
    """The manifest's directions and lang_tag, which must be the checkpoint's data.directions and
    data.lang_tag (checkpoint::check_same_directions): ((), "none") for a bilingual model."""
    directions, lang_tag = manifest.get("directions", []), manifest.get("lang_tag", "none")
    if not isinstance(directions, list) or not all(isinstance(d, str) and d.count("-") == 1 and
                                                   "" not in d.split("-") for d in directions) \
            or lang_tag not in ("none", "source", "decoder"):
        raise BadInput(f"{manifest_path}: 'directions' is not a list of SRC-TGT or 'lang_tag' not none, source "
                       f"or decoder")
    kind = lambda dirs: f"multilingual [{', '.join(dirs)}]" if dirs else "bilingual"
    theirs = [str(d) for d in data.get("directions") or []]
    if theirs != directions:
        raise BadInput(f"{ckpt.path}: a {kind(theirs)} model (data.directions), but {manifest_path} records "
                       f"{kind(directions)}: give the shard directory it was trained on")
    if directions and data.get("lang_tag", "none") != lang_tag:
        raise BadInput(f"{ckpt.path}: trained with data.lang_tag={data.get('lang_tag')}, but {manifest_path} records "
                       f"{lang_tag}: give the shard directory it was trained on")
    return tuple(directions), lang_tag


MARIAN_CONTROL = ("</s>", "<pad>", "<s>")  # data/tokenizer.cpp: Marian's special pieces, and >>xx<< codes


def _marian(shard_dir, manifest, manifest_path, spm_path, special, size, src_lang, tgt_lang, ckpt):
    """A Marian vocabulary (data/tokenizer.h): source.spm, target.spm and vocab.json, whose
    identity is the SHA-256 of the three files' hashes joined."""
    target = os.path.join(shard_dir, str(manifest.get("target_spm_model")))
    vocab_path = os.path.join(shard_dir, str(manifest.get("vocab_json")))
    for path in (spm_path, target, vocab_path):
        if not os.path.isfile(path):
            raise BadInput(f"{path}: missing (named by {manifest_path})")
    joined = "".join(sha256_file(p) for p in (spm_path, target, vocab_path))
    if hashlib.sha256(joined.encode()).hexdigest() != manifest["spm_sha256"]:
        raise BadInput(f"{shard_dir}: its source.spm, target.spm and vocab.json differ from {manifest_path}'s spm_sha256")
    with open(vocab_path, encoding="utf-8") as f:
        ids = json.load(f)
    pieces = [None] * len(ids)
    for piece, i in ids.items():
        pieces[i] = piece
    if len(pieces) != size or size != ckpt.model.vocab_size:
        raise BadInput(f"{vocab_path}: {len(pieces)} pieces, manifest vocab_size {size}, checkpoint embedding "
                       f"{ckpt.model.vocab_size} rows: they must be equal")
    control = tuple(i for i, p in enumerate(pieces) if p in MARIAN_CONTROL or (len(p) > 4 and p.startswith(">>")))
    return Vocab(spm_path=spm_path, pieces=pieces, special=special, src_lang=src_lang, tgt_lang=tgt_lang,
                 control=control, target_spm_path=target, vocab_json_path=vocab_path)
