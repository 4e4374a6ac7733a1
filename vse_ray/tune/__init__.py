"""vse_ray.tune"""
