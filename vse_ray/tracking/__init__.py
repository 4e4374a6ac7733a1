"""vse_ray.tracking"""
