"""Drawing a maze with matplotlib: the grid, a value heat map, policy arrows and the agent.

``toy_envs.maze.draw_maze`` checks its arguments and calls ``draw``; ``Maze.render`` calls ``render_rgb``.
Everything here takes a checked maze (any object with the ``Maze`` attributes it reads) and checked arrays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from toy_envs.maze_layout import ACTION_DELTAS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["draw", "render_rgb"]

_WALL_COLOR = "#3a3a3a"
_START_COLOR = "#cfe8cf"
_GOAL_COLOR = "#ffe08a"
_ARROW_COLOR = "#d62728"
_ARROW_MAX = 0.45  # arrow length (in cells) for probability 1


def _format_value(v: float) -> str:
    return f"{v:.3g}"


def _draw_grid(ax: Axes, maze: Any, vals: np.ndarray | None) -> Any:
    """Floor, walls, start/goal tint or the value heat map, and grid lines.  Returns the image or None."""
    from matplotlib.patches import Rectangle

    image = None
    if vals is None:
        for cell, color in ((maze.start, _START_COLOR), (maze.goal, _GOAL_COLOR)):
            r, c = maze.cell_to_rc(cell)
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor=color, edgecolor="none"))
    else:
        grid = np.ma.masked_array(vals, mask=maze.walls).reshape(maze.n_rows, maze.n_cols)
        floor_vals = vals[~maze.walls]
        low, high = float(floor_vals.min()), float(floor_vals.max())
        image = ax.imshow(grid, cmap="viridis", vmin=low, vmax=high if high > low else low + 1.0)
    for cell in np.flatnonzero(maze.walls):
        r, c = maze.cell_to_rc(int(cell))
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor=_WALL_COLOR, edgecolor="none"))
    ax.hlines(np.arange(maze.n_rows + 1) - 0.5, -0.5, maze.n_cols - 0.5, color="0.6", linewidth=0.8)
    ax.vlines(np.arange(maze.n_cols + 1) - 0.5, -0.5, maze.n_rows - 0.5, color="0.6", linewidth=0.8)
    return image


def _text_color(image: Any, value: float | None) -> str:
    """Black on light cells, white on dark ones."""
    if image is None or value is None:
        return "black"
    r, g, b, _ = image.cmap(image.norm(value))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _draw_labels(ax: Axes, maze: Any, vals: np.ndarray | None, image: Any, busy: np.ndarray, cell_ids: bool) -> None:
    """S / G labels, the values written in the cells, and small cell indices (bottom left).

    ``busy[cell]`` is True where arrows or the agent take the cell centre: the label and the
    value then move to the top-left and bottom-right corners.
    """
    labels = {maze.start: "S", maze.goal: "G"}
    for cell in np.flatnonzero(~maze.walls):
        r, c = maze.cell_to_rc(int(cell))
        value = None if vals is None else vals[cell]
        color = _text_color(image, value)
        label = labels.get(int(cell))
        if label and value is None and not busy[cell]:
            ax.text(c, r, label, ha="center", va="center", fontsize=16, weight="bold", color=color)
        elif label:
            ax.text(c - 0.44, r - 0.42, label, ha="left", va="top", fontsize=9, weight="bold", color=color)
        text = "" if value is None else _format_value(value)
        if text and busy[cell]:
            ax.text(c + 0.45, r + 0.44, text, ha="right", va="bottom", fontsize=7, color=color)
        elif text:
            ax.text(c, r, text, ha="center", va="center", fontsize=10, color=color)
        if cell_ids:
            ax.text(c - 0.45, r + 0.44, str(cell), ha="left", va="bottom", fontsize=6, color=color, alpha=0.6)


def _draw_policy(ax: Axes, maze: Any, pi: np.ndarray) -> None:
    """One arrow per action from each cell centre, length proportional to its probability."""
    xs, ys, us, vs = [], [], [], []
    for cell in range(maze.n_cells):
        if maze.walls[cell] or cell == maze.goal:
            continue
        r, c = maze.cell_to_rc(cell)
        for a, (dr, dc) in enumerate(ACTION_DELTAS):
            if pi[cell, a] > 0:
                xs.append(c)
                ys.append(r)
                us.append(dc * pi[cell, a] * _ARROW_MAX)
                vs.append(dr * pi[cell, a] * _ARROW_MAX)
    if xs:
        ax.quiver(
            xs,
            ys,
            us,
            vs,
            angles="xy",
            scale_units="xy",
            scale=1,
            color=_ARROW_COLOR,
            width=0.008,
            headwidth=3.5,
            headlength=3.5,
            headaxislength=3,
            zorder=4,
        )


def draw(
    maze: Any,
    ax: Axes | None,
    vals: np.ndarray | None,
    pi: np.ndarray | None,
    title: str | None,
    agent_cell: int | None,
    cell_ids: bool,
) -> Axes:
    """``draw_maze``'s picture from checked arguments (``toy_envs.maze.draw_maze`` says what each one is)."""
    if ax is None:
        import matplotlib.pyplot as plt

        extra_width = 1.2 if vals is not None else 0.0
        _, ax = plt.subplots(figsize=(1.1 * maze.n_cols + 0.4 + extra_width, 1.1 * maze.n_rows + 0.6))

    image = _draw_grid(ax, maze, vals)
    busy = np.full(maze.n_cells, pi is not None)
    if agent_cell is not None:
        busy[agent_cell] = True
    _draw_labels(ax, maze, vals, image, busy=busy, cell_ids=cell_ids)
    if pi is not None:
        _draw_policy(ax, maze, pi)
    if agent_cell is not None:
        from matplotlib.patches import Circle

        r, c = maze.cell_to_rc(agent_cell)
        ax.add_patch(Circle((c, r), 0.2, facecolor="tab:blue", edgecolor="white", zorder=5))
    if image is not None:
        ax.figure.colorbar(image, ax=ax, fraction=0.08, pad=0.04, label="expected return")

    ax.set_xlim(-0.5, maze.n_cols - 0.5)
    ax.set_ylim(maze.n_rows - 0.5, -0.5)  # row 0 at the top
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title if title is not None else f"Maze {maze.n_rows}x{maze.n_cols}, {maze.max_steps} steps")
    return ax


def render_rgb(maze: Any) -> np.ndarray:
    """Draw on an off-screen Agg canvas (not registered with pyplot, so no figure leaks)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1.1 * maze.n_cols + 0.4, 1.1 * maze.n_rows + 0.6), dpi=64)
    canvas = FigureCanvasAgg(fig)
    used = maze.max_steps - maze.steps_left if maze.cell is not None else 0
    draw(maze, fig.add_subplot(), None, None, f"step {used}/{maze.max_steps}", maze.cell, True)
    canvas.draw()
    rgb = np.asarray(canvas.buffer_rgba())[..., :3].copy()
    fig.clear()
    return rgb
