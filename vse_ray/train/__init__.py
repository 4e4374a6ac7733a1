"""vse_ray.train"""
