"""The precompute stages (Ray Data): images, captions and relevance into a folder, and its config."""
