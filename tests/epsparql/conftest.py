"""EP-SPARQL conformance tests (WWW 2011 §4, RSEP-QL §4.3-4.4): everything runs
in-process (engine="inprocess"); hypothesis settings are per test, so that this
package changes no global profile."""
