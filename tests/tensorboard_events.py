"""TensorBoard's own reader (EventAccumulator) reads back, from the event files train
wrote in RUN_DIR, exactly the scalars of RUN_DIR/metrics.jsonl, each step once.

    tensorboard_events.py RUN_DIR EXPECTED_EVENT_FILES

metrics.jsonl is append-only: after a crash and `--resume auto`, the records an earlier
process wrote from the resumed update on were rolled back with the checkpoint. A
{"event": "start", "update": U} record marks where each process begins; the expected
scalars drop earlier records with update >= U, as TensorBoard drops them on the new
file's SessionLog START. Each number becomes the scalar "<event>/<name>" ("valid_loss" of
a "valid" record: "valid/loss") at step = update, stored as float32."""
import glob
import json
import os
import sys

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

run_dir, want_files = sys.argv[1], int(sys.argv[2])

expected = {}  # tag -> {step: value}
with open(os.path.join(run_dir, "metrics.jsonl")) as f:
    for line in f:
        rec = json.loads(line)
        event, step = rec["event"], rec["update"]
        if event == "start":
            for series in expected.values():
                for s in [s for s in series if s >= step]:
                    del series[s]
            continue
        for name, value in rec.items():
            if name == "update" or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            shown = name[len(event) + 1:] if name.startswith(event + "_") else name
            expected.setdefault(f"{event}/{shown}", {})[step] = value

files = sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))
assert len(files) == want_files, f"{len(files)} event files in {run_dir}, expected {want_files}: {files}"
acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})  # 0: keep every point
acc.Reload()
tags = sorted(acc.Tags()["scalars"])
assert tags == sorted(expected), f"tags {tags} != metrics.jsonl's {sorted(expected)}"
points = 0
for tag in tags:
    got = acc.Scalars(tag)
    steps = [e.step for e in got]
    assert len(steps) == len(set(steps)), f"{tag}: a step appears twice: {steps}"
    assert steps == sorted(expected[tag]), f"{tag}: steps {steps} != {sorted(expected[tag])}"
    for e in got:
        want = np.float32(expected[tag][e.step])
        assert np.float32(e.value) == want, f"{tag} at step {e.step}: {e.value} != {want}"
        points += 1
print(f"tensorboard: {len(files)} event file(s), {len(tags)} tags, {points} scalars read back by EventAccumulator, "
      f"equal to metrics.jsonl, each step once")
