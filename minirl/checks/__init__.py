"""Checks a learner runs right under each exercise: ``check_<function>(fn) -> bool``, one printed line.

    ok = check_compute_deltas(compute_deltas)
    compute_deltas = use_reference(compute_deltas, minirl.compute_deltas, ok)

See ``minirl.checks._core`` for the pattern and strict mode (``MINIRL_STRICT=1``). The modules, by
notebook: ``maze`` (01), ``maze_pg`` (02), ``ladder`` (03 and 04), ``grpo`` (05), ``preferences`` (06),
``lm`` (07), ``pretrained`` (08), ``trl`` (09). Adding a module is one star-import line below (its
``__all__`` lists its checks).
"""

from minirl.checks._core import *  # noqa: F403
from minirl.checks._core import __all__ as _core_all
from minirl.checks.grpo import *  # noqa: F403
from minirl.checks.ladder import *  # noqa: F403
from minirl.checks.lm import *  # noqa: F403
from minirl.checks.maze import *  # noqa: F403
from minirl.checks.maze_pg import *  # noqa: F403
from minirl.checks.preferences import *  # noqa: F403
from minirl.checks.pretrained import *  # noqa: F403
from minirl.checks.trl import *  # noqa: F403

__all__ = sorted({*_core_all, "tiny_forward", *(name for name in dict(globals()) if name.startswith("check_"))})
