"""A training forward that brings its own loss terms besides the (B, B) similarities the run's loss scores.

Some models train with more than one ranking loss: CVSE adds ranking losses on its instance- and
consensus-level embeddings and a KL term between the two modalities' concept predictions. Their ``forward``
returns a `TrainingOutput`; the training step scores ``sims`` with the run's loss, multiplies it by
``sims_weight`` and adds every ``extra_losses`` term (already weighted) before backward.
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

    def total(self, loss: Tensor) -> Tensor:
        """The training objective: ``sims_weight`` × the run's `loss` on ``sims`` + the extra terms."""
        return self.sims_weight * loss + sum(self.extra_losses.values(), loss.new_zeros(()))


def split_output(output: Tensor | TrainingOutput) -> TrainingOutput:
    """A model's training forward as a `TrainingOutput` (a plain similarity matrix has no extra terms)."""
    return output if isinstance(output, TrainingOutput) else TrainingOutput(output)
