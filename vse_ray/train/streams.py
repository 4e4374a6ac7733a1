"""The random streams of a training run, and which draw each one feeds.

- initial weights: torch, seeded with `seed` before the model is built (the same on every worker);
- epoch order: numpy `(seed, epoch)`, one permutation of the split dealt to the workers (`TableBatches`);
- caption augmentation: numpy `(seed, rank, epoch)`;
- region drop (VSE∞'s size augmentation): numpy `(seed, rank, epoch, 1)`;
- image crops (open_clip's random resized crop, `image_crop_scale`): a torch generator from
  `(seed, rank, epoch, 3)`, drawn as each batch is built;
- dropout, random crops and any other draw inside the step: torch, reseeded from `(seed, rank, epoch, 2)`
  as each epoch starts.

Every stream of an epoch is keyed by its epoch, so a run resumed after epoch k draws what the uninterrupted
run drew; keyed by rank, so workers draw independently of each other; and kept apart, so a change to one
draw (say, a longer caption) moves no other.
"""

from __future__ import annotations

import numpy as np
import torch

REGION_DROP = 1
STEP_TORCH = 2
IMAGE_CROP = 3


def caption_rng(seed: int, rank: int, epoch: int) -> np.random.Generator:
    """The caption augmentation's draws of this worker's epoch."""
    return np.random.default_rng([seed, rank, epoch])


def region_rng(seed: int, rank: int, epoch: int) -> np.random.Generator:
    """The region drop's draws of this worker's epoch."""
    return np.random.default_rng([seed, rank, epoch, REGION_DROP])


def seed_step_torch(seed: int, rank: int, epoch: int) -> None:
    """Reseed torch's global stream (CPU and CUDA) for the draws inside this worker's training steps."""
    state = np.random.SeedSequence([seed, rank, epoch, STEP_TORCH]).generate_state(2, dtype=np.uint32)
    torch.manual_seed(int(state[0]) << 31 | int(state[1]) >> 1)


def crop_generator(seed: int, rank: int, epoch: int) -> torch.Generator:
    """The image crops' draws of this worker's epoch."""
    state = np.random.SeedSequence([seed, rank, epoch, IMAGE_CROP]).generate_state(1, dtype=np.uint64)
    return torch.Generator().manual_seed(int(state[0]))
