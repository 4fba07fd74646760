// The query page (/yasgui): YASGUI on /sparql, a YASQE editor for event queries with a dialect
// selector and the examples, and a vis-timeline of every registered query's matches (one lane
// per query, from GET /queries/{id}/results, refreshed when GET /queries/{id}/events pushes one).
(function () {
  "use strict";

  const TOKEN_KEY = "rsep.token"; // shared with the page at / (rsep.js)
  const $ = (id) => document.getElementById(id);

  function token() {
    return (localStorage.getItem(TOKEN_KEY) || "").trim();
  }

  function withToken(headers) {
    const out = Object.assign({}, headers || {});
    if (token()) out.Authorization = "Bearer " + token();
    return out;
  }

  async function api(path, options) {
    const request = Object.assign({}, options || {});
    request.headers = withToken(request.headers);
    const response = await fetch(path, request);
    if (!response.ok) {
      const text = (await response.text()).trim();
      throw new Error(text || response.status + " " + response.statusText);
    }
    return response;
  }

  function status(id, text, failed) {
    const node = $(id);
    node.textContent = text;
    node.classList.toggle("error", Boolean(failed));
  }

  // ------------------------------------------------------------------ the token field

  const tokenInput = $("token");
  tokenInput.value = token();
  tokenInput.addEventListener("change", () => {
    const value = tokenInput.value.trim();
    if (value) localStorage.setItem(TOKEN_KEY, value);
    else localStorage.removeItem(TOKEN_KEY);
  });

  // ------------------------------------------------------------------ SPARQL: YASGUI

  const endpoint = window.location.origin + "/sparql";
  const yasgui = new Yasgui($("yasgui"), {
    requestConfig: { endpoint: endpoint, method: "POST", headers: () => withToken({}) },
    copyEndpointOnNewTab: true,
    persistenceId: null, // nothing kept between visits: the page shows this endpoint's state
    showSnippetsBar: false,
    endpointCatalogueOptions: { getData: () => [{ endpoint: endpoint }] },
    yasqe: { value: "SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 25" },
  });

  function sparqlTab() {
    return yasgui.getTab();
  }

  // ------------------------------------------------------------------ event queries

  const events = new Yasgui.Yasqe($("event-editor"), {
    value: "",
    persistenceId: null,
    showQueryButton: false,
    syntaxErrorCheck: false, // SPARQL's grammar would flag every event construct
    resizeable: true,
  });
  let examples = [];

  async function loadExamples() {
    try {
      examples = (await (await api("/ui/examples")).json()).examples;
    } catch (error) {
      examples = [];
      $("example-load").disabled = $("example-run").disabled = true;
      status("event-status", "No examples here (they are the repository's examples/ folder).");
    }
  }

  function example() {
    return examples.find((found) => found.dialect === $("dialect").value);
  }

  $("example-load").addEventListener("click", () => {
    const found = example();
    if (!found) return;
    events.setValue(found.query);
    status("event-status", found.title);
  });

  async function register(text) {
    const dialect = $("dialect").value;
    const response = await api("/queries?dialect=" + encodeURIComponent(dialect), {
      method: "POST",
      headers: { "Content-Type": "application/sparql-query" },
      body: text,
    });
    return response.json();
  }

  $("event-register").addEventListener("click", async () => {
    try {
      const query = await register(events.getValue());
      status("event-status", "Registered " + query.id + " (" + query.dialect + ").");
      await refreshTimeline();
    } catch (error) {
      status("event-status", error.message, true);
    }
  });

  const RDF_TYPES = { trig: "application/trig", nq: "application/n-quads", ttl: "text/turtle", nt: "application/n-triples" };

  async function exampleFile(found, file) {
    return (await api("/ui/examples/" + encodeURIComponent(found.name) + "/" + file)).blob();
  }

  // Runs the selected dialect's example: its background knowledge into /store, the query
  // registered, then its event files in ONE request merged by time (POST /streams/merged).
  $("example-run").addEventListener("click", async () => {
    const found = example();
    if (!found) return;
    try {
      events.setValue(found.query);
      for (const [graph, file] of Object.entries(found.kb || {})) {
        const type = RDF_TYPES[file.split(".").pop()] || "text/turtle";
        const target = type === "application/trig" ? "/store" : graph ? "/store?graph=" + encodeURIComponent(graph) : "/store?default";
        await api(target, { method: "POST", headers: { "Content-Type": type }, body: await exampleFile(found, file) });
      }
      const query = await register(found.query);
      const form = new FormData();
      // `then`: events after the example's own, e.g. one that makes a window's last evaluation final
      for (const [stream, file] of Object.entries(Object.assign({}, found.streams, found.then || {}))) {
        form.append("stream", stream);
        form.append("events", await exampleFile(found, file), file);
      }
      const answer = await (await api("/streams/merged", { method: "POST", body: form })).json();
      status("event-status", "Ran " + found.name + ": query " + query.id + ", " + answer.accepted + " events posted.");
      watch(query.id);
      await caughtUp(query.id);
      await refreshTimeline();
    } catch (error) {
      status("event-status", error.message, true);
    }
  });

  // Until the query has read every event in the log (its lag is 0): its matches are then written.
  async function caughtUp(queryId) {
    for (let tries = 0; tries < 150; tries += 1) {
      const summary = await (await api("/queries/" + queryId)).json();
      if (summary.lag === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  // ------------------------------------------------------------------ posting files merged by time

  // One stream IRI field per chosen file; the request pairs them in order (POST /streams/merged).
  $("files").addEventListener("change", () => {
    const list = $("file-streams");
    list.replaceChildren();
    Array.from($("files").files).forEach((file, index) => {
      const item = document.createElement("li");
      const label = document.createElement("label");
      label.htmlFor = "file-stream-" + index;
      label.textContent = file.name + ": stream IRI ";
      const input = document.createElement("input");
      input.id = "file-stream-" + index;
      input.type = "url";
      input.required = true;
      input.placeholder = "http://example.org/stream";
      item.append(label, input);
      list.append(item);
    });
    $("files-send").disabled = !$("files").files.length;
  });

  $("files-send").addEventListener("click", async () => {
    const form = new FormData();
    const files = Array.from($("files").files);
    for (const [index, file] of files.entries()) {
      const stream = $("file-stream-" + index).value.trim();
      if (!stream) {
        status("files-status", "Give the stream IRI of " + file.name + ".", true);
        return;
      }
      form.append("stream", stream);
      form.append("events", file, file.name);
    }
    try {
      const answer = await (await api("/streams/merged", { method: "POST", body: form })).json();
      status("files-status", answer.accepted + " events accepted, merged by time.");
    } catch (error) {
      status("files-status", error.message, true);
    }
  });

  // ------------------------------------------------------------------ the timeline

  const lanes = new vis.DataSet();
  const items = new vis.DataSet();
  const timeline = new vis.Timeline($("timeline"), items, lanes, {
    stack: true,
    tooltip: { followMouse: true },
    zoomKey: "ctrlKey",
    orientation: "top",
  });
  const watched = new Map();
  let selected = null;

  // A match time as the timeline's milliseconds: xsd:dateTime as a date, a number as seconds.
  function moment(term) {
    const datatype = term.datatype || "";
    if (datatype.endsWith("#dateTime")) return new Date(term.value);
    return new Date(Number(term.value) * 1000);
  }

  function tooltip(row, variables) {
    const lines = [row.start.value + " \u2192 " + row.end.value];
    for (const name of variables) {
      if (row[name]) lines.push("?" + name + " = " + row[name].value);
    }
    return lines.join("\n");
  }

  async function loadLane(query) {
    const document_ = await (await api("/queries/" + query.id + "/results", { headers: { Accept: "application/sparql-results+json" } })).json();
    const own = new Set(["match", "start", "end", "detected", "_match", "_start", "_end", "_detected"]);
    const variables = document_.head.vars.filter((name) => !own.has(name));
    const rows = document_.results.bindings;
    items.update(rows.map((row, index) => {
      const start = moment(row.start);
      const end = moment(row.end);
      const item = { id: row.match.value + "#" + index, group: query.id, start: start,
                     content: "", title: tooltip(row, variables), className: "rsep-match", match: row.match.value };
      if (end > start) item.end = end;
      else item.type = "point";
      return item;
    }));
    return rows.length;
  }

  async function refreshTimeline() {
    try {
      const queries = (await (await api("/queries")).json()).queries;
      lanes.update(queries.map((query) => ({ id: query.id, content: query.dialect + " " + query.id })));
      let count = 0;
      for (const query of queries) count += await loadLane(query);
      status("timeline-status", count + " matches of " + queries.length + " queries.");
      if (count) timeline.fit({ animation: false });
    } catch (error) {
      status("timeline-status", error.message, true);
    }
  }

  // One EventSource per query shown: a pushed match reloads that query's lane.
  function watch(queryId) {
    if (watched.has(queryId)) return;
    const url = "/queries/" + queryId + "/events" + (token() ? "?token=" + encodeURIComponent(token()) : "");
    const source = new EventSource(url);
    source.addEventListener("match", () => refreshTimeline());
    watched.set(queryId, source);
  }

  timeline.on("select", (properties) => {
    const item = properties.items.length ? items.get(properties.items[0]) : null;
    selected = item ? item.match : null;
    $("match-query").disabled = !selected;
  });

  // "Query this match": the match graph in the SPARQL editor, run.
  $("match-query").addEventListener("click", () => {
    if (!selected) return;
    const tab = sparqlTab();
    tab.setQuery("SELECT ?s ?p ?o WHERE {\n  GRAPH <" + selected + "> { ?s ?p ?o }\n}");
    tab.getYasqe().query();
    $("sparql").scrollIntoView();
  });

  $("timeline-refresh").addEventListener("click", () => refreshTimeline());

  loadExamples();
  refreshTimeline().then(async () => {
    try {
      const queries = (await (await api("/queries")).json()).queries;
      queries.forEach((query) => watch(query.id));
    } catch (error) {
      /* shown by refreshTimeline */
    }
  });
  window.rsepWorkbench = { yasgui: yasgui, events: events, timeline: timeline, items: items, refresh: refreshTimeline };
})();
