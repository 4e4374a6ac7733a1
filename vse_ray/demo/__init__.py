"""vse_ray.demo: the study protocol at laptop scale on the embedded dataset (`vse-ray demo`)."""

from vse_ray.demo.run import DemoSettings, run_demo

__all__ = ["DemoSettings", "run_demo"]
