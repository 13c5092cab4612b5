"""Codec benchmark -> bench/results/codec.json (same as `colony bench codec --json OUT`)."""

import sys

from colony.cli import main

if __name__ == "__main__":
    sys.argv = ["colony", "bench", "codec", "--json", "bench/results/codec.json", *sys.argv[1:]]
    main()
