"""Sifting benchmark script: kernel, impulse response, balance -> bench/results/sift.json.

Run from the repository root under the shared lock:
    flock /tmp/colony-bench.lock env PYTHONPATH=src python bench/sift.py [--quick]
"""

import sys

from colony.sift.bench import main

if __name__ == "__main__":
    sys.exit(main())
