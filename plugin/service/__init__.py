"""Continuous queries: the registry, the per-query runner, checkpoints, match
graphs and the streaming engines that drive them (no Flask, no Oxigraph).

How the pieces fit (docs/endpoint.md has the HTTP side):

- `registry.Registry` persists registered queries (`DATA/queries/<id>.json`).
- `runner.QueryRunner.step(records) -> list[MatchGraph]` is the per-batch step
  every engine calls: rank numbering over the query's streamset, the batched
  GPM stage, the per-key NFA, projection, match graphs. Its whole state
  (`RunnerState`) is what a checkpoint holds.
- `checkpoint.CheckpointStore` writes that state atomically
  (`DATA/checkpoints/<id>/`).
- `matches.MatchGraph` describes a match as a named graph (N-Quads text);
  `engine.MatchSink` writes a batch of them idempotently (the Oxigraph sink is
  `rsep.plugin.store.match_sink.OxigraphMatchSink`).
- `producers.Producers` runs C-SPARQL `REGISTER STREAM <s> AS CONSTRUCT`
  queries inside ingest: the events they derive go into the log as events of
  <s> (`Producers.append` is how the endpoint appends a request).
- `engine.StreamingEngine` is the interface of an engine (start, stop,
  register, unregister, notify, status, listeners); `inprocess.InProcessEngine`
  implements it with one background thread.
"""
