"""Generator throughput -> bench/results/data.json (same as `colony bench data --json OUT`)."""

import sys

from colony.cli import main

if __name__ == "__main__":
    sys.argv = ["colony", "bench", "data", "--json", "bench/results/data.json", *sys.argv[1:]]
    main()
