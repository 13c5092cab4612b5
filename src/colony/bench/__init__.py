"""Benchmarks behind `colony bench ...` and the scripts in bench/."""
