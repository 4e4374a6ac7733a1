"""vse_ray.data"""
