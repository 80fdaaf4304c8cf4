"""Pydantic request and response models, one module per resource (the API's own types)."""
