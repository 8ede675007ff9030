"""moreau.studies.cube: Study A end to end — does contact stiffness degrade learned dynamics?
(Study A, the cube study, docs/studies.md; Parmar, Halm and Posa 2021.)

    python3 -m moreau.studies.cube                    # the protocol below (hours on 2 cores; resumable)
    python3 -m moreau.studies.cube --quick --out /tmp/a --data /tmp/a/data   # minutes
    python3 -m moreau.studies.cube --settings soft_mj100 soft_1e6 hard --tosses 16 64 --models lstm

1. Data (moreau.studies.cube_data): every setting's tosses, one batched simulation each,
   noise added, written once to ``--data`` and reused.
2. Models (torch): ``lstm`` — the paper's LSTM (``--hidden``, 256 in the paper) over a window
   of 16 samples → FC 128 → ReLU → the next sample's 6-D velocity (v, ω_body); ``mlp`` — the
   same window flattened → 256 → 256 → 6 (ReLU). Inputs and targets are standardised with the
   training set's statistics; the next pose integrates the predicted velocity as the data's
   finite differences define it: p' = p + h v', q' = q ⊗ exp(h ω').
3. Training: MSE, Adam (``--lr``, 1e-4), batch 64, at most ``--epochs`` epochs, early stopping
   on the validation MSE (``--patience``, 20), the best validation state kept. An epoch is one
   pass over the training windows, or ``--epoch-windows`` windows drawn from them when there
   are more (the CPU reduction; 0 = whole passes, the paper's).
   Splits (docs/studies.md, ``splits``): of ``--data-tosses`` (11,000) the last ``--val-tosses`` (500)
   validate, the ``--test-tosses`` (500) before them test, the rest (0–9,999) is the training
   pool, of which a run takes the first N.
4. Metrics per (setting, model, N): train / validation / test MSE (standardised target units);
   one-step position [m] and rotation [°] error on the test windows; ``--rollout``-step (50)
   open-loop rollout errors from the first window of each test toss long enough; training
   curves. Written to ``--out``/results.json and results.csv (one row per run), curves.json.xz
   (the training curves, compressed; a plain curves.json is read too), and
   PNGs: test error against N (log–log, one line per setting, one panel per model),
   rollout error against N, training curves per setting. Finished runs are skipped.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import time
from typing import Dict, List, Tuple

import numpy as np
import torch
from torch import nn

from .._compressed import find, open_text
from .cube_data import DT, SETTINGS, load_dataset, make_datasets, quat_exp, quat_log, quat_mul

__all__ = ["WINDOW", "splits", "LSTMModel", "MLPModel", "windows", "train_model", "rollout_errors", "run", "main"]

WINDOW = 16


def splits(tosses: int, test: int, val: int) -> Tuple[range, range, range]:
    """(training pool, test, validation) toss ranges: the protocol's 0–9,999, 10,000–10,499 and
    10,500–10,999 for 11,000 tosses with 500 test and 500 validation tosses."""
    pool = tosses - test - val
    if pool <= 0:
        raise ValueError(f"cube study: {tosses} tosses leave no training pool after {test} test and {val} validation")
    return range(0, pool), range(pool, pool + test), range(pool + test, tosses)


class LSTMModel(nn.Module):
    def __init__(self, hidden: int = 256, n_in: int = 13, n_out: int = 6):
        super().__init__()
        self.lstm = nn.LSTM(n_in, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden, 128), nn.ReLU(), nn.Linear(128, n_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x (B, W, 13) -> (B, 6)
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


class MLPModel(nn.Module):
    def __init__(self, hidden: int = 256, n_in: int = 13, n_out: int = 6, window: int = WINDOW):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(window * n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                 nn.ReLU(), nn.Linear(hidden, n_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


MODELS = {"lstm": LSTMModel, "mlp": MLPModel}


def windows(states: np.ndarray, lengths: np.ndarray, tosses: range) -> Tuple[torch.Tensor, torch.Tensor]:
    """(inputs (M, 16, 13), targets (M, 6)): every window of 16 consecutive samples of the tosses
    and the velocity of the sample after it, within each toss's length."""
    xs, ys = [], []
    for j in tosses:
        s = torch.from_numpy(states[j, :lengths[j]])
        m = s.shape[0] - WINDOW
        if m <= 0:
            continue
        xs.append(s.unfold(0, WINDOW, 1)[:m].transpose(1, 2))
        ys.append(s[WINDOW:, 7:13])
    return torch.cat(xs), torch.cat(ys)


class Standardise:
    def __init__(self, x: torch.Tensor, y: torch.Tensor):
        self.xm, self.xs = x.reshape(-1, x.shape[-1]).mean(0), x.reshape(-1, x.shape[-1]).std(0).clamp_min(1e-6)
        self.ym, self.ys = y.mean(0), y.std(0).clamp_min(1e-6)

    def x(self, x):
        return (x - self.xm) / self.xs

    def y(self, y):
        return (y - self.ym) / self.ys

    def y_inv(self, y):
        return y * self.ys + self.ym


def _mse(model, norm: Standardise, x, y, batch: int = 4096) -> float:
    with torch.no_grad():
        tot = 0.0
        for i in range(0, x.shape[0], batch):
            tot += float(((model(norm.x(x[i:i + batch])) - norm.y(y[i:i + batch])) ** 2).sum())
    return tot / (x.shape[0] * y.shape[1])


def train_model(kind: str, train: Tuple, val: Tuple, hidden: int, epochs: int, patience: int, lr: float,
                batch: int, epoch_windows: int, seed: int) -> Tuple[nn.Module, Standardise, List[Dict]]:
    """The best-validation model, its standardisation and the training curve (one row per epoch)."""
    torch.manual_seed(seed)
    x, y = train
    norm = Standardise(x, y)
    model = MODELS[kind](hidden)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    best, best_state, since, curve = math.inf, None, 0, []
    for epoch in range(1, epochs + 1):
        m = x.shape[0]
        idx = torch.randperm(m, generator=gen)
        if 0 < epoch_windows < m:
            idx = idx[:epoch_windows]
        model.train()
        for i in range(0, idx.shape[0], batch):
            b = idx[i:i + batch]
            loss = ((model(norm.x(x[b])) - norm.y(y[b])) ** 2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        model.eval()
        v = _mse(model, norm, *val)
        curve.append({"epoch": epoch, "train_mse": _mse(model, norm, x[idx[:8192]], y[idx[:8192]]), "val_mse": v})
        if v < best:
            best, since = v, 0
            best_state = {k: t.clone() for k, t in model.state_dict().items()}
        else:
            since += 1
            if since >= patience:
                break
    model.load_state_dict(best_state)
    return model, norm, curve


def _next_pose(last: torch.Tensor, vel: torch.Tensor) -> torch.Tensor:
    """The sample after ``last`` (B, 13) with velocity ``vel`` (B, 6): p + h v, q ⊗ exp(h ω)."""
    p = last[:, 0:3] + DT * vel[:, 0:3]
    q = quat_mul(last[:, 3:7], quat_exp(DT * vel[:, 3:6]))
    return torch.cat([p, q / q.norm(dim=1, keepdim=True), vel], 1)


def _pose_errors(pred: torch.Tensor, true: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Position error [m] and rotation angle error [°] per row."""
    dp = (pred[:, 0:3] - true[:, 0:3]).norm(dim=1)
    conj = true[:, 3:7] * torch.tensor([1.0, -1.0, -1.0, -1.0], dtype=true.dtype)
    da = quat_log(quat_mul(conj, pred[:, 3:7])).norm(dim=1)
    return dp, torch.rad2deg(da)


def rollout_errors(model, norm: Standardise, states: np.ndarray, lengths: np.ndarray, tosses: range,
                   horizon: int) -> Dict[str, float]:
    """One-step errors over every test window, and ``horizon``-step open-loop errors from the
    first window of each test toss with at least 16 + horizon samples."""
    x, _ = windows(states, lengths, tosses)
    with torch.no_grad():
        s = torch.from_numpy(states)
        one = []
        for j in tosses:  # one step: each window's next pose against the data's
            L = int(lengths[j])
            if L <= WINDOW:
                continue
            w = s[j, :L].unfold(0, WINDOW, 1)[:L - WINDOW].transpose(1, 2).double()
            pred = _next_pose(w[:, -1], norm.y_inv(model(norm.x(w.float()))).double())
            one.append(_pose_errors(pred, s[j, WINDOW:L].double()))
        starts = [j for j in tosses if lengths[j] >= WINDOW + horizon]
        out = {"one_step_pos_m": float(torch.cat([a for a, _ in one]).mean()),
               "one_step_rot_deg": float(torch.cat([b for _, b in one]).mean()), "rollout_tosses": len(starts)}
        if starts:
            w = s[starts, :WINDOW].double()
            for _ in range(horizon):
                nxt = _next_pose(w[:, -1], norm.y_inv(model(norm.x(w.float()))).double())
                w = torch.cat([w[:, 1:], nxt[:, None]], 1)
            dp, da = _pose_errors(w[:, -1], s[starts, WINDOW + horizon - 1].double())
            out.update({f"rollout{horizon}_pos_m": float(dp.mean()), f"rollout{horizon}_rot_deg": float(da.mean())})
    return out


def run(data: str, setting: str, kind: str, n: int, a) -> Tuple[Dict, List[Dict]]:
    """Trains and measures one (setting, model, N); returns (row, training curve)."""
    d = load_dataset(data, setting)
    states, lengths = d["states"], d["lengths"]
    t0 = time.perf_counter()
    pool, test_tosses, val_tosses = splits(states.shape[0], a.test_tosses, a.val_tosses)
    if n > len(pool):
        raise ValueError(f"cube study: N = {n} training tosses asked, the pool has {len(pool)}")
    train = windows(states, lengths, pool[:n])
    val = windows(states, lengths, val_tosses)
    test = windows(states, lengths, test_tosses)
    model, norm, curve = train_model(kind, train, val, a.hidden if kind == "lstm" else 256, a.epochs, a.patience,
                                     a.lr, a.batch, a.epoch_windows, a.seed)
    row = {"setting": setting, "model": kind, "tosses": n, "train_windows": int(train[0].shape[0]),
           "epochs": len(curve), "train_mse": _mse(model, norm, *train), "val_mse": _mse(model, norm, *val),
           "test_mse": _mse(model, norm, *test),
           **rollout_errors(model, norm, states, lengths, test_tosses, a.rollout),
           "seconds": time.perf_counter() - t0, **{k: v for k, v in SETTINGS[setting].items() if k != "contact"},
           "contact": SETTINGS[setting]["contact"]}
    return row, curve


def plot(out: str, rows: List[Dict], curves: Dict[str, List[Dict]], rollout: int) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    kinds = sorted({r["model"] for r in rows})
    settings = [s for s in SETTINGS if any(r["setting"] == s for r in rows)]
    for metric, fname, label in (("test_mse", "test_error.png", "test MSE (standardised)"),
                                 (f"rollout{rollout}_pos_m", "rollout_error.png", f"{rollout}-step position error [m] (x: diverged)")):
        fig, axes = plt.subplots(1, len(kinds), figsize=(6 * len(kinds), 4), squeeze=False)
        for ax, kind in zip(axes[0], kinds):
            for s in settings:
                rs = sorted((r for r in rows if r["setting"] == s and r["model"] == kind and r.get(metric) is not None),
                            key=lambda r: r["tosses"])
                if rs:
                    n, y = [r["tosses"] for r in rs], [r[metric] for r in rs]
                    # a rollout that diverged (error beyond 1 m, a cube toss's scale) is drawn at 1 m, as x
                    cap = 1.0 if metric.startswith("rollout") else math.inf
                    line, = ax.plot(n, [min(v, cap) for v in y], marker="o", ms=3, label=s,
                                    ls="-" if SETTINGS[s]["contact"] == "soft" else "--")
                    ax.plot([a for a, v in zip(n, y) if v > cap], [cap for v in y if v > cap], "x", ms=9,
                            color=line.get_color())
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("training tosses N")
            ax.set_ylabel(label)
            ax.set_title(kind)
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(out, fname), dpi=100)
        plt.close(fig)
    fig, axes = plt.subplots(1, len(kinds), figsize=(6 * len(kinds), 4), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        nmax = max(r["tosses"] for r in rows if r["model"] == kind)
        for s in settings:
            c = curves.get(f"{s}/{kind}/{nmax}")
            if c:
                ax.plot([e["epoch"] for e in c], [e["val_mse"] for e in c], label=s)
        ax.set_yscale("log")
        ax.set_xlabel("epoch")
        ax.set_ylabel(f"validation MSE, N = {nmax}")
        ax.set_title(kind)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "training_curves.png"), dpi=100)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m moreau.studies.cube", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="runs/study_a/data")
    p.add_argument("--out", default="results/study_a")
    p.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    p.add_argument("--models", nargs="+", default=["lstm", "mlp"], choices=list(MODELS))
    p.add_argument("--tosses", nargs="+", type=int, default=[10, 30, 100, 300, 1000], help="training set sizes N")
    p.add_argument("--hidden", type=int, default=256, help="LSTM hidden size (the paper: 256)")
    p.add_argument("--epochs", type=int, default=300)
    p.add_argument("--patience", type=int, default=20)
    p.add_argument("--epoch-windows", type=int, default=0, help="windows per epoch at most (0: whole passes)")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--data-tosses", type=int, default=11000, help="tosses generated per setting")
    p.add_argument("--val-tosses", type=int, default=500)
    p.add_argument("--test-tosses", type=int, default=500)
    p.add_argument("--rollout", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--quick", action="store_true", help="three settings, N 8 and 32, 5 epochs, small sets")
    p.add_argument("--report", action="store_true", help="train nothing: write the tables and figures of the runs "
                   "finished so far (a sweep stopped part-way)")
    p.add_argument("--cpu", action="store_true", help="the protocol of results/study_a, sized for 2 CPU cores: "
                   "hidden 64, 8,192 windows per epoch, 100 validation tosses, 4,000 tosses per setting, "
                   "N 10 to 3,000")
    a = p.parse_args(argv)
    if a.cpu:
        a.hidden, a.epoch_windows, a.val_tosses, a.data_tosses = 64, 8192, 100, 4000
        a.tosses = [10, 30, 100, 300, 1000, 3000]
    if a.quick:
        a.settings = [s for s in ("soft_mj100", "soft_1e5", "hard") if s in a.settings] or a.settings[:3]
        a.tosses, a.epochs, a.patience, a.hidden = [8, 32], 5, 3, 32
        a.data_tosses, a.val_tosses, a.test_tosses = 64, 16, 16
    torch.set_num_threads(a.threads)
    if not a.report:
        make_datasets(a.data, a.settings, n=a.data_tosses)
    os.makedirs(a.out, exist_ok=True)
    res_path, curve_path = os.path.join(a.out, "results.json"), os.path.join(a.out, "curves.json.xz")
    previous: Dict = json.load(open(res_path)) if os.path.exists(res_path) else {}
    rows: List[Dict] = previous.get("runs", [])
    found = find(os.path.join(a.out, "curves.json"))  # curves.json.xz, or a plain curves.json of an older run
    curves: Dict[str, List[Dict]] = {}
    if found:
        with open_text(found) as f:
            curves = json.load(f)
    proto = {k: getattr(a, k) for k in ("hidden", "epochs", "patience", "epoch_windows", "lr", "batch", "data_tosses",
                                        "val_tosses", "test_tosses", "rollout", "seed")}
    todo = [] if a.report else [
        (s, m, n) for n in sorted(a.tosses) for m in a.models for s in a.settings  # small N first, both models
        if not any(r["setting"] == s and r["model"] == m and r["tosses"] == n and r["protocol"] == proto for r in rows)]
    try:
        from tqdm import tqdm
        it = tqdm(todo, desc="models", dynamic_ncols=True)
    except ImportError:
        it = todo
    for s, m, n in it:
        row, curve = run(a.data, s, m, n, a)
        row["protocol"] = proto
        rows = [r for r in rows if not (r["setting"] == s and r["model"] == m and r["tosses"] == n)] + [row]
        curves[f"{s}/{m}/{n}"] = curve
        for path, obj in ((res_path, {"runs": rows}), (curve_path, curves)):
            tmp = os.path.join(os.path.dirname(path), "tmp." + os.path.basename(path))  # compressed as path is
            with open_text(tmp, "w") as f:
                json.dump(obj, f, indent=1)
            os.replace(tmp, path)
        if os.path.exists(os.path.join(a.out, "curves.json")):  # its curves are in curves.json.xz now
            os.remove(os.path.join(a.out, "curves.json"))
    if not rows:
        print(f"moreau.studies.cube: no finished runs in {a.out}")
        return 0
    manifest_path = os.path.join(a.data, "manifest.json")
    if os.path.exists(manifest_path):
        manifest = json.load(open(manifest_path))
    elif a.report and "data" in previous:  # --report without the data (a fresh clone): the manifest results.json keeps
        manifest = previous["data"]
    else:
        raise SystemExit(f"moreau.studies.cube: no {manifest_path}: generate the data (run without --report)")
    with open(res_path, "w") as f:
        json.dump({"runs": rows, "data": manifest}, f, indent=1)
    keys = [k for k in rows[0] if k != "protocol"]
    with open(os.path.join(a.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(sorted(rows, key=lambda r: (r["model"], list(SETTINGS).index(r["setting"]), r["tosses"])))
    plot(a.out, rows, curves, a.rollout)
    for r in sorted(rows, key=lambda r: (r["model"], list(SETTINGS).index(r["setting"]), r["tosses"])):
        print(f"{r['model']:4s} {r['setting']:13s} N {r['tosses']:5d}: test MSE {r['test_mse']:.4f}, one-step "
              f"{r['one_step_pos_m'] * 1e3:.2f} mm / {r['one_step_rot_deg']:.2f}°, {a.rollout}-step "
              f"{r.get(f'rollout{a.rollout}_pos_m', float('nan')) * 1e3:.1f} mm / "
              f"{r.get(f'rollout{a.rollout}_rot_deg', float('nan')):.1f}° ({r['epochs']} epochs, {r['seconds']:.0f} s)")
    print(f"results: {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
