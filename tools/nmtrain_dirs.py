"""What an nmtrain directory holds, named for refusals: the Python tools write only where
they wrote before, and say what they found instead. Standard library only (tools/sweep.py
needs no more)."""


def nmtrain_content(entries):
    """'shards (manifest.json)' or 'checkpoints (last.pt)' for a directory listing that holds
    preprocess's or train's output, else None."""
    if "manifest.json" in entries:
        return "shards (manifest.json)"
    runs = sorted(e for e in entries if e.endswith(".pt") or e == "metrics.jsonl")
    if runs:
        return f"checkpoints ({'last.pt' if 'last.pt' in runs else runs[0]})"
    return None
