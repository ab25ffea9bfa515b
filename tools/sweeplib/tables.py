"""The table: a row per point (from result.json, metrics.jsonl or the committed table), written
as markdown and csv to OUT and beside the sweep file (a sweep with a multilingual point: with a
column of each direction's val BLEU)."""
import csv
import io
import os
import shlex

from .columns import BY_DIRECTION, COLUMNS, table_columns
from .committed import committed_unfinished_row, finished_elsewhere
from .files import RESULT, STATE, read_json, write_atomic
from .metrics import summarize_metrics
from .points import AVERAGE_LAST, BEAM, by_direction


def table_row(ctx, point):
    """The row's values: result.json's when finished, else what metrics.jsonl has so far."""
    result = read_json(ctx.path(point, RESULT))
    state = read_json(ctx.path(point, STATE)) or {}
    resolved = ctx.resolved.get(point.name, {})
    if finished_elsewhere(ctx, point):
        return {**ctx.committed[point.name], "status": "finished"}  # as committed: trained elsewhere
    if ctx.status.get(point.name) is None and (row := committed_unfinished_row(ctx, point)) is not None:
        return dict(row)  # as committed: recorded elsewhere, nothing of it here yet
    if result is not None:
        status, values = "finished", result
    else:
        values = summarize_metrics(ctx.path(point, "metrics.jsonl")) or {}
        started = os.path.isdir(ctx.point_dir(point))
        status = ctx.status.get(point.name) or ("interrupted" if started else "pending")
    row = {key: values.get(key) for key in COLUMNS}
    row[BY_DIRECTION] = by_direction(values["directions"]) if isinstance(values.get("directions"), dict) else None
    row.update(point=point.name, status=status, overrides=shlex.join(point.overrides),
               vocab_size=resolved.get("data.vocab_size"), spm_model_type=resolved.get("data.spm_model_type"),
               cpu=" + ".join(values.get("cpus") or state.get("cpus") or []),
               config=ctx.sweep.config, common=shlex.join(ctx.sweep.common))
    return row


def format_cell(key, value):
    if value is None or value == "":
        return ""
    formats = {"train_wall_s": "{:.1f}", "tgt_tokens_per_s": "{:.0f}", "best_valid_loss": "{:.4f}",
               "best_valid_nll": "{:.4f}", "val_bleu": "{:.2f}", "val_lc_tok_bleu": "{:.2f}"}
    text = formats[key].format(float(value)) if key in formats else str(value)  # a committed row: text
    return text.replace("|", "\\|")


def markdown_table(ctx, rows, multilingual=False):
    sweep = ctx.sweep
    columns, headers, _ = table_columns(multilingual)
    about = (" A multilingual point's (data.directions) val BLEU and lc-tok BLEU are the means over its directions, "
             "each decoded on its own (evaluate --direction D, val.D.hyp); the next column gives each direction's "
             "BLEU." if multilingual else "")
    lines = [f"# Sweep {sweep.path}", "",
             f"Config `{sweep.config}`, common overrides `{shlex.join(sweep.common)}`, run directories "
             f"{ctx.out}/NAME. Selection is on val only: BLEU of the average of the last min({AVERAGE_LAST}, "
             f"available) update_N.pt (last.pt when fewer than 2), beam {BEAM}; the test set is not scored.{about}", "",
             "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join(format_cell(key, row.get(key)) for key in columns) + " |")
    return "\n".join(lines) + "\n"


def csv_table(rows, multilingual=False):
    csv_columns = table_columns(multilingual)[2]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(csv_columns)
    for row in rows:
        writer.writerow(["" if row.get(key) is None else row[key] for key in csv_columns])
    return buffer.getvalue()


def write_tables(ctx, show):
    with ctx.lock:  # jobs end points at once; each write sees every status, none interleave
        rows = [table_row(ctx, point) for point in ctx.sweep.points]
        multilingual = ctx.multilingual()
        markdown, table = markdown_table(ctx, rows, multilingual), csv_table(rows, multilingual)
        for stem in (os.path.join(ctx.out, "table"), ctx.committed_table()):
            write_atomic(stem + ".md", markdown)
            write_atomic(stem + ".csv", table)
    if show:
        print(markdown, flush=True)
