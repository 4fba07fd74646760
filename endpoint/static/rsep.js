// rsep's page: plain JavaScript, no build step, nothing loaded from elsewhere.
// It talks to the endpoint's HTTP API (docs/endpoint.md): /sparql, /store, /queries, /streams
// and /queries/{id}/events (Server-Sent Events). Every text from the server is put in the page
// with textContent, never as HTML.
(function () {
  "use strict";

  const TOKEN_KEY = "rsep.token";
  const MAX_ROWS = 2000;
  const MAX_MATCHES = 500;
  const REFRESH_MS = 2000;
  const XSD = "http://www.w3.org/2001/XMLSchema#";
  const JSON_TYPES = "application/json";

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "text") node.textContent = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // ------------------------------------------------------------------ the token

  function getToken() {
    try {
      return (localStorage.getItem(TOKEN_KEY) || "").trim();
    } catch (e) {
      return ($("token").value || "").trim();
    }
  }

  function setToken(value) {
    try {
      if (value) localStorage.setItem(TOKEN_KEY, value);
      else localStorage.removeItem(TOKEN_KEY);
    } catch (e) {
      /* storage disabled: the field's value is used */
    }
  }

  // ------------------------------------------------------------------ HTTP

  class ApiError extends Error {
    constructor(status, message, parameter, line, column) {
      super(message);
      this.status = status;
      this.parameter = parameter || null;
      this.line = line || null;
      this.column = column || null;
    }
  }

  async function api(path, options) {
    const opts = options || {};
    const headers = { Accept: opts.accept || JSON_TYPES };
    if (opts.contentType) headers["Content-Type"] = opts.contentType;
    const token = getToken();
    if (token) headers.Authorization = "Bearer " + token;
    let response;
    try {
      response = await fetch(path, { method: opts.method || "GET", headers, body: opts.body });
    } catch (e) {
      throw new ApiError(0, "cannot reach the endpoint (" + e.message + ")");
    }
    if (!response.ok) throw await readError(response);
    return response;
  }

  // The endpoint's one error format: JSON {status, error, message, parameter, line, column}, or
  // text/plain "parameter:line:column: message".
  async function readError(response) {
    const type = response.headers.get("Content-Type") || "";
    const text = await response.text();
    if (type.includes("json")) {
      try {
        const body = JSON.parse(text);
        if (body && typeof body.message === "string") {
          return new ApiError(response.status, body.message, body.parameter, body.line, body.column);
        }
      } catch (e) {
        /* not the error format: fall through */
      }
    }
    const found = /^(\w[\w-]*):(\d+):(\d+): ([\s\S]*)$/.exec(text.trim());
    if (found) {
      return new ApiError(response.status, found[4], found[1], Number(found[2]), Number(found[3]));
    }
    const message = text.trim() || response.status + " " + response.statusText;
    return new ApiError(response.status, message);
  }

  // ------------------------------------------------------------------ showing results and errors

  function setStatus(node, text, kind) {
    node.textContent = text;
    node.classList.remove("ok", "error");
    if (kind) node.classList.add(kind);
  }

  function offsetOf(text, line, column) {
    const lines = text.split("\n");
    let offset = 0;
    for (let i = 0; i < Math.min(line - 1, lines.length); i++) offset += lines[i].length + 1;
    return Math.min(offset + Math.max(column - 1, 0), text.length);
  }

  // An error box: where (parameter:line:column), the message, the line with a caret under the
  // column, and a button that puts the cursor there.
  function errorBox(error, source) {
    const box = el("div", { class: "error-box", role: "alert" });
    const where = error.line
      ? (error.parameter || "text") + ":" + error.line + ":" + error.column
      : error.parameter || "";
    const title = "Error" + (error.status ? " " + error.status : "");
    box.append(el("p", {}, el("strong", { text: title + (where ? " at " : "") }),
      where ? el("span", { class: "where", text: where }) : null));
    box.append(el("p", { class: "message", text: error.message }));
    if (error.status === 401) {
      box.append(el("p", { text: "Set the endpoint's token in the Bearer token field at the top." }));
    }
    if (error.line && source && source.textarea) {
      const lines = source.textarea.value.split("\n");
      const lineText = lines[error.line - 1];
      if (lineText !== undefined) {
        const gutter = String(error.line) + " | ";
        const caret = " ".repeat(gutter.length + Math.max(error.column - 1, 0)) + "^";
        box.append(el("pre", { "aria-label": "line " + error.line + " of the " + source.name },
          gutter + lineText + "\n" + caret));
      }
      box.append(el("button", {
        type: "button", class: "secondary small",
        text: "Go to line " + error.line + ", column " + error.column,
        onclick: () => {
          const at = offsetOf(source.textarea.value, error.line, error.column);
          source.textarea.focus();
          source.textarea.setSelectionRange(at, Math.min(at + 1, source.textarea.value.length));
        },
      }));
    }
    return box;
  }

  function shortIri(iri) {
    return iri.startsWith(XSD) ? "xsd:" + iri.slice(XSD.length) : "<" + iri + ">";
  }

  // A term of SPARQL JSON results.
  function jsonTerm(term) {
    if (!term) return el("span", { class: "term-unbound", text: "" });
    if (term.type === "uri") return el("span", { class: "term-iri", text: "<" + term.value + ">" });
    if (term.type === "bnode") return el("span", { class: "term-bnode", text: "_:" + term.value });
    if (term.type === "triple") {
      const v = term.value;
      return el("span", {}, "<< ", jsonTerm(v.subject), " ", jsonTerm(v.predicate), " ",
        jsonTerm(v.object), " >>");
    }
    return literal(term.value, term["xml:lang"], term.datatype);
  }

  function literal(value, lang, datatype) {
    const node = el("span", { class: "term-literal" });
    const quoted = lang || !datatype || datatype === XSD + "string";
    node.append(quoted ? '"' + value + '"' : value);
    if (lang) node.append(el("span", { class: "term-lang", text: "@" + lang }));
    else if (datatype && datatype !== XSD + "string") {
      node.append(el("span", { class: "term-dt", text: "^^" + shortIri(datatype) }));
    }
    return node;
  }

  // A term in N-Triples syntax, as the match events carry them.
  function ntTerm(text) {
    if (typeof text !== "string") return el("span", { text: JSON.stringify(text) });
    if (text.startsWith("<") && text.endsWith(">")) {
      return el("span", { class: "term-iri", text: text });
    }
    if (text.startsWith("_:")) return el("span", { class: "term-bnode", text: text });
    const found = /^"((?:[^"\\]|\\.)*)"(?:@([A-Za-z0-9-]+)|\^\^<([^>]*)>)?$/.exec(text);
    if (!found) return el("span", { text: text });
    const value = found[1].replace(/\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)/g, (all, esc) => {
      const simple = { t: "\t", n: "\n", r: "\r", b: "\b", f: "\f", '"': '"', "'": "'", "\\": "\\" };
      if (esc.length > 1) return String.fromCodePoint(parseInt(esc.slice(1), 16));
      return simple[esc] !== undefined ? simple[esc] : all;
    });
    return literal(value, found[2], found[3]);
  }

  // ------------------------------------------------------------------ keyboard: Ctrl+Enter submits

  document.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return;
    const target = event.target;
    if (target instanceof HTMLTextAreaElement && target.form) {
      event.preventDefault();
      target.form.requestSubmit();
    }
  });

  function plural(count, one, many) {
    return count + " " + (count === 1 ? one : many);
  }

  function busy(button, on) {
    button.disabled = on;
    button.classList.toggle("busy", on);
  }

  function readFileInto(input, textarea, formatSelect, formats) {
    input.addEventListener("change", async () => {
      const file = input.files && input.files[0];
      if (!file) return;
      textarea.value = await file.text();
      const ext = (file.name.split(".").pop() || "").toLowerCase();
      if (formats[ext]) {
        formatSelect.value = formats[ext];
        formatSelect.dispatchEvent(new Event("change"));
      }
    });
  }

  // ------------------------------------------------------------------ SPARQL

  const QUERY_FORMS = /^(SELECT|ASK|CONSTRUCT|DESCRIBE)$/i;
  const FIRST_KEYWORD =
    /\b(SELECT|ASK|CONSTRUCT|DESCRIBE|INSERT|DELETE|LOAD|CLEAR|CREATE|DROP|COPY|MOVE|ADD|WITH)\b/i;

  // "query" or "update", from the first keyword outside IRIs, strings and comments.
  function sparqlKind(text) {
    const cleaned = text.replace(
      /<[^<>\s]*>|"""[\s\S]*?"""|'''[\s\S]*?'''|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|#[^\n]*/g, " ");
    const found = FIRST_KEYWORD.exec(cleaned);
    return !found || QUERY_FORMS.test(found[1]) ? "query" : "update";
  }

  function resultsTable(results) {
    const vars = (results.head && results.head.vars) || [];
    const rows = (results.results && results.results.bindings) || [];
    const wrap = el("div", { class: "table-wrap" });
    const table = el("table", { id: "sparql-table" });
    table.append(el("caption", { class: "visually-hidden", text: "Query results" }));
    table.append(el("thead", {}, el("tr", {}, vars.map((v) => el("th", { scope: "col", text: "?" + v })))));
    const body = el("tbody");
    for (const row of rows.slice(0, MAX_ROWS)) {
      body.append(el("tr", {}, vars.map((v) => el("td", {}, jsonTerm(row[v])))));
    }
    table.append(body);
    wrap.append(table);
    return wrap;
  }

  function setupSparql() {
    const form = $("sparql-form");
    const textarea = $("sparql-text");
    const status = $("sparql-status");
    const result = $("sparql-result");
    const button = $("sparql-run");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const text = textarea.value;
      const chosen = $("sparql-kind").value;
      const kind = chosen === "auto" ? sparqlKind(text) : chosen;
      const body = new URLSearchParams();
      body.set(kind, text);
      busy(button, true);
      setStatus(status, kind === "query" ? "Running the query…" : "Running the update…");
      result.replaceChildren();
      const started = performance.now();
      try {
        const accept = kind === "query"
          ? "application/sparql-results+json, text/turtle;q=0.9"
          : JSON_TYPES;
        const response = await api("/sparql", { method: "POST", body, accept });
        const ms = Math.round(performance.now() - started);
        const type = response.headers.get("Content-Type") || "";
        if (response.status === 204 || kind === "update") {
          setStatus(status, "Update done in " + ms + " ms.", "ok");
          result.append(el("div", { class: "ok-box" }, el("p", { text: "Update applied." })));
        } else if (type.includes("sparql-results+json")) {
          const results = await response.json();
          if (typeof results.boolean === "boolean") {
            setStatus(status, "ASK answered in " + ms + " ms.", "ok");
            result.append(el("p", { class: "boolean", id: "sparql-boolean", text: String(results.boolean) }));
          } else {
            const count = ((results.results && results.results.bindings) || []).length;
            const shown = count > MAX_ROWS ? " (showing the first " + MAX_ROWS + ")" : "";
            setStatus(status, plural(count, "row", "rows") + " in " + ms + " ms" + shown + ".", "ok");
            result.append(resultsTable(results));
          }
        } else {
          const graph = await response.text();
          const lines = graph ? graph.trimEnd().split("\n").length : 0;
          setStatus(status, "Graph of " + lines + " lines (" + type.split(";")[0] + ") in " + ms + " ms.", "ok");
          result.append(el("pre", { class: "graph", id: "sparql-graph", tabindex: "0",
            "aria-label": "Graph result", text: graph || "(empty graph)" }));
        }
      } catch (error) {
        setStatus(status, "Failed: " + error.message, "error");
        result.append(errorBox(error, { textarea, name: kind }));
      } finally {
        busy(button, false);
      }
    });
  }

  // ------------------------------------------------------------------ loading data (GSP)

  const DATASET_TYPES = ["application/trig", "application/n-quads"];

  function setupData() {
    const form = $("data-form");
    const format = $("data-format");
    const graphRow = $("data-graph-row");
    const textarea = $("data-text");
    const status = $("data-status");
    const button = $("data-send");
    const showGraph = () => { graphRow.hidden = DATASET_TYPES.includes(format.value); };
    format.addEventListener("change", showGraph);
    showGraph();
    readFileInto($("data-file"), textarea, format, {
      trig: "application/trig", nq: "application/n-quads", ttl: "text/turtle", nt: "application/n-triples",
    });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      let path = "/store";
      if (!DATASET_TYPES.includes(format.value)) {
        const graph = $("data-graph").value.trim();
        path += graph ? "?graph=" + encodeURIComponent(graph) : "?default";
      }
      busy(button, true);
      form.querySelectorAll(".error-box").forEach((node) => node.remove());
      setStatus(status, "Loading…");
      try {
        await api(path, { method: "POST", body: textarea.value, contentType: format.value });
        setStatus(status, "Loaded into the store.", "ok");
      } catch (error) {
        setStatus(status, "Failed: " + error.message, "error");
        status.after(errorBox(error, { textarea, name: "data" }));
      } finally {
        busy(button, false);
      }
    });
  }

  // ------------------------------------------------------------------ registering a query

  function setupRegister() {
    const form = $("register-form");
    const textarea = $("event-query");
    const status = $("register-status");
    const button = $("register-send");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const params = new URLSearchParams({ policy: $("policy").value, from: $("from").value });
      busy(button, true);
      form.querySelectorAll(".error-box, .ok-box").forEach((node) => node.remove());
      setStatus(status, "Registering…");
      try {
        const response = await api("/queries?" + params, {
          method: "POST", body: textarea.value, contentType: "application/sparql-query",
        });
        const created = await response.json();
        setStatus(status, "Registered query " + created.id + ".", "ok");
        const box = el("div", { class: "ok-box", id: "register-result" },
          el("p", {}, "Id ", el("code", { class: "query-id", text: created.id }), " (",
            el("code", { text: created.iri }), ")"),
          el("ul", {}, (created.streams || []).map((s) => el("li", {}, "stream ", el("code", { text: s })))),
          (created.warnings || []).length
            ? el("ul", { class: "warnings" }, created.warnings.map((w) => el("li", { text: "warning: " + w })))
            : null);
        status.after(box);
        await refreshQueries();
        const stream = $("stream");
        if (!stream.value && created.streams && created.streams.length) stream.value = created.streams[0];
        if (!watching) startWatching(created.id);
      } catch (error) {
        setStatus(status, "Failed: " + error.message, "error");
        status.after(errorBox(error, { textarea, name: "query" }));
      } finally {
        busy(button, false);
      }
    });
  }

  // ------------------------------------------------------------------ ingesting events

  function setupIngest() {
    const form = $("ingest-form");
    const textarea = $("events");
    const status = $("ingest-status");
    const button = $("ingest-send");
    const format = $("events-format");
    readFileInto($("events-file"), textarea, format, { trig: "application/trig", nq: "application/n-quads" });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const stream = $("stream").value.trim();
      busy(button, true);
      form.querySelectorAll(".error-box").forEach((node) => node.remove());
      setStatus(status, "Sending…");
      try {
        const response = await api("/streams?stream=" + encodeURIComponent(stream), {
          method: "POST", body: textarea.value, contentType: format.value,
        });
        const body = await response.json();
        const derived = (body.derived || []).length;
        const before = derived === 0 ? ""
          : " " + plural(derived, "event", "events") + " derived by REGISTER STREAM queries went in before.";
        setStatus(status, "Accepted " + plural(body.accepted, "event", "events") + ingested(body) + " on " +
          body.stream + "." + before + eventTime(body), "ok");
      } catch (error) {
        setStatus(status, "Failed: " + error.message, "error");
        form.append(errorBox(error, { textarea, name: "events" }));
      } finally {
        busy(button, false);
      }
    });
  }

  // Where a 202's events went in the log. Under an event-time policy (a `watermark` in the body)
  // the positions are those of what the watermark released, of any request: not said.
  function ingested(body) {
    if ("watermark" in body || body.accepted === 0) return "";
    const last = body.next_position - 1;
    return body.accepted === 1 ? " (log position " + last + ")"
      : " (log positions " + body.first_position + "–" + last + ")";
  }

  // Under an event-time policy (rsep serve --max-lateness): the watermark, the events held, the
  // late events kept aside (--late side).
  function eventTime(body) {
    if (!("watermark" in body)) return "";
    const late = (body.late || []).length;
    const kept = late === 0 ? "" : " " + plural(late, "late event", "late events") + " kept in <urn:rsep:late>.";
    return " Watermark " + body.watermark + ": " + plural(body.held, "event", "events") +
      " held until it passes them." + kept;
  }

  // ------------------------------------------------------------------ live matches (SSE)

  let source = null;
  let watching = null;
  let received = 0;

  function watchStatus(text, kind) {
    setStatus($("watch-status"), text, kind);
  }

  function eventsUrl(id) {
    // EventSource cannot send headers: the token goes in the URL.
    const token = getToken();
    const url = "/queries/" + encodeURIComponent(id) + "/events";
    return token ? url + "?token=" + encodeURIComponent(token) : url;
  }

  function startWatching(id) {
    stopWatching();
    if (!id) {
      watchStatus("Choose a query to watch.", "error");
      return;
    }
    watching = id;
    received = 0;
    const select = $("watch-query");
    if ([...select.options].some((o) => o.value === id)) select.value = id;
    $("watch-stop").disabled = false;
    watchStatus("Connecting to query " + id + "…");
    const es = new EventSource(eventsUrl(id));
    source = es;
    es.addEventListener("open", () => {
      if (source !== es) return;
      watchStatus("Watching query " + id + ": connected, " + plural(received, "match", "matches") +
        " received.", "ok");
      $("watch-status").dataset.connected = id;
    });
    es.addEventListener("match", (message) => {
      if (source !== es) return;
      let record;
      try {
        record = JSON.parse(message.data);
      } catch (e) {
        return;
      }
      received += 1;
      addMatch(id, record);
      watchStatus("Watching query " + id + ": connected, " + plural(received, "match", "matches") +
        " received.", "ok");
    });
    es.addEventListener("error", () => {
      if (source !== es) return;
      delete $("watch-status").dataset.connected;
      if (es.readyState === EventSource.CLOSED) {
        stopWatching();
        watchStatus("The event stream of " + id + " closed (was the query deleted, or is the token " +
          "missing or wrong?).", "error");
      } else {
        watchStatus("Connection to " + id + " lost; reconnecting…", "error");
      }
    });
  }

  function stopWatching() {
    if (source) source.close();
    source = null;
    watching = null;
    delete $("watch-status").dataset.connected;
    $("watch-stop").disabled = true;
  }

  function bindingList(bindings) {
    return el("dl", { class: "bindings" }, Object.keys(bindings).map((name) => [
      el("dt", { text: name }), el("dd", { "data-var": name }, ntTerm(bindings[name])),
    ]));
  }

  // An event-pattern match carries one solution (`bindings`); a window query's evaluation
  // (C-SPARQL, CQELS) carries all of its `solutions`, or the `triples` a CONSTRUCT built.
  function addMatch(id, record) {
    const list = $("matches");
    const rows = record.solutions || (record.bindings ? [record.bindings] : []);
    const triples = record.triples || [];
    const when = record.start === record.end ? String(record.end) : record.start + " → " + record.end;
    const item = el("li", { class: "match fresh", "data-query": id, "data-graph": record.graph || "" },
      el("div", { class: "match-head" },
        el("span", { class: "when", text: when }),
        el("span", { class: "received", text: "query " + id + ", received " + new Date().toLocaleTimeString() })),
      rows.map(bindingList),
      triples.length ? el("pre", { class: "triples", text: triples.join("\n") }) : null,
      record.graph
        ? el("div", { class: "match-graph" }, el("span", {}, "graph ", el("code", { text: record.graph })),
          el("button", {
            type: "button", class: "secondary small", text: "Query this graph",
            onclick: () => showGraphQuery(record.graph),
          }))
        : null);
    list.prepend(item);
    while (list.children.length > MAX_MATCHES) list.lastElementChild.remove();
    const first = rows[0] || {};
    const summary = rows.length > 1 || triples.length
      ? plural(rows.length || triples.length, rows.length ? "solution" : "triple", rows.length ? "solutions" : "triples")
      : Object.keys(first).map((n) => n + " " + (typeof first[n] === "string" ? first[n] : "")).join(", ");
    $("match-announce").textContent = "New match of " + id + ": " + summary;
  }

  function showGraphQuery(graph) {
    $("sparql-text").value =
      "PREFIX rs: <http://www.w3.org/2001/sw/DataAccess/tests/result-set#>\n" +
      "SELECT ?name ?value WHERE {\n" +
      "  GRAPH <" + graph + "> { [] rs:solution [ rs:binding [ rs:variable ?name ; rs:value ?value ] ] }\n" +
      "} ORDER BY ?name";
    $("sparql-kind").value = "auto";
    $("sparql").scrollIntoView();
    $("sparql-text").focus();
  }

  function setupWatch() {
    $("watch-form").addEventListener("submit", (event) => {
      event.preventDefault();
      startWatching($("watch-query").value);
    });
    $("watch-stop").addEventListener("click", () => {
      stopWatching();
      watchStatus("Not watching.");
    });
    $("matches-clear").addEventListener("click", () => $("matches").replaceChildren());
  }

  // ------------------------------------------------------------------ registered queries

  const rows = new Map(); // query id -> {row, cells}

  function setCell(cell, text) {
    const value = text === null || text === undefined ? "–" : String(text);
    if (cell.textContent !== value) cell.textContent = value;
  }

  function queryRow(query) {
    const cells = {
      id: el("td", {}, el("code", { text: query.id })),
      status: el("td", { class: "state" }),
      events: el("td", { class: "num" }),
      matches: el("td", { class: "num" }),
      lag: el("td", { class: "num" }),
      streams: el("td", { class: "streams" }),
      created: el("td", { class: "plain" }),
    };
    const watch = el("button", { type: "button", text: "Watch", "aria-label": "Watch query " + query.id,
      onclick: () => startWatching(query.id) });
    const remove = el("button", { type: "button", text: "Delete", "aria-label": "Delete query " + query.id,
      onclick: () => deleteQuery(query.id) });
    const row = el("tr", { "data-id": query.id }, Object.values(cells),
      el("td", { class: "plain actions" }, watch, " ", remove));
    return { row, cells };
  }

  function updateRow(entry, query) {
    const { cells } = entry;
    setCell(cells.status, query.status + (query.error ? ": " + query.error : ""));
    cells.status.className = "state " + query.status;
    setCell(cells.events, query.events);
    setCell(cells.matches, query.matches);
    setCell(cells.lag, query.lag);
    setCell(cells.streams, (query.streams || []).join("\n"));
    setCell(cells.created, query.created);
  }

  function syncOptions(select, values, emptyLabel) {
    const wanted = values.length ? values : [""];
    const have = [...select.options].map((o) => o.value);
    if (have.length === wanted.length && have.every((v, i) => v === wanted[i])) return;
    const chosen = select.value;
    select.replaceChildren(...wanted.map((v) => el("option", { value: v, text: v || emptyLabel })));
    if (wanted.includes(chosen)) select.value = chosen;
  }

  let refreshing = false;

  async function refreshQueries() {
    if (refreshing) return;
    refreshing = true;
    const status = $("queries-status");
    try {
      const response = await api("/queries");
      const body = await response.json();
      const queries = body.queries || [];
      const tbody = $("queries-body");
      const seen = new Set();
      queries.forEach((query, index) => {
        seen.add(query.id);
        let entry = rows.get(query.id);
        if (!entry) {
          entry = queryRow(query);
          rows.set(query.id, entry);
        }
        updateRow(entry, query);
        if (tbody.children[index] !== entry.row) tbody.insertBefore(entry.row, tbody.children[index] || null);
      });
      for (const [id, entry] of rows) {
        if (!seen.has(id)) {
          entry.row.remove();
          rows.delete(id);
        }
      }
      syncOptions($("watch-query"), queries.map((q) => q.id), "(no query registered)");
      if (watching && [...$("watch-query").options].some((o) => o.value === watching)) {
        $("watch-query").value = watching;
      }
      const streams = [...new Set(queries.flatMap((q) => q.streams || []))].sort();
      const list = $("known-streams");
      if ([...list.options].map((o) => o.value).join("\n") !== streams.join("\n")) {
        list.replaceChildren(...streams.map((s) => el("option", { value: s })));
      }
      setStatus(status, plural(queries.length, "query", "queries") + ", updated " +
        new Date().toLocaleTimeString() + ".");
    } catch (error) {
      setStatus(status, "Cannot list the queries: " + error.message, "error");
    } finally {
      refreshing = false;
    }
  }

  async function deleteQuery(id) {
    if (!window.confirm("Delete query " + id + "? Its match graphs stay in the store.")) return;
    try {
      await api("/queries/" + encodeURIComponent(id), { method: "DELETE" });
      if (watching === id) {
        stopWatching();
        watchStatus("Not watching: query " + id + " was deleted.");
      }
      setStatus($("queries-status"), "Deleted query " + id + ".", "ok");
    } catch (error) {
      setStatus($("queries-status"), "Cannot delete " + id + ": " + error.message, "error");
    }
    await refreshQueries();
  }

  function setupQueries() {
    $("queries-refresh").addEventListener("click", refreshQueries);
    setInterval(() => {
      if ($("queries-auto").checked && document.visibilityState === "visible") refreshQueries();
    }, REFRESH_MS);
    refreshQueries();
  }

  // ------------------------------------------------------------------ start

  function setupToken() {
    const input = $("token");
    input.value = getToken();
    input.addEventListener("input", () => setToken(input.value.trim()));
    $("token-form").addEventListener("submit", (event) => event.preventDefault());
    $("token-clear").addEventListener("click", () => {
      input.value = "";
      setToken("");
      input.focus();
    });
    input.addEventListener("change", () => refreshQueries());
  }

  setupToken();
  setupSparql();
  setupData();
  setupRegister();
  setupIngest();
  setupWatch();
  setupQueries();
})();
