"""moreau.trainers.meters: training statistics that stay on the device, and a timer that does not
wait for it.

On a GPU, reading a value back on the host (``.item()``, ``.tolist()``, ``float(t)``,
``bool(t)``, boolean indexing) waits for every kernel queued before it. Done once per control
step, such waits keep the GPU idle between small launches. The trainers therefore keep their
running statistics as tensors, update them with masks, and read them back once per log row:

- ``RecentValues``: the last ``size`` values appended (what ``collections.deque(maxlen=size)``
  would hold), in a device buffer; ``extend(values, mask)`` appends the masked entries in order
  without reading the mask on the host; ``mean()`` and ``median()`` are tensors;
- ``Stopwatch``: named intervals, timed with CUDA events on a CUDA device (read once, after the
  iteration's work) and with ``time.perf_counter`` on the CPU;
- ``host_values``: a dict's tensor values as Python floats, in one transfer per device.
"""
from __future__ import annotations

import collections
import time
from typing import Dict, Iterable, List, Optional

import torch

__all__ = ["RecentValues", "Stopwatch", "host_values"]


class RecentValues:
    """The last ``size`` values appended, on ``device`` (float64 by default: the values of float32
    tensors exactly, as a deque of their ``.tolist()`` would hold them).

    ``len()``, ``iter()`` and ``tolist()`` read the device (oldest value first): for logs,
    checkpoints and tests, not for every step."""

    def __init__(self, size: int, device="cpu", dtype=torch.float64):
        self.size = int(size)
        if self.size < 1:
            raise ValueError(f"RecentValues: size must be at least 1, got {size}")
        self._buf = torch.zeros(self.size + 1, dtype=dtype, device=device)  # [size]: where masked-out values go
        self._count = torch.zeros((), dtype=torch.long, device=device)      # values appended in all

    @property
    def device(self) -> torch.device:
        return self._buf.device

    def extend(self, values: torch.Tensor, mask: Optional[torch.Tensor] = None) -> None:
        """Appends the entries of ``values`` (flattened, row-major) where ``mask`` (same number of
        entries, bool) is set; all of them without a mask. No host read."""
        values = values.detach().reshape(-1).to(self._buf.dtype)
        if values.numel() == 0:
            return
        if mask is None:
            mask = torch.ones(values.shape, dtype=torch.bool, device=values.device)
        mask = mask.detach().reshape(-1).to(device=self._buf.device, dtype=torch.bool)
        rank = torch.cumsum(mask.to(torch.long), 0)  # 1-based position among the appended values
        total = rank[-1]
        keep = mask & (rank > total - self.size)      # only the last ``size`` of them can stay
        pos = torch.where(keep, torch.remainder(self._count + rank - 1, self.size), self.size)
        self._buf.scatter_(0, pos, values.to(self._buf.device))
        self._count += total

    def clear(self) -> None:
        self._count.zero_()

    def load(self, values: Iterable[float]) -> None:
        """Replaces the contents by ``values`` (a host sequence, oldest first; the last ``size`` kept)."""
        vals = list(values)[-self.size:]
        self._buf.zero_()
        if vals:
            self._buf[:len(vals)] = torch.tensor(vals, dtype=self._buf.dtype)
        self._count.fill_(len(vals))

    def num(self) -> torch.Tensor:
        """How many values it holds (a 0-dim long tensor, at most ``size``)."""
        return self._count.clamp(max=self.size)

    def _valid(self) -> torch.Tensor:
        return torch.arange(self.size, device=self._buf.device) < self.num()

    def mean(self) -> torch.Tensor:
        """The mean of the values held (0-dim; NaN when empty)."""
        total = torch.where(self._valid(), self._buf[:self.size], torch.zeros_like(self._buf[:self.size])).sum()
        return total / self.num()

    def median(self) -> torch.Tensor:
        """The median of the values held, as ``statistics.median`` computes it (the mean of the two
        middle values of an even number); 0-dim, meaningless when empty."""
        vals = torch.where(self._valid(), self._buf[:self.size], torch.full_like(self._buf[:self.size], float("inf")))
        vals = torch.sort(vals).values
        n = self.num()
        mid = torch.stack([(n - 1).clamp(min=0) // 2, n // 2]).clamp(max=self.size - 1)
        lo, hi = vals.gather(0, mid)
        return (lo + hi) / 2

    def tolist(self) -> List[float]:
        """The values held, oldest first (a host read)."""
        count = int(self._count)
        vals = self._buf[:self.size].tolist()
        if count <= self.size:
            return vals[:count]
        start = count % self.size
        return vals[start:] + vals[:start]

    def __len__(self) -> int:
        return int(self.num())

    def __iter__(self):
        return iter(self.tolist())


class Stopwatch:
    """Sums of named intervals between marks. On a CUDA device each mark records a CUDA event on
    the current stream (no wait), and ``read`` waits for the last one and sums the intervals
    between the events (the device's timeline); elsewhere marks are ``time.perf_counter()``.

        sw = Stopwatch(device)
        a = sw.mark(); work(); b = sw.mark()
        sw.add("work", a, b)
        seconds = sw.read()   # {"work": ...}: once per iteration
    """

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"
        self._pool: List = []   # CUDA events, reused from one read to the next
        self._marks: List = []  # events (CUDA) or perf_counter values, since the last read
        self._spans: List = []  # (name, first mark, second mark)

    def mark(self) -> int:
        """Marks now (on the device's stream on CUDA); returns the mark's number."""
        if self.cuda:
            if len(self._marks) == len(self._pool):
                self._pool.append(torch.cuda.Event(enable_timing=True))
            ev = self._pool[len(self._marks)]
            ev.record()
            self._marks.append(ev)
        else:
            self._marks.append(time.perf_counter())
        return len(self._marks) - 1

    def add(self, name: str, start: int, end: int) -> None:
        """Counts the interval between marks ``start`` and ``end`` toward ``name``."""
        self._spans.append((name, start, end))

    def read(self) -> Dict[str, float]:
        """Seconds per name of the intervals added since the last read; forgets them."""
        out: Dict[str, float] = collections.defaultdict(float)
        if self.cuda and self._marks:
            self._marks[-1].synchronize()
        for name, a, b in self._spans:
            if self.cuda:
                out[name] += self._marks[a].elapsed_time(self._marks[b]) / 1000.0
            else:
                out[name] += self._marks[b] - self._marks[a]
        self._marks.clear()
        self._spans.clear()
        return dict(out)


def host_values(values: Dict) -> Dict:
    """``values`` with every tensor value (one element each) replaced by a Python float, read back
    together: one transfer per device. Other values are kept as they are."""
    out = dict(values)
    by_device: Dict[torch.device, List[str]] = collections.defaultdict(list)
    for k, v in values.items():
        if isinstance(v, torch.Tensor):
            by_device[v.device].append(k)
    for keys in by_device.values():
        flat = torch.stack([values[k].detach().reshape(()).to(torch.float64) for k in keys]).tolist()
        out.update(zip(keys, flat))
    return out
