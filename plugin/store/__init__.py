"""The Oxigraph adapter: the only part of the core that imports pyoxigraph.

RDF files, the background knowledge base and batched GPM evaluation.
"""
