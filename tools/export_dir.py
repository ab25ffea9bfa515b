"""The output directory of an export tool (export_ctranslate2.py, export_hf.py): what it may
replace, and the replacement itself.

The rules, the same for every exporter:
  * refused before anything is read or written: an output that is, or holds, an input; a
    file; a non-empty directory that is not an earlier export of the same tool (by its file
    names and the nmtrain.json it writes); an earlier export without --force;
  * written beside the output and renamed into place, so that an interrupted export leaves
    no half model, and an earlier export is deleted only once the new one is in place."""
import json
import os
import shutil

from nmtrain_checkpoint import BadInput
from nmtrain_dirs import nmtrain_content

SETTINGS_FILE = "nmtrain.json"  # every export's record of what made it (checkpoint, decoding settings)


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


class ExportLayout:
    """What one exporter writes: its name (in messages), the files it may write, and the file
    that only a finished export holds (with nmtrain.json, which every export holds)."""

    def __init__(self, prog, files, main_file, format_version):
        self.prog, self.files, self.main_file, self.format_version = prog, set(files), main_file, format_version

    def foreign_content(self, path, entries):
        """Why the non-empty directory path is not an export this tool wrote, or None."""
        if nmtrain_content(entries):
            return "holds " + nmtrain_content(entries)
        for entry in sorted(entries):
            if entry not in self.files or not os.path.isfile(os.path.join(path, entry)):
                return f"holds '{entry}', which {self.prog} does not write"
        try:
            with open(os.path.join(path, SETTINGS_FILE), encoding="utf-8") as f:
                settings = json.load(f)
            ours = isinstance(settings, dict) and settings.get("format_version") == self.format_version \
                and "checkpoint" in settings and self.main_file in entries
        except (OSError, ValueError):
            ours = False
        return None if ours else f"holds a model without the {SETTINGS_FILE} {self.prog} writes"

    def check_output(self, path, force, inputs):
        # Refused before anything is read or written: an existing model is never half-replaced,
        # and --force never deletes what this tool did not write (a run, shards, raw data, an input).
        check_not_input(path, inputs)
        if os.path.exists(path) and not os.path.isdir(path):
            raise BadInput(f"{path}: exists and is not a directory")
        entries = os.listdir(path) if os.path.isdir(path) else []
        if not entries:
            return
        why = self.foreign_content(path, entries)
        if why:
            raise BadInput(f"{path}: output directory exists and {why}, not an earlier export: --force replaces "
                           f"only a directory {self.prog} wrote; choose another --output")
        if not force:
            raise BadInput(f"{path}: output directory exists and is not empty (use --force to replace it)")


def write_settings(directory, settings):
    with open(os.path.join(directory, SETTINGS_FILE), "w", encoding="utf-8") as f:
        json.dump(settings, f, indent=2, sort_keys=True)
        f.write("\n")


def replace_directory(output, write):
    """Calls write(tmp) on a fresh directory beside output, then puts tmp in output's place.
    A symlinked output: the directory it points at is replaced, the link kept."""
    out = os.path.realpath(output)
    tmp = os.path.join(os.path.dirname(out), f".{os.path.basename(out)}.tmp-{os.getpid()}")
    old = os.path.join(os.path.dirname(out), f".{os.path.basename(out)}.old-{os.getpid()}")
    try:
        write(tmp)
        # The earlier export (checked to be ours by check_output) is moved aside, and deleted
        # only once the new one is in place.
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
