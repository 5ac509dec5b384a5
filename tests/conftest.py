"""Shared test settings."""

import torch

# The models are tiny: one thread is faster than several fighting over 2 CPU cores.
torch.set_num_threads(1)
