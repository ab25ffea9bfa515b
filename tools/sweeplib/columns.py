"""The table's columns: a row's keys, their markdown headers, and the committed csv's own columns."""

COLUMNS = ("point", "status", "overrides", "vocab_size", "spm_model_type", "updates", "epochs", "train_wall_s",
           "tgt_tokens_per_s", "best_valid_loss", "best_valid_nll", "val_bleu", "val_lc_tok_bleu", "cpu")
HEADERS = ("point", "status", "overrides", "vocab", "spm type", "updates", "epochs", "train wall s", "tgt tok/s",
           "best val loss", "best val nll", "val BLEU (avg, beam 5)", "val lc-tok BLEU", "CPU")
# The committed table (SWEEP_FILE's stem .csv beside it) also says what each row was run with,
# so that a sweep continued on another machine knows which points it need not train again.
CSV_COLUMNS = COLUMNS + ("config", "common")
