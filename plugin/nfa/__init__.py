"""Automaton: the compiled NFA and its pure runtime (no Spark, no Oxigraph)."""
