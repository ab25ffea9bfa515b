"""tools/sweep.py's code, one job a module (tools/sweep.py's docstring says what a sweep does):

    sweep_file  the sweep file parsed and checked into a Sweep of Points
    context     the sweep's state in one run; points resolved by train --print-config
    shards      a point's own shards for its data.* preprocessing settings
    points      one point: train, average, evaluate on val (multilingual: each direction), result.json
    decoding    tools/tune_decoding.py's grid of checkpoints, beams and length penalties on val
    bleu        the val BLEU of evaluate's output and the lc-tok BLEU of val.hyp (val.D.hyp)
    state       what OUT/NAME records of a point, and points recorded with other settings refused
    committed   the committed table beside the sweep file
    tables      the markdown and csv tables (columns: their columns)
    loop        the sweep over its points, and --dry-run
    jobs        --jobs N: N points at once, each job pinned to its own CPUs
    runner      running the programs (one at a time per job), signals, CPU affinity, messages
    metrics     metrics.jsonl summed up for the table
    files       atomic writes, JSON records, log tails, the --out check, the CPU model
    errors      exceptions and exit statuses

Standard library only.
"""
