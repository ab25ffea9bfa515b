"""Files the sweep reads and writes: atomic writes, JSON records, the end of a log, the --out
check (a sweep writes only where it wrote before), and the CPU model from /proc/cpuinfo."""
import json
import os

from nmtrain_dirs import nmtrain_content  # tools/, beside sweep.py (sys.path[0])

from .errors import SweepError

LOG_TAIL_LINES = 12
RESULT, STATE = "result.json", "sweep_point.json"


def write_atomic(path, text):
    """Write beside the target and rename: a reader (or a kill) never sees half a file."""
    tmp = f"{os.path.join(os.path.dirname(path) or '.', '.' + os.path.basename(path))}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def is_sweep_out(out, entries):
    """True when the directory out holds what a sweep writes: its table.csv, or a point
    directory with sweep_point.json or result.json."""
    try:
        with open(os.path.join(out, "table.csv"), encoding="utf-8") as f:
            if f.readline().startswith("point,status,"):
                return True
    except (OSError, UnicodeDecodeError):
        pass
    return any(os.path.isfile(os.path.join(out, e, name)) for e in entries for name in (STATE, RESULT))


def check_out(out):
    """Refuse an --out that exists but was not written by a sweep: the tables and point
    directories must not land among a run's checkpoints, shards, raw data or anyone's files
    (a table.md there would be replaced)."""
    if not os.path.exists(out):
        return
    if not os.path.isdir(out):
        raise SweepError(f"--out {out}: exists and is not a directory")
    entries = os.listdir(out)
    if not entries or is_sweep_out(out, entries):
        return
    what = nmtrain_content(entries) or f"'{sorted(entries)[0]}'"
    raise SweepError(f"--out {out}: exists and holds {what}, but no sweep wrote there (no table.csv or "
                     f"NAME/{STATE}): choose another --out, or an empty or new directory")


# What the records of a point must hold to be read (file name -> field -> type); anything
# else (a list, a field of another type) is refused like unreadable JSON.
RECORD_FIELDS = {RESULT: {"config": str, "overrides": list, "finished": str},
                 STATE: {"config": str, "overrides": list}}


def read_json(path):
    """The JSON object in path, or None when there is no such file. A point's record
    (RECORD_FIELDS) must have its fields."""
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise SweepError(f"{path}: unreadable ({e}); remove it to rerun that point") from None
    if not isinstance(value, dict):
        raise SweepError(f"{path}: unreadable (not a JSON object); remove it to rerun that point")
    for field, kind in RECORD_FIELDS.get(os.path.basename(path), {}).items():
        if not isinstance(value.get(field), kind):
            raise SweepError(f"{path}: unreadable (field '{field}' missing or not a JSON {kind.__name__}); "
                             f"remove it to rerun that point")
    return value


def tail(path, lines=LOG_TAIL_LINES):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def cpu_model():
    """The "model name" of /proc/cpuinfo with its family and model: speeds in the table depend on
    it, and one name ("AMD EPYC" in a VM) can cover CPUs of twice the speed of one another."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if not key.strip():
                    break  # the first processor's block is enough
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name", "unknown")
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    return name
