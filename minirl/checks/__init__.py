"""Checks a learner runs right under each exercise: ``check_<function>(fn) -> bool``, one printed line.

    ok = check_compute_deltas(compute_deltas)
    compute_deltas = use_reference(compute_deltas, minirl.compute_deltas, ok)

See ``minirl.checks._core`` for the pattern and strict mode (``MINIRL_STRICT=1``). One module per notebook,
named for it: ``nb01_maze``, ``nb02_maze_pg``, ``nb03_sorting``, ``nb04_ladder``, ``nb05_grpo``,
``nb06_preferences``, ``nb07_lm``, ``nb08_pretrained``, ``nb09_trl``, ``nb10_reasoning``,
``nb11_self_training``, ``nb12_agents``. Adding a module is one star-import line below (its ``__all__`` lists its
checks and references); a notebook imports them all from ``minirl.checks``.
"""

from minirl.checks._core import *  # noqa: F403
from minirl.checks._core import __all__ as _core_all
from minirl.checks.nb01_maze import *  # noqa: F403
from minirl.checks.nb02_maze_pg import *  # noqa: F403
from minirl.checks.nb03_sorting import *  # noqa: F403
from minirl.checks.nb04_ladder import *  # noqa: F403
from minirl.checks.nb05_grpo import *  # noqa: F403
from minirl.checks.nb06_preferences import *  # noqa: F403
from minirl.checks.nb07_lm import *  # noqa: F403
from minirl.checks.nb08_pretrained import *  # noqa: F403
from minirl.checks.nb09_trl import *  # noqa: F403
from minirl.checks.nb10_reasoning import *  # noqa: F403
from minirl.checks.nb11_self_training import *  # noqa: F403
from minirl.checks.nb12_agents import *  # noqa: F403

__all__ = sorted({*_core_all, "tiny_forward", *(name for name in dict(globals()) if name.startswith("check_"))})
