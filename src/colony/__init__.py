"""Colony: composable Arrow data services on embedded devices (SmartNICs, DPUs, CSDs)."""

__version__ = "0.1.0"
