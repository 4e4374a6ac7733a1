"""MLflow search filters with quoted values: a name with a quote in it still finds its run.

MLflow's filter grammar has no escape character; a value is quoted with whichever quote it does not hold.
"""

from __future__ import annotations


def quote_value(value: str, where: str = "value") -> str:
    """``value`` as a filter literal; ValueError naming ``where`` when it holds both ' and "."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise ValueError(f"{where}: {value!r} holds both ' and \"; MLflow filters cannot match it, drop one")


def tag_equals(tag: str, value: str, where: str = "value") -> str:
    """Filter clause ``tags.`<tag>` = <quoted value>``."""
    return f"tags.`{tag}` = {quote_value(value, where)}"
