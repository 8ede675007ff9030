"""moreau.evaluation.video: pictures of an evaluation, drawn with matplotlib (no display needed).

``render_video``: a GIF (or MP4, with ffmpeg) of a robot's configurations, a 3-D stick figure per
frame from the kinematics; ``plot_velocity_traces``: commanded against achieved base velocities.
"""
from __future__ import annotations

import os

import torch

__all__ = ["render_video", "plot_velocity_traces"]


def render_video(path: str, env, qs: torch.Tensor, vel: torch.Tensor, fps: float = 25.0) -> None:
    """A GIF (or MP4, with ffmpeg) of configurations ``qs`` (T, k, nq) of ``env``'s robot: one 3-D
    panel per environment following its base, the legs as lines between the body origins and
    the feet, the ground as a grid; ``vel`` (T, k, 6): command then achieved (v_x, v_y, ω_z)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib import animation

    kin = env.kinematics
    T, k = qs.shape[0], qs.shape[1]
    flat = qs.reshape(T * k, -1).to(device=kin.tree_p.device, dtype=kin.tree_p.dtype)
    _, p = kin.body_poses(flat)
    feet = kin.contact_positions(flat)
    p, feet = p.reshape(T, k, -1, 3).cpu().numpy(), feet.reshape(T, k, -1, 3).cpu().numpy()
    parent = kin.parent
    con_body = kin.con_body.tolist()
    stride = max(1, int(round(1.0 / (fps * env.dt))))
    frames = list(range(0, T, stride))
    cols = min(k, 2)
    rows = (k + cols - 1) // cols
    fig = plt.figure(figsize=(4.2 * cols, 3.8 * rows))
    axes = [fig.add_subplot(rows, cols, i + 1, projection="3d") for i in range(k)]

    artists = []
    for ax in axes:
        ax.set_axis_off()  # the ground grid below stands for the axes
        ax.view_init(elev=20, azim=-60)
        artists.append((ax.plot([], [], [], color="0.8", lw=0.6)[0], ax.plot([], [], [], color="C0", lw=2.2)[0],
                        ax.plot([], [], [], "o", color="C3", ms=3)[0]))
    nan = [float("nan")] * 3
    hips = [b for b in range(p.shape[2]) if parent[b] == 0]

    def draw(fi):
        t = frames[fi]
        for e, ax in enumerate(axes):
            grid, legs_line, feet_dots = artists[e]
            c = p[t, e, 0]
            r = 0.6
            ax.set_xlim(c[0] - r, c[0] + r)
            ax.set_ylim(c[1] - r, c[1] + r)
            ax.set_zlim(0, 2 * r * 0.8)
            pts = []  # polylines of segments separated by NaN
            g0x, g0y = round(c[0] - r, 1), round(c[1] - r, 1)
            for i in range(8):
                pts += [[g0x + 0.2 * i, g0y, 0], [g0x + 0.2 * i, g0y + 1.4, 0], nan,
                        [g0x, g0y + 0.2 * i, 0], [g0x + 1.4, g0y + 0.2 * i, 0], nan]
            g = np.array(pts)
            grid.set_data_3d(g[:, 0], g[:, 1], g[:, 2])
            legs = []
            for b in range(1, p.shape[2]):
                if parent[b] >= 0:
                    legs += [p[t, e, parent[b]], p[t, e, b], nan]
            for j, b in enumerate(con_body):
                legs += [p[t, e, b], feet[t, e, j], nan]
            if len(hips) >= 3:  # the base as the outline through its children's origins
                legs += [p[t, e, h] for h in hips + hips[:1]]
            s_ = np.array(legs)
            legs_line.set_data_3d(s_[:, 0], s_[:, 1], s_[:, 2])
            feet_dots.set_data_3d(feet[t, e, :, 0], feet[t, e, :, 1], feet[t, e, :, 2])
            v = vel[t, e]
            ax.set_title(f"cmd ({v[0]:+.2f}, {v[1]:+.2f}, {v[2]:+.2f})\nvel ({v[3]:+.2f}, {v[4]:+.2f}, {v[5]:+.2f})",
                         fontsize=8)
        fig.suptitle(f"t = {t * env.dt:.2f} s", fontsize=9)

    anim = animation.FuncAnimation(fig, draw, frames=len(frames))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if path.endswith(".gif"):
        writer = animation.PillowWriter(fps=fps)
    elif path.endswith(".mp4"):
        if not animation.FFMpegWriter.isAvailable():
            raise SystemExit(f"moreau.evaluation.video: {path}: MP4 needs ffmpeg on PATH; write a .gif instead")
        writer = animation.FFMpegWriter(fps=fps)
    else:
        raise SystemExit(f"moreau.evaluation.video: {path}: expected a .gif or .mp4 path")
    anim.save(path, writer=writer, dpi=70)
    plt.close(fig)


def plot_terrain_metrics(path: str, rows) -> None:
    """A PNG of the planar and yaw-rate tracking errors and the falls per minute against the
    terrain's difficulty, one line per terrain type (``rows``: LocomotionMetrics.terrain_rows)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [("lin_vel_error", "planar error [m/s]"), ("yaw_rate_error", "yaw-rate error [rad/s]"),
            ("falls_per_minute", "falls per minute")]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for kind in dict.fromkeys(r["type"] for r in rows):
        mine = [r for r in rows if r["type"] == kind]
        for ax, (k, label) in zip(axes, keys):
            ax.plot([r["difficulty"] for r in mine], [r[k] for r in mine], marker="o", label=kind)
            ax.set_xlabel("difficulty")
            ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_velocity_traces(path: str, cmd: torch.Tensor, vel: torch.Tensor, dt: float) -> None:
    """A PNG of commanded (dashed) and achieved v_x, v_y, ω_z against time: ``cmd`` and ``vel``
    (T, k, 3) for k environments, one column each; ``dt`` the control step [s]."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = torch.arange(cmd.shape[0]) * dt
    k = cmd.shape[1]
    names = ["v_x [m/s]", "v_y [m/s]", "ω_z [rad/s]"]
    fig, axes = plt.subplots(3, k, figsize=(4 * k, 7), sharex=True, squeeze=False)
    for e in range(k):
        for j in range(3):
            ax = axes[j][e]
            ax.plot(t, cmd[:, e, j], "k--", lw=1, label="commanded")
            ax.plot(t, vel[:, e, j], lw=1, label="achieved")
            if e == 0:
                ax.set_ylabel(names[j])
            if j == 0:
                ax.set_title(f"environment {e}")
            if j == 2:
                ax.set_xlabel("t [s]")
    axes[0][0].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
