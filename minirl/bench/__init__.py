"""``minirl bench``: the acceptance benchmarks, measured on the machine they run on.

- ``minirl.bench.toy`` (``minirl bench``): the sorting tasks, the maze and the ladder;
- ``minirl.bench.lm`` (``minirl bench --lm``): the tiny model's and SmolLM2's recipes over seeds;
- ``minirl.bench.trl`` (``minirl bench --trl``): one run with minirl's loop and with TRL's ``GRPOTrainer``.

Each module is imported by name (``from minirl.bench.lm import run_lm_benchmark``): the language-model ones
load more than the toy one needs.
"""
