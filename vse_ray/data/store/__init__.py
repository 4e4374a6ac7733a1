"""A precompute folder: its schema and shards, the readers, and the check that it is complete."""
