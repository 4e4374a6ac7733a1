"""vse_ray.relevance"""
