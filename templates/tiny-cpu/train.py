"""A small byte-level GPT trained for a fixed wall-clock budget; the agent edits this file.

Prints a periodic `loss` line and, at the end, a `---` summary block whose
`val_bpb` (from prepare.evaluate_bpb) is the number the experiment loop ranks.
"""

import time

T_START = time.time()  # total_seconds includes imports and data preparation

import math
import os
import resource
import sys

# Idle OpenMP threads sleep instead of spinning: on a small, shared CPU a
# spinning thread steals the core another process needs, and steps slow
# down several-fold (measured here: 2-3x more steps under contention).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
import torch.nn as nn
import torch.nn.functional as F

from prepare import EVAL_SEQ_LEN, TIME_BUDGET, VOCAB_SIZE, evaluate_bpb, make_loader

# ---------------------------------------------------------------------------
# Hyperparameters. Each is a plain literal on its own line so that a search can
# change any one of them; every value the code derives from them is clamped,
# so no single change can produce an invalid model.
# The values are for a small CPU; on a GPU the code below scales the model up by
# fixed factors, so a search tunes the same numbers on either device.
LEARNING_RATE = 0.0002  # peak AdamW learning rate
N_LAYER = 6  # transformer blocks
N_EMBD = 128  # residual stream width
BATCH_SIZE = 16  # sequences per step
SEQ_LEN = 128  # training context; evaluation always uses EVAL_SEQ_LEN from prepare.py
HEAD_DIM = 32  # width of each attention head; the head count follows from N_EMBD
MLP_RATIO = 4  # MLP hidden width as a multiple of N_EMBD
WEIGHT_DECAY = 0.1  # AdamW decay on matrices only
WARMUP_FRAC = 0.05  # fraction of the time budget spent ramping the learning rate up
FINAL_LR_FRAC = 0.1  # learning rate at the end of the budget, relative to the peak
GRAD_CLIP = 1.0  # max global gradient norm
DROPOUT = 0.0  # a one-minute run never sees a byte twice, so regularising rarely helps
# ---------------------------------------------------------------------------

USE_CUDA = torch.cuda.is_available()
device = torch.device("cuda" if USE_CUDA else "cpu")
# A GPU affords a wider, deeper model on longer, larger batches (8 layers x 512 wide,
# 64 x 256 tokens at the defaults); a bigger batch also takes a higher learning rate.
WIDTH_SCALE, EXTRA_LAYERS, BATCH_SCALE, SEQ_SCALE, LR_SCALE = (4, 2, 4, 2, 5) if USE_CUDA else (1, 0, 1, 1, 1)

learning_rate = float(LEARNING_RATE) * LR_SCALE
# The transfer study (`autoresearch transfer --env AUTORESEARCH_SCALE=2`) replays the kept
# commits on a larger model to see which changes carry over: the scale multiplies the depth
# (2 = twice the layers). Unset, as in the search, it is 1. Not a hyperparameter to tune.
scale = max(1.0, float(os.environ.get("AUTORESEARCH_SCALE", "1")))
n_layer = max(1, round((int(N_LAYER) + EXTRA_LAYERS) * scale))
n_embd = max(8, int(N_EMBD) * WIDTH_SCALE)
head_dim = max(4, int(HEAD_DIM))
n_head = max(1, n_embd // head_dim)  # never requires N_EMBD to divide evenly
mlp_hidden = max(8, int(MLP_RATIO * n_embd))
seq_len = max(8, int(SEQ_LEN) * SEQ_SCALE)
batch_size = max(1, int(BATCH_SIZE) * BATCH_SCALE)
block_size = max(seq_len, EVAL_SEQ_LEN)  # the evaluation feeds EVAL_SEQ_LEN bytes
dropout = min(max(float(DROPOUT), 0.0), 0.9)
warmup_frac = min(max(float(WARMUP_FRAC), 0.0), 0.5)
final_lr_frac = min(max(float(FINAL_LR_FRAC), 0.0), 1.0)

# The engine gives each run its own seed (AUTORESEARCH_SEED), so the initialisation and the
# batches differ from run to run and the noise they cause is part of what is measured.
run_seed = int(os.environ.get("AUTORESEARCH_SEED", "0"))
torch.manual_seed(run_seed)
torch.set_num_threads(os.cpu_count() or 1)
if USE_CUDA:
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        # Heads are HEAD_DIM wide and the inner width is n_head * head_dim, which
        # may differ from n_embd: the projections absorb the difference.
        self.qkv = nn.Linear(n_embd, 3 * n_head * head_dim, bias=False)
        self.proj = nn.Linear(n_head * head_dim, n_embd, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, n_head, head_dim).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(B, T, n_head * head_dim))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = Attention()
        self.ln2 = nn.LayerNorm(n_embd)
        self.fc = nn.Linear(n_embd, mlp_hidden, bias=False)
        self.out = nn.Linear(mlp_hidden, n_embd, bias=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.drop(self.attn(self.ln1(x)))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB_SIZE, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block() for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, VOCAB_SIZE, bias=False)
        self.apply(self._init)
        # Residual outputs start small so a deep stack begins close to identity.
        for block in self.blocks:
            nn.init.normal_(block.attn.proj.weight, std=0.02 / math.sqrt(2 * n_layer))
            nn.init.normal_(block.out.weight, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx):
        """idx: (B, T) byte ids, T <= block_size -> logits (B, T, VOCAB_SIZE)."""
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def lr_at(progress):
    """Learning rate for a point in the budget (0..1): linear warmup, then cosine down to FINAL_LR_FRAC."""
    if progress < warmup_frac:
        return learning_rate * (progress / warmup_frac)
    t = min(1.0, (progress - warmup_frac) / max(1e-9, 1.0 - warmup_frac))
    return learning_rate * (final_lr_frac + (1 - final_lr_frac) * 0.5 * (1 + math.cos(math.pi * t)))


model = GPT().to(device)
num_params = sum(p.numel() for p in model.parameters())
# Decay matrices only; norms and biases carry scale and shift, which decay would fight.
decay = [p for p in model.parameters() if p.dim() >= 2]
no_decay = [p for p in model.parameters() if p.dim() < 2]
optimizer = torch.optim.AdamW(
    [{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": no_decay, "weight_decay": 0.0}],
    lr=learning_rate,
    betas=(0.9, 0.95),
    fused=USE_CUDA,
)
loader = make_loader(batch_size, seq_len, device, seed=run_seed)
print(
    f"device {device} | params {num_params / 1e6:.2f}M | layers {n_layer} | width {n_embd} | heads {n_head} | "
    f"batch {batch_size}x{seq_len} | budget {TIME_BUDGET}s",
    flush=True,
)

# Training runs on wall-clock time, not steps: the budget is the experiment's
# unit, so a faster model gets more steps. The first step (allocation, kernel
# selection) is left out of the clock.
step, train_time, tokens, last_log = 0, 0.0, 0, 0.0
# About ten training lines whatever the budget, each with the mean step time since the last:
# the engine reads its loss curve and step time from them (`step N | loss L | ... | T ms/step`).
log_every = TIME_BUDGET / 10
last_log_step = 0


def log_line():
    global last_log, last_log_step
    done = step - last_log_step
    pace = f" | {1000 * (train_time - last_log) / done:.1f} ms/step" if done and train_time > last_log else ""
    print(f"step {step} | loss {loss_value:.4f} | lr {lr:.2e}{pace} | elapsed {train_time:.1f}s", flush=True)
    last_log, last_log_step = train_time, step


while train_time < TIME_BUDGET:
    t0 = time.time()
    lr = lr_at(train_time / TIME_BUDGET)
    for group in optimizer.param_groups:
        group["lr"] = lr
    x, y = next(loader)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=USE_CUDA):
        logits = model(x)
    loss = F.cross_entropy(logits.float().view(-1, VOCAB_SIZE), y.reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if GRAD_CLIP > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
    optimizer.step()
    loss_value = loss.item()  # also synchronises CUDA so the step time is honest
    if not math.isfinite(loss_value):
        print(f"FAIL: loss is {loss_value} at step {step}; training diverged", file=sys.stderr, flush=True)
        sys.exit(1)
    if step > 0:
        train_time += time.time() - t0
    step += 1
    tokens += x.numel()
    if train_time - last_log >= log_every or step == 1:
        log_line()

if step != last_log_step:
    log_line()
# Tells the engine training is over: the panel says "evaluating" from this line, not from the clock.
print("evaluating val_bpb", flush=True)
val_bpb = evaluate_bpb(model, device)

if USE_CUDA:
    peak_mb = torch.cuda.max_memory_allocated() / 1024**2
    # Rough model FLOPs per token (6N for the weights plus attention) against bf16 dense peak.
    flops_per_token = 6 * num_params + 12 * n_layer * n_head * head_dim * seq_len
    peak_flops = 989e12 if "H100" in torch.cuda.get_device_name() or "H200" in torch.cuda.get_device_name() else 312e12
    mfu = 100 * flops_per_token * tokens / max(train_time, 1e-9) / peak_flops
else:
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
    mfu = 0.0  # no meaningful peak figure for an arbitrary CPU

print("---")
print(f"val_bpb:          {val_bpb:.6f}")
print(f"training_seconds: {train_time:.1f}")
print(f"total_seconds:    {time.time() - T_START:.1f}")
print(f"peak_vram_mb:     {peak_mb:.1f}")
print(f"mfu_percent:      {mfu:.2f}")
print(f"total_tokens_M:   {tokens / 1e6:.1f}")
print(f"num_steps:        {step}")
print(f"num_params_M:     {num_params / 1e6:.1f}")
print(f"depth:            {n_layer}")
