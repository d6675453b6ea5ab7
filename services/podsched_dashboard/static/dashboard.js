// The dashboard page: fetches one view at a time from the server's JSON routes and refreshes it
// when the server's change stream (server-sent events) says that view changed. The server pages,
// searches and aggregates; the page only draws what it is given.
"use strict";

const params = {
  nodes: { q: "", filter: "all", page: 1 },
  queue: { q: "", page: 1 },
  preemptions: { q: "" },
};
let current = { view: "nodes", args: [] };
let refreshTimer = null;

const $ = (id) => document.getElementById(id);
const esc = (value) =>
  String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

async function getJSON(url, options) {
  const response = await fetch(url, options);
  const body = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Error(body.error || `${response.status}`);
  return body;
}

function duration(seconds) {
  seconds = Math.max(0, Math.floor(seconds));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${seconds % 60 ? (seconds % 60) + "s" : ""}`;
  return `${Math.floor(minutes / 60)}h${minutes % 60}m`;
}

// --- routing ----------------------------------------------------------------------------------

function route() {
  const parts = (location.hash.replace(/^#/, "") || "nodes").split("/").map(decodeURIComponent);
  const view = ["pod", "node"].includes(parts[0]) ? "object" : parts[0];
  current = { view: $("view-" + view) ? view : "nodes", args: parts };
  document.querySelectorAll(".view").forEach((section) => (section.hidden = section.id !== "view-" + current.view));
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.view === current.view));
  refresh();
}

const renderers = { nodes: renderNodes, queue: renderQueue, preemptions: renderTimeline, policies: renderPolicies, object: renderObject };

async function refresh() {
  renderSummary();
  const render = renderers[current.view];
  if (render) {
    try {
      await render();
    } catch (error) {
      console.error(error);
    }
  }
}

function scheduleRefresh() {
  if (refreshTimer) return;
  refreshTimer = setTimeout(() => {
    refreshTimer = null;
    refresh();
  }, 50);
}

// --- summary ----------------------------------------------------------------------------------

function bar(resource) {
  return `<div class="bar small" title="${esc(resource.name)}: ${esc(resource.label)}">
    <span class="fill" style="width:${Math.min(100, resource.percent)}%"></span>
    <span class="bar-label">${esc(resource.name)} ${esc(resource.label)}</span></div>`;
}

async function renderSummary() {
  const s = await getJSON("api/summary");
  $("problem").textContent = s.problem ? `The API refuses or does not answer: ${s.problem}` : "";
  $("problem").hidden = !s.problem;
  $("summary").innerHTML = `
    <span><b>${s.nodes}</b> nodes${s.cordoned ? ` (${s.cordoned} cordoned)` : ""}</span>
    <span><b>${s.bound}</b> bound</span>
    <span class="pending"><b>${s.pending}</b> pending</span>
    <span class="terminating"><b>${s.terminating}</b> terminating</span>
    <span><b>${s.preemptions}</b> preemptions</span>
    ${s.resources.map(bar).join("")}`;
}

// --- nodes ------------------------------------------------------------------------------------

function pager(name, data) {
  const element = document.querySelector(`.pager[data-for=${name}]`);
  element.innerHTML = `
    <button data-page="${data.page - 1}" ${data.page <= 1 ? "disabled" : ""}>‹</button>
    page ${data.page} of ${data.pages} (${data.total} ${name === "nodes" ? "nodes" : "pending"}${
    data.matching !== undefined && data.matching !== data.total ? `, ${data.matching} matching` : ""})
    <button data-page="${data.page + 1}" ${data.page >= data.pages ? "disabled" : ""}>›</button>`;
  element.querySelectorAll("button").forEach((button) =>
    button.addEventListener("click", () => {
      params[name].page = Number(button.dataset.page);
      refresh();
    })
  );
}

function rankClass(rank) {
  return `band-${Math.min(rank, 7)}`;
}

function chip(pod, extra = "") {
  const terminating = pod.terminating
    ? ` <span class="countdown" data-deadline="${pod.graceDeadline}"></span>`
    : "";
  const classes = [
    "chip", rankClass(pod.rank), pod.terminating ? "terminating" : "", pod.wouldBePreempted ? "would-be-preempted" : "",
    pod.incoming ? "incoming" : "", extra,
  ].join(" ");
  return `<a class="${classes}" href="#pod/${encodeURIComponent(pod.namespace)}/${encodeURIComponent(pod.name)}"
    title="${esc(pod.namespace)}/${esc(pod.name)} priority ${pod.priority} (${esc(pod.band)})${pod.terminating ? ", terminating" : ""}"
    data-pod="${esc(pod.namespace)}/${esc(pod.name)}">${esc(pod.name)}${terminating}</a>`;
}

function resourceBar(resource) {
  const segments = resource.segments
    .map((s) => `<span class="segment ${rankClass(s.rank)} ${s.terminating ? "terminating" : ""} ${s.incoming ? "incoming" : ""}"
      style="width:${s.percent}%" ${s.incoming ? 'title="the what-if pod"' : ""}></span>`)
    .join("");
  return `<div class="resource"><span class="resource-name">${esc(resource.name)}</span>
    <div class="bar ${resource.percent > 100 ? "over" : ""}" data-resource="${esc(resource.name)}">${segments}</div>
    <span class="resource-label">${esc(resource.label)}</span></div>`;
}

function nodeCard(node, when = "now") {
  const badges = [
    node.unschedulable ? `<span class="badge cordoned">cordoned</span>` : "",
    ...node.taints.map((t) => `<span class="badge taint" title="taint">${esc(t)}</span>`),
    node.terminatingCount ? `<span class="badge terminating">${node.terminatingCount} terminating</span>` : "",
  ].join("");
  const nominated = node.nominated.length
    ? `<div class="nominated">nominated here: ${node.nominated.map((p) => `<a href="#pod/${encodeURIComponent(p.namespace)}/${encodeURIComponent(p.name)}">${esc(p.name)}</a>`).join(", ")}</div>`
    : "";
  return `<article class="node ${node.unschedulable ? "cordoned" : ""}" data-node="${esc(node.name)}" data-when="${when}">
    <h3><a href="#node/${encodeURIComponent(node.name)}">${esc(node.name)}</a> <small>${node.podCount} pods</small> ${badges}</h3>
    ${node.resources.map(resourceBar).join("")}
    <div class="chips">${node.pods.map((p) => chip(p)).join("")}${node.morePods ? `<span class="more">+${node.morePods} more</span>` : ""}</div>
    ${nominated}</article>`;
}

function legend(bands) {
  $("legend").innerHTML =
    bands.map((b) => `<span class="chip ${rankClass(b.rank)}">${esc(b.name)} ≥ ${b.value}</span>`).join("") +
    `<span class="chip terminating">terminating victim</span>`;
}

async function renderNodes() {
  const p = params.nodes;
  const data = await getJSON(`api/nodes?q=${encodeURIComponent(p.q)}&filter=${p.filter}&page=${p.page}`);
  p.page = data.page;
  legend(data.bands);
  pager("nodes", data);
  $("nodes").innerHTML = data.nodes.map((n) => nodeCard(n)).join("") || `<p class="empty">no nodes</p>`;
  tick();
}

// --- queue ------------------------------------------------------------------------------------

async function renderQueue() {
  const p = params.queue;
  const data = await getJSON(`api/queue?q=${encodeURIComponent(p.q)}&page=${p.page}`);
  p.page = data.page;
  pager("queue", data);
  $("queue-groups").innerHTML = data.groups
    .map((g) => `<span class="chip ${rankClass(g.rank)}">priority ${g.priority} (${esc(g.band)}): ${g.count}</span>`)
    .join("");
  let html = "";
  let priority = null;
  for (const pod of data.pods) {
    if (pod.priority !== priority) {
      if (priority !== null) html += "</tbody></table>";
      priority = pod.priority;
      html += `<h3 class="group"><span class="chip ${rankClass(pod.rank)}">priority ${pod.priority}</span> ${esc(pod.band)}</h3>
        <table class="queue"><thead><tr><th>pod</th><th>waiting</th><th>nominated</th><th>why it waits (FailedScheduling)</th></tr></thead><tbody>`;
    }
    html += `<tr data-pod="${esc(pod.namespace)}/${esc(pod.name)}">
      <td><a href="#pod/${encodeURIComponent(pod.namespace)}/${encodeURIComponent(pod.name)}">${esc(pod.namespace)}/${esc(pod.name)}</a>
        ${pod.nonPreempting ? `<span class="badge non-preempting" title="preemptionPolicy: Never">non-preempting</span>` : ""}</td>
      <td class="waiting" data-since="${pod.waitingSeconds === null ? "" : Date.now() / 1000 - pod.waitingSeconds}"></td>
      <td>${pod.nominatedNode ? `<a href="#node/${encodeURIComponent(pod.nominatedNode)}">${esc(pod.nominatedNode)}</a>` : ""}</td>
      <td class="reason">${esc(pod.reason)}</td></tr>`;
  }
  if (priority !== null) html += "</tbody></table>";
  $("queue").innerHTML = html || `<p class="empty">nothing is pending</p>`;
  tick();
}

// --- preemptions ------------------------------------------------------------------------------

async function renderTimeline() {
  const data = await getJSON(`api/preemptions?q=${encodeURIComponent(params.preemptions.q)}`);
  $("timeline").innerHTML =
    data.entries
      .map((e) => {
        const preemptor = e.preemptor;
        const victims = e.victims
          .map(
            (v) => `<li class="victim ${esc(v.state)}" data-pod="${esc(v.namespace)}/${esc(v.name)}">
              <a href="#pod/${encodeURIComponent(v.namespace)}/${encodeURIComponent(v.name)}">${esc(v.namespace)}/${esc(v.name)}</a>
              ${v.priority === null ? "" : `priority ${v.priority}`} — ${esc(v.state)}
              ${v.state === "terminating" ? `<span class="countdown" data-deadline="${v.graceDeadline}"></span> of grace left` : ""}
              ${v.pdbs.length ? `<span class="pdbs">PDB ${v.pdbs.map(esc).join(", ")}</span>` : ""}</li>`
          )
          .join("");
        const violations = e.pdbViolations.length
          ? `<div class="violation">PDB violated: ${e.pdbViolations
              .map((b) => `${esc(b.namespace)}/${esc(b.name)} (${b.currentHealthy} healthy of ${b.desiredHealthy} desired)`)
              .join(", ")}</div>`
          : "";
        return `<li class="preemption" data-preemptor="${esc(preemptor.namespace)}/${esc(preemptor.name)}" data-node="${esc(e.node)}">
          <time>${new Date(e.time * 1000).toLocaleTimeString()}</time>
          <a href="#pod/${encodeURIComponent(preemptor.namespace)}/${encodeURIComponent(preemptor.name)}" class="preemptor">${esc(preemptor.namespace)}/${esc(preemptor.name)}</a>
          ${preemptor.priority === null ? "" : `(priority ${preemptor.priority})`} preempted on
          <a href="#node/${encodeURIComponent(e.node)}">${esc(e.node)}</a>; now ${esc(preemptor.state)}
          ${document.body.dataset.jaeger ? `<a class="trace" href="${esc(e.traceLink)}" target="_blank" rel="noopener">trace in Jaeger</a>` : ""}
          <ul class="victims">${victims}</ul>${violations}</li>`;
      })
      .join("") || `<p class="empty">no preemptions yet</p>`;
  tick();
}

// --- policies ---------------------------------------------------------------------------------

function table(headers, rows) {
  return `<table><thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join("")}</tr>`)
    .join("")}</tbody></table>`;
}

async function renderPolicies() {
  const data = await getJSON("api/policies");
  $("classes").innerHTML = table(
    ["name", "value", "global default", "preemption policy", "pods", "description"],
    data.priorityClasses.map((c) => [
      `<span class="chip ${rankClass(c.rank)}">${esc(c.name)}</span>`, c.value, c.globalDefault ? "yes" : "",
      esc(c.preemptionPolicy), c.pods, esc(c.description),
    ])
  );
  $("pdbs").innerHTML = table(
    ["namespace/name", "healthy", "desired", "expected", "disruptions allowed", "status"],
    data.pdbs.map((b) => [
      `${esc(b.namespace)}/${esc(b.name)}`, b.currentHealthy, b.desiredHealthy, b.expectedPods, b.disruptionsAllowed,
      b.violated ? `<span class="violation">below its minimum</span>` : "ok",
    ])
  );
  $("quotas").innerHTML = table(
    ["namespace/name", "used / hard"],
    data.quotas.map((q) => [`${esc(q.namespace)}/${esc(q.name)}`, q.resources.map((r) => `${esc(r.name)} ${esc(r.used)} / ${esc(r.hard)}`).join("<br>")])
  );
}

// --- object pages -----------------------------------------------------------------------------

async function renderObject() {
  const [kind, ...rest] = current.args;
  const url = kind === "pod" ? `api/pods/${rest.map(encodeURIComponent).join("/")}` : `api/nodes/${encodeURIComponent(rest[0])}`;
  $("object-title").textContent = `${kind} ${rest.join("/")}`;
  try {
    const data = await getJSON(url);
    $("object-describe").textContent = data.describe;
    $("object-events").innerHTML = table(
      ["type", "reason", "age", "from", "message"],
      data.events.map((e) => [esc(e.type), esc(e.reason), esc(e.eventTime), esc(e.reportingController), esc(e.message)])
    );
  } catch (error) {
    $("object-describe").textContent = error.message;
    $("object-events").innerHTML = "";
  }
}

// --- what-if ----------------------------------------------------------------------------------

async function runWhatIf() {
  $("whatif-error").hidden = true;
  $("whatif-result").innerHTML = "";
  const response = await fetch("api/whatif", { method: "POST", body: $("whatif-text").value, headers: { "Content-Type": "application/yaml" } });
  const body = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) {
    $("whatif-error").textContent = body.error;
    $("whatif-error").hidden = false;
    return;
  }
  $("whatif-result").innerHTML = body.results
    .map((r) => {
      let verdict;
      if (r.nodeName) verdict = `would bind to <b>${esc(r.nodeName)}</b>`;
      else if (r.nominatedNodeName)
        verdict = `would be nominated to <b>${esc(r.nominatedNodeName)}</b> after preempting ${r.victims.map((v) => `<b>${esc(v)}</b>`).join(", ")}`;
      else verdict = "would wait: it fits nowhere and preempting would not help";
      return `<div class="whatif-answer" data-pod="${esc(r.pod)}"><p>${esc(r.pod)} (priority ${r.priority}) ${verdict}</p>
        ${r.message ? `<p class="reason">${esc(r.message)}</p>` : ""}
        ${r.node ? `<div class="whatif-cards"><div><h4>${esc(r.node.name)} now</h4>${nodeCard(r.node, "now")}</div>
          <div><h4>${esc(r.node.name)} after</h4>${nodeCard(r.after, "after")}</div></div>` : ""}</div>`;
    })
    .join("");
  tick();
}

// --- clocks -----------------------------------------------------------------------------------

function tick() {
  const now = Date.now() / 1000;
  document.querySelectorAll("[data-deadline]").forEach((element) => {
    const deadline = Number(element.dataset.deadline);
    element.textContent = deadline ? duration(deadline - now) : "";
  });
  document.querySelectorAll("[data-since]").forEach((element) => {
    element.textContent = element.dataset.since ? duration(now - Number(element.dataset.since)) : "";
  });
}

// --- start ------------------------------------------------------------------------------------

function connect() {
  const stream = new EventSource("api/stream");
  stream.addEventListener("open", () => {
    $("live").textContent = "live";
    $("live").className = "live on";
  });
  stream.addEventListener("error", () => {
    $("live").textContent = "reconnecting…";
    $("live").className = "live off";
  });
  stream.addEventListener("changed", (message) => {
    const views = JSON.parse(message.data).views;
    const watched = current.view === "object" ? "objects" : current.view;
    if (views.includes(watched)) scheduleRefresh();
    else renderSummary().catch(() => {});
  });
}

function searchBox(id, name) {
  let timer = null;
  $(id).addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      params[name].q = $(id).value.trim();
      if (params[name].page) params[name].page = 1;
      refresh();
    }, 200);
  });
}

searchBox("nodes-q", "nodes");
searchBox("queue-q", "queue");
searchBox("preemptions-q", "preemptions");
$("nodes-filter").addEventListener("change", () => {
  params.nodes.filter = $("nodes-filter").value;
  params.nodes.page = 1;
  refresh();
});
$("whatif-run").addEventListener("click", () => runWhatIf().catch((error) => {
  $("whatif-error").textContent = error.message;
  $("whatif-error").hidden = false;
}));
$("whatif-file").addEventListener("change", async () => {
  const file = $("whatif-file").files[0];
  if (file) $("whatif-text").value = await file.text();
});
window.addEventListener("hashchange", route);
setInterval(tick, 1000);
connect();
route();
