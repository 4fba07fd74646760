"""The outside edges: the Flask endpoint and the rsep command line."""
