"""Host->device injection benchmark: embedded vs multi-node colony, beside memcpy and IPC.

    flock /tmp/colony-bench.lock env PYTHONPATH=src python bench/inject.py [--sizes 1M,4M,16M,64M]

Writes bench/results/inject.json (top-level `summary` and `machine`). Same as
`colony bench inject --json OUT`. The logic lives in colony.runtime.inject_bench.
"""

import argparse
from pathlib import Path

from colony.runtime.inject_bench import run_cli

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", default=str(Path(__file__).parent / "results" / "inject.json"))
    ap.add_argument("--sizes", default="1M,4M,16M,64M")
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--temp-dir", default="/tmp/ray-colony-bench")
    a = ap.parse_args()
    run_cli(Path(a.json), a.sizes, a.nodes, a.repeats, a.temp_dir)
