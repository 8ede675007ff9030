"""Rough terrain for the locomotion task: legged_gym's terrain generator on moreau's heightfield
ground (docs/terrain.md).

The terrain is a grid of square tiles, ``num_levels`` rows of increasing difficulty (0 to 1) by
``num_types`` columns, each column one terrain type in the proportions ``proportions`` (legged_gym's
``terrain_proportions``, in its order): smooth slopes (half up, half down), rough slopes, stairs up,
stairs down, discrete obstacles. At difficulty d: slope 0.4 d (rise over run), stairs 0.05 + 0.18 d
m high and 0.31 m deep, obstacles 0.05 + 0.2 d m high (20 rectangles of 1-2 m), rough slopes add
uniform noise of ±5 cm on a 0.2 m grid; every tile keeps a flat 3 m platform at its centre, where
environments start. A flat border surrounds the tiles.

``Terrain.height(x, y)`` evaluates the same piecewise-planar surface as the simulator (torch,
batched): the task's height samples and base heights use it. ``Terrain.update_levels`` is
legged_gym's curriculum: an environment that walked more than half a tile moves a level up, one
that walked less than half of what its command asked moves a level down; past the last level it
goes to a random one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np
import torch

import moreau

__all__ = ["TerrainConfig", "Terrain", "TERRAIN_TYPES", "heightfield_surface"]

TERRAIN_TYPES = ("smooth_slope", "rough_slope", "stairs_up", "stairs_down", "obstacles")


def heightfield_surface(h: torch.Tensor, origin, spacing, x: torch.Tensor, y: torch.Tensor, normal: bool = False):
    """The simulator's ground on a heightfield (docs/terrain.md) in torch: heights [m] at (x, y)
    (any shape) of the grid ``h`` (ny, nx), sample (i, j) at origin + (i dx, j dy), ``spacing``
    (dx, dy). Cell (i, j) is split along its (i, j)–(i+1, j+1) diagonal into two planar triangles;
    beyond the grid the edges continue outward. With ``normal`` also the unit normals (..., 3)."""
    ny, nx = h.shape
    u = (x - origin[0]) / spacing[0]
    w = (y - origin[1]) / spacing[1]
    uc, wc = u.clamp(0, nx - 1), w.clamp(0, ny - 1)
    i = uc.floor().long().clamp(max=nx - 2)
    j = wc.floor().long().clamp(max=ny - 2)
    fu, fw = uc - i, wc - j
    z00, z10, z01, z11 = h[j, i], h[j, i + 1], h[j + 1, i], h[j + 1, i + 1]
    lower = fu >= fw  # the triangle (00, 10, 11), else (00, 01, 11)
    hu = torch.where(lower, z10 - z00, z11 - z01)
    hw = torch.where(lower, z11 - z10, z01 - z00)
    z = z00 + fu * hu + fw * hw
    if not normal:
        return z
    # a clamped coordinate does not change the height: no slope along it
    hx = torch.where(u == uc, hu / spacing[0], torch.zeros_like(hu))
    hy = torch.where(w == wc, hw / spacing[1], torch.zeros_like(hw))
    n = torch.stack([-hx, -hy, torch.ones_like(hx)], -1)
    return z, n / n.norm(dim=-1, keepdim=True)


@dataclass(frozen=True)
class TerrainConfig:
    tile_size: float = 8.0          # [m] square tiles
    num_levels: int = 10            # rows: difficulty level / (num_levels - 1)
    num_types: int = 20             # columns
    proportions: Tuple[float, ...] = (0.1, 0.1, 0.35, 0.25, 0.2)  # of TERRAIN_TYPES' columns
    spacing: float = 0.1            # [m] between height samples
    border: float = 5.0             # [m] flat margin around the tiles
    platform: float = 3.0           # [m] flat square at each tile's centre
    max_init_level: int = 5         # environments start at levels 0 .. max_init_level
    seed: int = 0


def _column_types(cfg: TerrainConfig):
    """The terrain type of each column: column c takes the type whose cumulative proportion first
    exceeds (c + 0.5) / num_types (legged_gym's choice for a curriculum)."""
    edges = np.cumsum(cfg.proportions) / sum(cfg.proportions)
    return [TERRAIN_TYPES[int(np.searchsorted(edges, (c + 0.5) / cfg.num_types))] for c in range(cfg.num_types)]


def _tile(kind: str, difficulty: float, n: int, cfg: TerrainConfig, rng: np.random.Generator) -> np.ndarray:
    """An (n, n) tile of heights [m] of `kind` at `difficulty`, 0 on its rim (neighbouring tiles
    share it), as legged_gym builds them: pyramids whose flat top (or bottom) is the centre
    platform."""
    d = cfg.spacing
    idx = (np.arange(n) - (n - 1) / 2) * d
    x, y = np.meshgrid(idx, idx)  # row j: y, column i: x
    half = cfg.platform / 2
    rim = (n - 1) / 2 * d
    # distance in from the rim by the square (L∞) norm, up to the platform's edge
    inward = np.minimum(rim - np.maximum(np.abs(x), np.abs(y)), rim - half)
    if kind in ("smooth_slope", "rough_slope"):
        sign = -1.0 if kind == "smooth_slope" and rng.random() < 0.5 else 1.0  # half the smooth ones a pit
        h = sign * 0.4 * difficulty * inward
        if kind == "rough_slope":  # uniform noise of ±5 cm in 5 mm steps on a 0.2 m grid, interpolated
            coarse = int(round(0.2 / d))
            m = (n - 1) // coarse + 2
            noise = np.round(rng.uniform(-0.05, 0.05, size=(m, m)) / 0.005) * 0.005
            c = np.arange(n) / coarse
            k = np.floor(c).astype(int)
            f = (c - k)[:, None]
            noise = noise[k] * (1 - f) + noise[k + 1] * f           # along y
            noise = noise[:, k] * (1 - f.T) + noise[:, k + 1] * f.T  # along x
            h = h + np.where((inward > 1e-9) & (inward < rim - half), noise, 0.0)  # not on the rim or platform
        return h
    if kind in ("stairs_up", "stairs_down"):
        step = (0.05 + 0.18 * difficulty) * (1.0 if kind == "stairs_up" else -1.0)
        return step * np.floor(inward / 0.31 + 1e-9)
    if kind == "obstacles":  # 20 rectangles of 1-2 m, ±h or ±h/2 high, off the platform
        h = np.zeros((n, n))
        height = 0.05 + 0.2 * difficulty
        for _ in range(20):
            w, l = rng.uniform(1.0, 2.0, size=2)
            cx, cy = rng.uniform(-rim, rim, size=2)
            h[(np.abs(x - cx) <= w / 2) & (np.abs(y - cy) <= l / 2)] = rng.choice([-height, -height / 2, height / 2, height])
        h[(inward <= 1e-9) | ((np.abs(x) <= half) & (np.abs(y) <= half))] = 0.0  # the rim and the platform
        return h
    raise ValueError(f"terrain type {kind!r}: expected one of {TERRAIN_TYPES}")


class Terrain:
    """A generated terrain (see the module docstring): ``heights`` (ny, nx) [m] with sample (0, 0)
    at ``origin`` and ``spacing`` apart, ``tile_origin`` (num_levels, num_types, 3) the centre of
    each tile's platform (x, y, ground height), ``types`` the columns' terrain types."""

    def __init__(self, cfg: TerrainConfig = TerrainConfig()):
        self.cfg = cfg
        rng = np.random.default_rng(cfg.seed)
        n = int(round(cfg.tile_size / cfg.spacing)) + 1  # samples per tile side (shared edges)
        b = int(round(cfg.border / cfg.spacing))
        self.types = _column_types(cfg)
        ny, nx = 2 * b + cfg.num_levels * (n - 1) + 1, 2 * b + cfg.num_types * (n - 1) + 1
        heights = np.zeros((ny, nx))
        centre = np.zeros((cfg.num_levels, cfg.num_types, 3))
        self.origin = (-cfg.border, -cfg.border)
        self.spacing = cfg.spacing
        for level in range(cfg.num_levels):
            difficulty = level / max(cfg.num_levels - 1, 1)
            for col, kind in enumerate(self.types):
                j0, i0 = b + level * (n - 1), b + col * (n - 1)
                tile = _tile(kind, difficulty, n, cfg, rng)
                # neighbouring tiles share their rim samples (all 0)
                heights[j0:j0 + n, i0:i0 + n] = tile
                centre[level, col] = ((col + 0.5) * cfg.tile_size, (level + 0.5) * cfg.tile_size, tile[n // 2, n // 2])
        self.heights = heights
        self.tile_origin = centre
        self._h = torch.from_numpy(heights)

    @property
    def shape(self) -> Tuple[int, int]:
        return self.heights.shape

    def model(self, robot) -> moreau.Model:
        """``robot`` (a Model or a robot file) on this terrain."""
        return moreau.with_heightfield(robot, self.heights, spacing=self.spacing, origin=self.origin)

    def height(self, x: torch.Tensor, y: torch.Tensor, normal: bool = False):
        """Heights [m] at world (x, y) of the terrain's frame (any shape; the terrain's
        piecewise-planar surface, the edges continued outward, as the simulator's ground); with
        ``normal`` also the unit normals (..., 3)."""
        h = self._h.to(device=x.device, dtype=x.dtype)
        return heightfield_surface(h, self.origin, (self.spacing, self.spacing), x, y, normal)

    def initial_levels(self, num_envs: int, generator: torch.Generator):
        """Levels (0 .. max_init_level, at most the last) and columns (spread evenly) of num_envs
        environments."""
        dev = generator.device
        top = min(self.cfg.max_init_level, self.cfg.num_levels - 1)
        levels = torch.randint(0, top + 1, (num_envs,), generator=generator, device=dev)
        cols = torch.arange(num_envs, device=dev) * self.cfg.num_types // max(num_envs, 1)
        return levels, cols

    def update_levels(self, levels, cols, walked, commanded, generator: torch.Generator):
        """legged_gym's curriculum: level + 1 where ``walked`` (distance from the tile's origin
        [m]) exceeds half a tile, − 1 where it is below half of ``commanded`` (the command's speed
        times the episode's length [m]) and not up; past the last level a random level, never
        below 0. Returns the new levels (the columns stay)."""
        up = walked > self.cfg.tile_size / 2
        down = (walked < 0.5 * commanded) & ~up
        new = levels + up.long() - down.long()
        top = self.cfg.num_levels
        random = torch.randint(0, top, levels.shape, generator=generator, device=generator.device)
        return torch.where(new >= top, random, new.clamp(min=0))

    def origins(self, levels, cols) -> torch.Tensor:
        """(n, 3) tile origins (x, y, ground height) of the environments."""
        return torch.from_numpy(self.tile_origin).to(levels.device)[levels, cols]

