"""vse_ray.metrics"""
