"""Command-line interface (`vse-ray ...`)."""
