"""A point's own shards: points that override data.* preprocessing keys get a directory named by
those settings under --shards, preprocessed once and shared."""
import hashlib
import json
import os
import re
import shlex
import subprocess
import threading

from .context import point_directions
from .errors import PointFailed
from .runner import describe_exit, say

# The data.* keys whose value changes what `preprocess` writes. A point that overrides one gets
# shards of its own, made once under --shards and shared by every point with the same values.
PREPROCESS_KEYS = ("data.raw_dir", "data.src_lang", "data.tgt_lang", "data.train_split", "data.valid_split",
                   "data.test_split", "data.spm_model", "data.vocab_size", "data.spm_model_type",
                   "data.num_shards", "data.max_len")


# Keys that change what `preprocess` writes only when set away from their default: they join a
# point's settings (and its directory's hash) only then, so directories made before they existed
# keep their names.
# A multilingual config's data.directions (one shard split per direction), data.lang_tag (the
# language tags written into the shards) and data.spm_temperature (each language's share of the
# SentencePiece sample) are such keys too.
PREPROCESS_KEYS_IF_SET = {"data.train_corpora": "{}", "data.spm_sample_lines": "1000000", "data.subword_samples": "0",
                          "data.directions": "[]", "data.lang_tag": "none", "data.spm_temperature": "equal"}
SUBWORD_KEYS = ("data.subword_nbest", "data.subword_alpha")


def data_settings(resolved):
    """The preprocessing settings of a resolved config, in PREPROCESS_KEYS order, then the
    PREPROCESS_KEYS_IF_SET that are set (with subword sampling's own keys when it is on)."""
    settings = {key: resolved.get(key) for key in PREPROCESS_KEYS}
    for key, default in PREPROCESS_KEYS_IF_SET.items():
        if key in resolved and str(resolved[key]) != default:
            settings[key] = resolved[key]
    if "data.directions" in settings:
        settings["data.directions"] = point_directions(resolved)  # a list: the printed form's spacing aside
    if "data.subword_samples" in settings:
        settings.update({key: resolved.get(key) for key in SUBWORD_KEYS})
    # data.reversed_weight writes the reversed splits when above 0, whatever its value (which
    # only training reads): one directory serves every weight.
    if float(resolved.get("data.reversed_weight") or 0) > 0:
        settings["data.reversed"] = True
    # The same for data.concat_weight and the joined splits.
    if float(resolved.get("data.concat_weight") or 0) > 0:
        settings["data.concat"] = True
    return settings


def own_shard_dir(ctx, point):
    """SHARDS/<src>-<tgt>_<type><vocab>_<hash of every preprocessing setting> (a multilingual
    config: multi<N directions>_<type><vocab>_<hash>): one directory per distinct data setting, so
    points (and sweeps) that agree on them share one preprocess."""
    settings = data_settings(ctx.resolved[point.name])
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]
    languages = (f"multi{len(settings['data.directions'])}" if settings.get("data.directions")
                 else f"{settings['data.src_lang']}-{settings['data.tgt_lang']}")
    name = f"{languages}_{settings['data.spm_model_type']}{settings['data.vocab_size']}_{digest}"
    return os.path.join(ctx.shards, re.sub(r"[^A-Za-z0-9_.-]", "_", name))


def assign_shard_dirs(ctx):
    """Points whose overrides change what preprocess writes, and name no data.shard_dir of their
    own, get SHARDS/<settings>; the others use the config's shard_dir as it is."""
    for point in ctx.sweep.points:
        keys = {word.split("=", 1)[0] for word in ctx.sweep.overrides(point)}
        if keys & (set(PREPROCESS_KEYS) | set(PREPROCESS_KEYS_IF_SET) | set(SUBWORD_KEYS) | {"data.reversed_weight", "data.concat_weight"}) \
                and "data.shard_dir" not in keys:
            ctx.shard_dirs[point.name] = own_shard_dir(ctx, point)


# Beside a shared shard directory: the raw files it was preprocessed from, by content. The
# directory's name covers the settings and data.raw_dir's path, not what the files there hold.
RAW_RECORD = "raw-files.json"


def raw_files(resolved):
    """{name: sha256} of the data.raw_dir files preprocess may read for these settings: every
    NAME.LANG[.gz] of a language of the config (its pair, or its directions)."""
    raw = resolved.get("data.raw_dir") or "."
    languages = {resolved.get("data.src_lang"), resolved.get("data.tgt_lang")}
    for direction in point_directions(resolved):
        languages.update(direction.split("-", 1))
    suffixes = tuple(f".{lang}{gz}" for lang in languages if lang for gz in ("", ".gz"))
    digests = {}
    for name in sorted(os.listdir(raw)) if os.path.isdir(raw) else []:
        path = os.path.join(raw, name)
        if name.endswith(suffixes) and os.path.isfile(path):
            sha = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    sha.update(block)
            digests[name] = sha.hexdigest()
    return digests


def check_raw_files(point, shard_dir, resolved):
    """Existing shards are reused only if made from the same raw files; a directory without a
    record (made before records were kept) gets one now."""
    path, now = os.path.join(shard_dir, RAW_RECORD), raw_files(resolved)
    if not os.path.isfile(path):
        record_raw_files(shard_dir, now)
        say(f"point {point.name}: {shard_dir} had no record of its raw files; recorded them as they are now")
        return
    with open(path) as f:
        made_of = json.load(f)
    if made_of != now:
        changed = sorted(n for n in set(made_of) | set(now) if made_of.get(n) != now.get(n))
        raise PointFailed(f"{shard_dir} was preprocessed from other raw files (changed: {', '.join(changed)}; "
                          f"{path} has what made it): remove {shard_dir} to preprocess again", path)


def record_raw_files(shard_dir, digests):
    path = os.path.join(shard_dir, RAW_RECORD)
    with open(path + ".tmp", "w") as f:
        json.dump(digests, f, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def preprocess_command(ctx, point):
    """preprocess's command for the point's own shards, or None when it has none or they exist."""
    shard_dir = ctx.shard_dirs.get(point.name)
    if shard_dir is None or os.path.isfile(os.path.join(shard_dir, "manifest.json")):
        return None  # preprocess publishes manifest.json last: with it, the shards are complete
    return ctx.base_command(ctx.binary("data", "preprocess"), point)


def ensure_shards(ctx, point):
    shard_dir = ctx.shard_dirs.get(point.name)
    if shard_dir is None:
        return
    with ctx.lock:
        shard_lock = ctx.shard_locks.setdefault(shard_dir, threading.Lock())
    with shard_lock:  # two jobs with the same data settings: one preprocesses, the other waits
        preprocess_point(ctx, point)


def preprocess_point(ctx, point):
    cmd, log = preprocess_command(ctx, point), ctx.path(point, "preprocess.out")
    shard_dir = ctx.shard_dirs[point.name]
    if cmd is None:
        check_raw_files(point, shard_dir, ctx.resolved[point.name])
        return
    digests = raw_files(ctx.resolved[point.name])  # before: a file changed meanwhile is not blessed
    say(f"point {point.name}: preprocessing its data settings: {shlex.join(cmd)} > {log}")
    with open(log, "wb") as out:
        rc = ctx.runner.run(cmd, out, subprocess.STDOUT)
    if rc != 0:
        raise PointFailed(f"preprocess ended with {describe_exit(rc)}", log)
    record_raw_files(shard_dir, digests)
