import pytest

from vse_ray.relevance import tokenize


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("A man, riding a Horse!", "a man riding a horse"),
        ("  Two   dogs\tplay .  ", "two dogs play"),
        ("The man's hat (red) -- on_top", "the man s hat red on top"),
        ("Café au lait", "café au lait"),
        ("?!.", ""),
        ("", ""),
    ],
)
def test_tokenize_lowercases_strips_punctuation_and_joins_with_single_spaces(raw: str, expected: str) -> None:
    assert tokenize(raw) == expected


def test_tokenize_is_idempotent() -> None:
    once = tokenize("A Dog; jumps... over THE fence!")
    assert tokenize(once) == once


def test_tokenize_rejects_non_strings() -> None:
    with pytest.raises(ValueError, match="text must be a str"):
        tokenize(["a", "list"])  # type: ignore[arg-type]
