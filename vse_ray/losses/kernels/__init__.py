"""Row kernels behind the losses: per-query loops over relevance and similarity rows, each compiled for the
host (numba) with a torch twin that stays on the tensors' device.

``backend`` picks between the two; ``sorting`` and ``distinct_rows`` are the shared row helpers (host views,
row-wise sort keys, equal rows found once); ``clustering`` holds the batched 1-D K-Means + Silhouette of the
adaptive ladder levels. The samplers and the loss formulas (the compiled BCLS sliding-window loss,
``bcls_compiled``, among them) live one level up, in ``vse_ray.losses``.
"""
