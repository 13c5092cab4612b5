"""Machine description for benchmark JSON."""

import os
import platform


def machine() -> dict:
    import psutil
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1), "processor": platform.processor()}
