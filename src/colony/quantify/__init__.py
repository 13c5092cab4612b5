"""Offload-benefit toolkit (MISSION §6): MBWU measurement (`mbwu`, `kv`, `ycsb`, `monitor`,
`metrics`), the data-availability model (`availability`), platform characterization
(`characterize`) and cost/power calculators (`costpower`). Imports colony.errors and
colony.data only, never Ray. See docs/quantify.md."""
