"""rsep: an extended SPARQL endpoint for event processing over RDF streams."""
