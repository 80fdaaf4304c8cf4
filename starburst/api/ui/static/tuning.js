// The "choose your budget" page: POST /v1/tuning/runs with the caller's token, show every
// replayed setting (a table and a chart of cost against mean-JCT change, with today's
// setting and the recommendation ringed) and apply one through POST /v1/tuning/settings.
// Every figure is the API's; untrusted text (labels, notes, reasons) goes through textContent
// (Chart.js draws its tooltips on the canvas).
"use strict";

const TOKEN_KEY = "starburst-token";  // shared with the cost dashboard
const state = { cheapest: null, tolerance: 0.05, chart: null };
// ring colours: the Pareto plot's (starburst/sim/pareto.py)
// (caption, recommendation key, colour, ring radius: nested rings when they coincide)
const MARKS = [["today", "today", "#d62728", 12], ["recommended", "cheapest", "#2ca02c", 9],
               ["knee", "knee", "#9467bd", 6]];

function token() {
  return window.sessionStorage.getItem(TOKEN_KEY) || "";
}

function takeTokenFromFragment() {
  const match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (match) {
    window.sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", window.location.pathname + window.location.search);
  }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (token()) headers.Authorization = "Bearer " + token();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) {
    let detail = response.statusText;
    try { detail = (await response.json()).detail || detail; } catch (e) { /* not JSON */ }
    throw new Error(detail + " (HTTP " + response.status + ")");
  }
  return response.json();
}

function setText(id, text) {
  document.getElementById(id).textContent = text;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = !message;
}

function pct(x) {
  return x === undefined || x === null ? "" : (x >= 0 ? "+" : "") + (100 * x).toFixed(1) + "%";
}

function describe(row) {
  if (!row) return "–";
  return row.label + ": $" + Number(row.cloud_cost_usd).toFixed(0) + ", saves " +
    (100 * row.savings).toFixed(1) + "% vs No-Wait, mean JCT " + pct(row.jct_change);
}

function cell(tr, text) {
  const td = document.createElement("td");
  td.textContent = text;
  tr.appendChild(td);
}

function showResults(answer) {
  const body = document.querySelector("#results tbody");
  body.replaceChildren();
  for (const row of answer.rows) {
    const tr = document.createElement("tr");
    if (row.role === "today") tr.className = "today";
    cell(tr, row.label);
    cell(tr, Number(row.cloud_cost_usd).toFixed(0));
    cell(tr, pct(row.savings));
    cell(tr, pct(row.saving_vs_today));
    cell(tr, pct(row.jct_change));
    cell(tr, pct(row.p90_jct_change));
    cell(tr, String(row.burst_jobs));
    cell(tr, row.note || "");
    body.appendChild(tr);
  }
  const rec = answer.recommendation;
  state.cheapest = rec.cheapest;
  setText("cheapest", describe(rec.cheapest));
  setText("knee", describe(rec.knee));
  setText("today", describe(rec.today));
  // in force: today's policy, budget and mode (the coefficient is refitted from the budget)
  const inForce = Boolean(rec.cheapest && rec.cheapest.in_force);
  const apply = document.getElementById("apply");
  apply.disabled = !rec.cheapest || inForce;
  apply.textContent = inForce ? "The cheapest is already in force" : "Apply the cheapest";
}

function point(row) {
  // x: cloud $, y: mean JCT change against No-Wait in percent, as the table shows them
  return { x: Number(row.cloud_cost_usd), y: 100 * Number(row.jct_change), label: row.label };
}

function showChart(answer) {
  const rec = answer.recommendation;
  const points = answer.rows.map(point);
  const xs = points.map((p) => p.x);
  const ys = points.map((p) => p.y);
  const datasets = [{ label: "settings", data: points, pointRadius: 3,
                      backgroundColor: "#3366cc", order: 2 }];
  for (const [label, key, colour, radius] of MARKS) {
    if (!rec[key]) continue;
    datasets.push({ label: label + ": " + rec[key].label, data: [point(rec[key])],
                    pointRadius: radius, pointHoverRadius: radius + 1, borderWidth: 2,
                    borderColor: colour, backgroundColor: "rgba(0,0,0,0)", order: 1 });
  }
  const tolerance = 100 * rec.tolerance;
  datasets.push({ type: "line", label: "tolerance " + pct(rec.tolerance), order: 3,
                  data: [{ x: Math.min(...xs), y: tolerance }, { x: Math.max(...xs), y: tolerance }],
                  borderColor: "#888", borderDash: [4, 4], borderWidth: 1, pointRadius: 0 });
  // the y axis spans the settings; a tolerance far above them is named in the legend only
  const lo = Math.min(...ys);
  const hi = Math.max(...ys);
  const top = tolerance <= hi + (hi - lo) ? Math.max(hi, tolerance) : hi;
  const pad = Math.max(0.5, 0.08 * (top - lo));
  const step = top - lo > 20 ? 5 : 1;  // axis ends on round numbers
  if (state.chart) state.chart.destroy();
  state.chart = new window.Chart(document.getElementById("chart"), {
    type: "scatter",
    data: { datasets },
    options: {
      responsive: true, animation: false, maintainAspectRatio: false,
      scales: { x: { title: { display: true, text: "cloud cost ($)" } },
                y: { title: { display: true, text: "mean JCT vs No-Wait (%)" },
                     min: step * Math.floor((lo - pad) / step),
                     max: step * Math.ceil((top + pad) / step) } },
      plugins: { tooltip: { callbacks: { label: (ctx) => ctx.raw.label === undefined
        ? ctx.dataset.label
        : ctx.raw.label + ": $" + ctx.raw.x.toFixed(0) + ", " + pct(ctx.raw.y / 100) } } },
    },
  });
}

async function showLog() {
  const log = await api("GET", "/v1/tuning/settings");
  const body = document.querySelector("#log tbody");
  body.replaceChildren();
  for (const a of log.log) {
    const tr = document.createElement("tr");
    cell(tr, new Date(a.at * 1000).toISOString().slice(0, 16).replace("T", " "));
    cell(tr, a.actor);
    const amount = a.coefficient !== null ? "c=" + a.coefficient : "b=" + a.budget;
    cell(tr, a.policy + " " + amount + (a.out_of_order ? ", out of order" : ", in order"));
    cell(tr, a.reason);
    body.appendChild(tr);
  }
}

function numbers(text) {
  return text.split(",").map((x) => x.trim()).filter((x) => x).map(Number);
}

async function replay(event) {
  event.preventDefault();
  showError("");
  state.tolerance = Number(document.getElementById("tolerance").value) / 100;
  const request = {
    since_s: Number(document.getElementById("days").value) * 86400,
    budgets: numbers(document.getElementById("budgets").value),
    policies: document.getElementById("policies").value.split(",").map((x) => x.trim())
      .filter((x) => x),
    max_jct_increase: state.tolerance,
  };
  document.body.dataset.tuned = "running";
  try {
    const answer = await api("POST", "/v1/tuning/runs", request);
    showResults(answer);
    showChart(answer);
  } catch (error) {
    showError(error.message);
  }
  document.body.dataset.tuned = "true";
}

async function applyCheapest() {
  const row = state.cheapest;
  if (!row) return;
  showError("");
  try {
    const applied = await api("POST", "/v1/tuning/settings", {
      policy: row.policy, budget: row.budget === "" ? null : row.budget,
      out_of_order: Boolean(row.out_of_order),
      reason: "dashboard: cheapest within " + pct(state.tolerance) + " mean JCT (" +
        row.label + ")",
    });
    setText("applied", "applied setting " + applied.id + "; the controller picks it up on " +
      "its next pass");
    await showLog();
  } catch (error) {
    showError(error.message);
  }
}

async function refresh() {
  showError("");
  try {
    const who = await api("GET", "/v1/whoami");
    setText("whoami", "signed in as " + who.user + " (" + who.role + ")");
    await showLog();
  } catch (error) {
    showError(error.message);
  }
  document.body.dataset.loaded = "true";
}

function start() {
  // the token lives in this tab's sessionStorage only: gone when the tab closes, never on
  // disk; a token an older page kept in localStorage is removed
  window.localStorage.removeItem(TOKEN_KEY);
  takeTokenFromFragment();
  document.getElementById("token").value = token();
  document.getElementById("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    window.sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
    refresh();
  });
  document.getElementById("tune-form").addEventListener("submit", replay);
  document.getElementById("apply").addEventListener("click", applyCheapest);
  refresh();
}

document.addEventListener("DOMContentLoaded", start);
