"""The embedded synthetic dataset: scenes, their captions and rendered images."""
