"""Compilation of the event algebra into an executable plan: GPM queries and the NFA."""
