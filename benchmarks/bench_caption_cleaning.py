"""vse_ray's ALBEF caption cleaning (`vse_ray.models.caption_cleaning.albef_clean`) against the released
``pre_caption``'s outputs on whole caption lists, with its speed.

The released function's outputs are written outside the project, one line per caption, by running it on the
same list (lerogo/aaai24_itr_cusa 5b996f4 ``dataset/utils.py``, as tests/fixtures/official/README.md says for
the fixture). This reads both files, counts the captions cleaned alike and prints the first that differ.

    python benchmarks/bench_caption_cleaning.py --captions f30k_test_caps.txt --official f30k_test_clean.txt
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from vse_ray.models.caption_cleaning import albef_clean


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--captions", type=Path, nargs="+", required=True, help="caption lists, one a line")
    parser.add_argument(
        "--official", type=Path, nargs="+", required=True, help="pre_caption's lines, same order"
    )
    args = parser.parse_args()
    if len(args.captions) != len(args.official):
        parser.error("--captions and --official: one official file per caption list")
    for captions_file, official_file in zip(args.captions, args.official, strict=True):
        captions = captions_file.read_text(encoding="utf8").split("\n")[:-1]
        official = official_file.read_text(encoding="utf8").split("\n")[:-1]
        if len(captions) != len(official):
            raise SystemExit(f"{official_file}: {len(official)} lines for {len(captions)} captions")
        start = time.perf_counter()
        ours = [albef_clean(c) for c in captions]
        seconds = time.perf_counter() - start
        differ = [(c, o, t) for c, o, t in zip(captions, ours, official, strict=True) if o != t]
        print(
            f"{captions_file.name}: {len(captions) - len(differ)} of {len(captions)} captions cleaned as the "
            f"released pre_caption cleans them; {len(captions) / seconds:,.0f} captions/s"
        )
        for caption, got, want in differ[:5]:
            print(f"  {caption!r}: {got!r}, released {want!r}")


if __name__ == "__main__":
    main()
