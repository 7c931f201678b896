"""Capture: session attribution, next states and the durable trajectory store."""
