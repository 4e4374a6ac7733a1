"""vse_ray.losses"""
