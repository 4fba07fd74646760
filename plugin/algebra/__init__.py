"""The one event algebra: SPARQL syntax nodes and the event operators all dialects map onto."""
