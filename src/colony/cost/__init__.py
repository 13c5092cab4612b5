"""Per-device cost models (execution, serialization, transfer) learned from calibration runs."""

from colony.cost.calibrate import TEMPLATES, calibrate, calibrate_link, instantiate, random_query
from colony.cost.models import BlendExec, DeviceModels, ForestExec, LinearModel, NNLSExec, ape, fit_exec

__all__ = ["TEMPLATES", "calibrate", "calibrate_link", "instantiate", "random_query", "BlendExec", "DeviceModels",
           "ForestExec", "LinearModel", "NNLSExec", "ape", "fit_exec"]
