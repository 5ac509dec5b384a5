"""The measured figures of README.md and RESULTS.md, generated from the results records in ``results/``.

The records are JSON files (``results/*.json``, written by ``minirl.results``).

Every measured table and sentence in those two documents (``DOCUMENTS``) sits between two markers::

    <!-- results: bench_lm_smollm2 (generated from results/ by `python -m minirl.report`) -->
    ...
    <!-- /results -->

and is made here from the record it names, ending with where the figures came from (command, machine, load
beside it, commit, date, file). README holds the short ``headline`` table; RESULTS.md holds every other block
and the text that explains it. ``python -m minirl.report`` rewrites the blocks of both; ``--check`` exits 1 when
one differs from what its record gives, as the test suite does. To change a figure, measure again with
``--save``; to change how it reads, edit the block's renderer (``BLOCKS`` names it), never the block in the
document.

The renderers, one module per area (each reads its records with ``minirl.report._format``'s helpers):

- ``minirl.report.toy``: the toy benchmark and the ladder (``bench``, ``ladder``);
- ``minirl.report.lm``: language models learning to sort (``lm_smollm2_cpu``, ``lm_smollm2_gpu``,
  ``lm_step_cost``, ``lm_tiny``, ``cpu_decode``);
- ``minirl.report.trl``: minirl and TRL side by side (``trl``);
- ``minirl.report.notebooks``: each notebook's time in fast and full mode (``notebooks``);
- ``minirl.report.reasoning``: notebook 10's run at seed 0 and its exploration (``reasoning``,
  ``reasoning_prompts``, ``reasoning_levers``);
- ``minirl.report.reasoning_bench``: the reasoning benchmarks over seeds (``reasoning_seeds``,
  ``reasoning_gpu_recipe``, ``reasoning_gpu``, ``reasoning_families``);
- ``minirl.report.self_training``: notebook 11's comparison at a matched budget (``self_training``);
- ``minirl.report.agents``: the text maze walked by SmolLM2 and the calculator, the chapter on agents (``agents``,
  ``calculator``);
- ``minirl.report.headline``: README's headline table (``headline``).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

from minirl.report import agents, headline, lm, notebooks, reasoning, reasoning_bench, self_training, toy, trl
from minirl.utils import REPO_ROOT

__all__ = ["BLOCKS", "DOCUMENTS", "render", "render_readme", "stale_blocks"]

README = REPO_ROOT / "README.md"
RESULTS = REPO_ROOT / "RESULTS.md"
DOCUMENTS = (README, RESULTS)
"""The documents whose results blocks ``python -m minirl.report`` writes and ``--check`` checks."""
BEGIN = re.compile(r"<!-- results: (?P<name>[a-z0-9_]+) .*?-->\n")
END = "<!-- /results -->"


BLOCKS: dict[str, Callable[[], str]] = {
    "bench": toy.bench,
    "ladder": toy.ladder,
    "lm_smollm2_cpu": lm.lm_smollm2_cpu,
    "lm_step_cost": lm.lm_step_cost,
    "cpu_decode": lm.cpu_decode,
    "lm_tiny": lm.lm_tiny,
    "lm_smollm2_gpu": lm.lm_smollm2_gpu,
    "trl": trl.trl,
    "notebooks": notebooks.notebooks,
    "reasoning": reasoning.reasoning,
    "reasoning_prompts": reasoning.reasoning_prompts,
    "reasoning_seeds": reasoning_bench.reasoning_seeds,
    "reasoning_levers": reasoning.reasoning_levers,
    "reasoning_families": reasoning_bench.reasoning_families,
    "reasoning_gpu_recipe": reasoning_bench.reasoning_gpu_recipe,
    "reasoning_gpu": reasoning_bench.reasoning_gpu,
    "self_training": self_training.self_training,
    "agents": agents.agents,
    "calculator": agents.calculator,
    "headline": headline.headline,
}


def render(name: str) -> str:
    """The markdown of one block, from its record(s)."""
    if name not in BLOCKS:
        raise KeyError(f"no results block named {name!r}; known: {sorted(BLOCKS)}")
    return BLOCKS[name]().rstrip() + "\n"


def render_readme(text: str) -> str:
    """``text`` with every results block rewritten from its record."""
    out, pos = [], 0
    for match in BEGIN.finditer(text):
        end = text.index(END, match.end())
        out += [text[pos : match.end()], render(match["name"])]
        pos = end
    return "".join(out) + text[pos:]


def stale_blocks(path: Path = README) -> list[str]:
    """Names of the blocks in ``path`` that differ from what their records give."""
    text = path.read_text()
    return [m["name"] for m in BEGIN.finditer(text) if render(m["name"]) != text[m.end() : text.index(END, m.end())]]


def outside_blocks(text: str) -> str:
    """A document's text with every results block (markers included) left out."""
    out, pos = [], 0
    for match in BEGIN.finditer(text):
        out.append(text[pos : match.start()])
        pos = text.index(END, match.end()) + len(END)
    return "".join(out) + text[pos:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minirl.report", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a block differs from its record")
    args = parser.parse_args(argv)
    if args.check:
        stale = [(path, name) for path in DOCUMENTS for name in stale_blocks(path)]
        for path, name in stale:
            print(f"{path.name} block {name!r} differs from its record: run python -m minirl.report")
        return 1 if stale else 0
    for path in DOCUMENTS:
        text = path.read_text()
        fresh = render_readme(text)
        if fresh != text:
            path.write_text(fresh)
            print(f"{path.name}: results blocks rewritten")
        else:
            print(f"{path.name}: results blocks up to date")
    return 0
