"""vse_ray.models"""
