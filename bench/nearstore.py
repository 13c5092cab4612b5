"""Benchmark: D2D vs host-mediated distributed merge sort on emulated CSDs (seed 004).

    flock /tmp/colony-bench.lock env PYTHONPATH=src python bench/nearstore.py --json bench/results/nearstore.json

Same as `colony bench nearstore`; arguments are passed through.
"""

import sys

from colony.cli import main

if __name__ == "__main__":
    sys.argv = [sys.argv[0], "bench", "nearstore", *sys.argv[1:]]
    main()
