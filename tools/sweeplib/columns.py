"""The table's columns: a row's keys, their markdown headers, and the committed csv's own columns."""

COLUMNS = ("point", "status", "overrides", "vocab_size", "spm_model_type", "updates", "epochs", "train_wall_s",
           "tgt_tokens_per_s", "best_valid_loss", "best_valid_nll", "val_bleu", "val_lc_tok_bleu", "cpu")
HEADERS = ("point", "status", "overrides", "vocab", "spm type", "updates", "epochs", "train wall s", "tgt tok/s",
           "best val loss", "best val nll", "val BLEU (avg, beam 5)", "val lc-tok BLEU", "CPU")
# The committed table (SWEEP_FILE's stem .csv beside it) also says what each row was run with,
# so that a sweep continued on another machine knows which points it need not train again.
CSV_COLUMNS = COLUMNS + ("config", "common")

# A sweep with a multilingual point (data.directions) has one more column, after the val BLEU
# (there the mean over the point's directions): each direction's val BLEU, "de-en 35.12, en-de 30.01".
BY_DIRECTION, BY_DIRECTION_HEADER = "val_bleu_by_direction", "val BLEU by direction"


def table_columns(multilingual):
    """(columns, headers, csv columns) of a sweep's table: a bilingual sweep's as they always were."""
    if not multilingual:
        return COLUMNS, HEADERS, CSV_COLUMNS
    at = COLUMNS.index("val_bleu") + 1
    columns = COLUMNS[:at] + (BY_DIRECTION,) + COLUMNS[at:]
    return columns, HEADERS[:at] + (BY_DIRECTION_HEADER,) + HEADERS[at:], columns + CSV_COLUMNS[len(COLUMNS):]
