"""vse_ray.reporting: the one table formatter behind compare, the sweep summary, the demo and the study."""

from vse_ray.reporting.metric_columns import metric_column, metric_number, metric_title
from vse_ray.reporting.table import DEFAULT_WIDTH, FORMATS, Column, format_cell, render_table, shorten_middle

__all__ = [
    "DEFAULT_WIDTH",
    "FORMATS",
    "Column",
    "format_cell",
    "metric_column",
    "metric_number",
    "metric_title",
    "render_table",
    "shorten_middle",
]
