"""Does vse_ray's ALBEF caption cleaning (`vse_ray.models.caption_cleaning.albef_clean`) clean whole caption
lists as the released ``pre_caption`` does?

The released function is loaded at run time from a checkout of lerogo/aaai24_itr_cusa (commit 5b996f4, file
``dataset/utils.py``, unchanged; only that file is read, not its package), run on every caption of each list,
and compared with vse_ray's cleaning; it prints the count cleaned alike, the first that differ, and both
speeds.

    python parity/caption_cleaning.py --official <CUSA checkout> --captions dev_caps.txt test_caps.txt
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from collections.abc import Callable
from pathlib import Path

from vse_ray.models.caption_cleaning import albef_clean


def released_pre_caption(checkout: Path) -> Callable[[str], str]:
    """``pre_caption`` of the checkout's ``dataset/utils.py``, loaded as a lone module."""
    spec = importlib.util.spec_from_file_location("cusa_dataset_utils", checkout / "dataset" / "utils.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"{checkout}: no dataset/utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.pre_caption


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--official", type=Path, required=True, help="a checkout of lerogo/aaai24_itr_cusa")
    parser.add_argument("--captions", type=Path, nargs="+", required=True, help="caption lists, one a line")
    args = parser.parse_args()
    released = released_pre_caption(args.official)
    for captions_file in args.captions:
        captions = captions_file.read_text(encoding="utf8").split("\n")[:-1]
        start = time.perf_counter()
        theirs = [released(c) for c in captions]
        middle = time.perf_counter()
        ours = [albef_clean(c) for c in captions]
        end = time.perf_counter()
        differ = [(c, o, t) for c, o, t in zip(captions, ours, theirs, strict=True) if o != t]
        print(
            f"{captions_file.name}: {len(captions) - len(differ)} of {len(captions)} captions cleaned as the "
            f"released pre_caption cleans them; {len(captions) / (end - middle):,.0f} captions/s "
            f"(released: {len(captions) / (middle - start):,.0f})"
        )
        for caption, got, want in differ[:5]:
            print(f"  {caption!r}: {got!r}, released {want!r}")


if __name__ == "__main__":
    main()
