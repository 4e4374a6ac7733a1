"""vse_ray.features: CNN image features."""
