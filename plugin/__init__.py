"""The event-processing core: algebra, compiler, NFA runtime, GPM stage and the Spark and Oxigraph edges."""
