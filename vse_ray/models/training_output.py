"""A training forward that brings its own loss terms besides the (B, B) similarities the run's loss scores.

Some models train with terms of their own: CVSE adds ranking losses on its instance- and consensus-level
embeddings and a KL term between the two modalities' concept predictions (over the gathered global batch,
as the run's loss), VSRN the caption-generation loss of each worker's own pairs. Their training ``forward``
returns a `TrainingOutput`; the training step scores ``sims`` with the run's loss, multiplies it by
``sims_weight`` and adds every ``extra_losses`` and ``local_losses`` term (already weighted) before
backward. Under DDP the global-batch part is scaled by the number of workers like the run's loss (DDP
averages gradients); ``local_losses`` are not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor


@dataclass
class TrainingOutput:
    """(B, B) similarities for the run's loss, its weight, and the model's own weighted loss terms by name."""

    sims: Tensor
    extra_losses: dict[str, Tensor] = field(default_factory=dict)
    sims_weight: float = 1.0
    local_losses: dict[str, Tensor] = field(default_factory=dict)

    def total(self, loss: Tensor) -> Tensor:
        """The training objective: ``sims_weight`` × the run's `loss` on ``sims`` + every own term."""
        return self.objective(loss, 1)

    def objective(self, loss: Tensor, world_size: int) -> Tensor:
        """What one of `world_size` DDP workers backpropagates: the global-batch terms × `world_size` (DDP
        averages the gradients) + this worker's local terms."""
        zero = loss.new_zeros(())
        shared = self.sims_weight * loss + sum(self.extra_losses.values(), zero)
        return shared * world_size + sum(self.local_losses.values(), zero)


def split_output(output: Tensor | TrainingOutput) -> TrainingOutput:
    """A model's training forward as a `TrainingOutput` (a plain similarity matrix has no extra terms)."""
    return output if isinstance(output, TrainingOutput) else TrainingOutput(output)
