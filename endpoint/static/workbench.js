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
      const error = new Error(text || response.status + " " + response.statusText);
      error.status = response.status;
      throw error;
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
  let examplesLoaded = Promise.resolve(); // GET /ui/examples, awaited by the example buttons
  let eventTime = {}; // the endpoint's --max-lateness, --idle-timeout, --late (GET /ui/examples)

  async function loadExamples() {
    try {
      const answer = await (await api("/ui/examples")).json();
      examples = answer.examples;
      eventTime = answer.event_time || {};
    } catch (error) {
      examples = [];
      $("example-load").disabled = $("example-run").disabled = $("example-run-files").disabled = true;
      status("event-status", "No examples here (they are the repository's examples/ folder).");
    }
  }

  function example() {
    return examples.find((found) => found.dialect === $("dialect").value);
  }

  $("example-load").addEventListener("click", async () => {
    await examplesLoaded;
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
  // registered, then its event files: in ONE request merged by time (POST /streams/merged), or
  // `oneAtATime`, each file in its own POST /streams, in the manifest's order (the endpoint must
  // accept events out of order: rsep serve --max-lateness).
  async function runExample(oneAtATime) {
    await examplesLoaded; // a click may come before GET /ui/examples has answered
    const found = example();
    if (!found) return;
    $("example-posts").replaceChildren();
    $("example-lateness").textContent = "";
    try {
      events.setValue(found.query);
      for (const [graph, file] of Object.entries(found.kb || {})) {
        const type = RDF_TYPES[file.split(".").pop()] || "text/turtle";
        const target = type === "application/trig" ? "/store" : graph ? "/store?graph=" + encodeURIComponent(graph) : "/store?default";
        await api(target, { method: "POST", headers: { "Content-Type": type }, body: await exampleFile(found, file) });
      }
      const query = await register(found.query);
      watch(query.id);
      // `then`: events after the example's own, e.g. one that makes a window's last evaluation final
      const files = Object.entries(Object.assign({}, found.streams, found.then || {}));
      if (oneAtATime) {
        await postOneAtATime(found, query, files);
      } else {
        const form = new FormData();
        for (const [stream, file] of files) {
          form.append("stream", stream);
          form.append("events", await exampleFile(found, file), file);
        }
        const answer = await (await api("/streams/merged", { method: "POST", body: form })).json();
        status("event-status", "Ran " + found.name + ": query " + query.id + ", " + answer.accepted + " events posted.");
      }
      await caughtUp(query.id);
      await refreshTimeline();
    } catch (error) {
      status("event-status", error.message, true);
    }
  }

  $("example-run").addEventListener("click", () => runExample(false));
  $("example-run-files").addEventListener("click", () => runExample(true));

  // What the endpoint's lateness means for this example's files posted one at a time.
  function latenessNotice(found) {
    const need = found.lateness_needed || 0;
    const allowed = eventTime.max_lateness;
    if (need === 0) return "Its files are in time order one after the other: no lateness needed.";
    const needs = "Posted one at a time, its files need --max-lateness " + need + " (seconds): ";
    if (allowed === null || allowed === undefined) return needs + "this endpoint takes events in time order only, so later files' older events are refused.";
    if (allowed < need) return needs + "this endpoint allows " + allowed + ", so the events older than the watermark are refused.";
    return needs + "this endpoint allows " + allowed + ".";
  }

  function events_(count) {
    return count + (count === 1 ? " event" : " events");
  }

  function postLine(text, failed) {
    const item = document.createElement("li");
    item.textContent = text;
    item.className = failed ? "error" : "ok";
    $("example-posts").append(item);
  }

  // Each file in its own POST /streams; a refused file (400: events older than the watermark, or
  // than the newest accepted event without --max-lateness) is shown, and the next one is posted.
  async function postOneAtATime(found, query, files) {
    $("example-lateness").textContent = latenessNotice(found);
    let posted = 0;
    let held = 0;
    for (const [stream, file] of files) {
      const type = file.endsWith(".nq") ? "application/n-quads" : "application/trig";
      const label = file + " \u2192 <" + stream + ">: ";
      try {
        const response = await api("/streams?stream=" + encodeURIComponent(stream), {
          method: "POST", headers: { "Content-Type": type }, body: await exampleFile(found, file),
        });
        const answer = await response.json();
        posted += answer.accepted;
        held = answer.held || 0;
        const time = "watermark" in answer ? ", watermark " + answer.watermark + ", " + held + " held" : "";
        postLine(label + response.status + ", " + answer.accepted + " accepted" + time, false);
      } catch (error) {
        postLine(label + (error.status || "failed") + " \u2014 " + error.message, true);
      }
    }
    const summary = "Ran " + found.name + " one file at a time: query " + query.id + ", " + events_(posted) + " accepted.";
    status("event-status", summary);
    if (held) await released(summary);
  }

  // Until the reorder buffer holds nothing (GET /queries' `ingest`): with --idle-timeout the
  // watermark moves on once every stream is silent; without it, the events wait for later ones.
  async function released(summary) {
    const idle = eventTime.idle_timeout;
    const limit = idle ? Math.ceil((idle + 5) * 1000 / 250) : 1;
    for (let tries = 0; tries < limit; tries += 1) {
      const ingest = (await (await api("/queries")).json()).ingest || {};
      if (!ingest.held) {
        status("event-status", summary + " All released (watermark " + ingest.watermark + ").");
        return;
      }
      const wait = idle ? " until every stream has been silent " + idle + " s (--idle-timeout)" : " until later events pass the watermark (or start the endpoint with --idle-timeout)";
      status("event-status", summary + " " + events_(ingest.held) + " held, watermark " + ingest.watermark + ": they wait" + wait + ".");
      if (!idle) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

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

  examplesLoaded = loadExamples();
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
