"""vse_ray.demo: the whole mission on the embedded dataset (`vse-ray demo`)."""

from vse_ray.demo.run import DemoResult, DemoSettings, run_demo

__all__ = ["DemoResult", "DemoSettings", "run_demo"]
