// The Starburst cost dashboard: reads /v1/costs with the caller's token and draws it.
// Every figure shown is the API's; the page only adds up rows per day for the charts, in
// one currency at a time (chosen in the page; the others are listed beside the total).
// Untrusted text (team, user, job names) is only ever set through textContent.
"use strict";

const TOKEN_KEY = "starburst-token";
const charts = {};
const state = { currency: "USD" };

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

async function api(path, params, accept) {
  const url = new URL(path, window.location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, v);
  }
  const headers = { Accept: accept || "application/json" };
  if (token()) headers.Authorization = "Bearer " + token();
  let response;
  try {
    response = await fetch(url, { headers });
  } catch (e) {
    // no answer at all (the browser changed networks, the connection dropped): every call
    // here is a GET, so it is asked once more before the page says it could not read it
    response = await fetch(url, { headers });
  }
  if (!response.ok) {
    let detail = response.statusText;
    try { detail = (await response.json()).detail || detail; } catch (e) { /* not JSON */ }
    const error = new Error(detail + " (HTTP " + response.status + ")");
    error.status = response.status;
    throw error;
  }
  return accept === "text/csv" ? response.blob() : response.json();
}

function range() {
  const since = document.getElementById("since").value;
  const until = document.getElementById("until").value;
  return { since: since || undefined, until: until || undefined };
}

function money(amount, currency) {
  return amount + " " + (currency || state.currency);
}

function setText(id, text) {
  document.getElementById(id).textContent = text;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = !message;
}

function palette(i) {
  const colours = ["#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6",
                   "#dd4477", "#66aa00", "#b82e2e", "#316395"];
  return colours[i % colours.length];
}

function draw(id, config) {
  if (charts[id]) charts[id].destroy();
  config.options = Object.assign({ responsive: true, animation: false,
                                   maintainAspectRatio: false }, config.options || {});
  charts[id] = new window.Chart(document.getElementById(id), config);
}

function stacked(rows, key) {
  // rows grouped by (day, key) in one currency -> labels (days) and one dataset per key
  const days = [...new Set(rows.map((r) => r.key.day))].sort();
  const groups = [...new Set(rows.map((r) => r.key[key] || "(none)"))].sort();
  const datasets = groups.map((g, i) => ({
    label: g, backgroundColor: palette(i), stack: "spend",
    data: days.map((d) => rows.filter((r) => r.key.day === d && (r.key[key] || "(none)") === g)
      .reduce((sum, r) => sum + Number(r.amount), 0)),
  }));
  return { labels: days, datasets };
}

function pickCurrency(report) {
  // the currency the charts show: the one chosen in the page if the report has it, else
  // USD, else the first; money in two currencies is never added or drawn on one axis
  const currencies = report.totals.map((t) => t.currency);
  const chosen = document.getElementById("currency").value;
  state.currency = currencies.includes(chosen) ? chosen
    : (currencies.includes("USD") ? "USD" : (currencies[0] || "USD"));
  const select = document.getElementById("currency");
  select.replaceChildren();
  for (const c of currencies.length ? currencies : [state.currency]) {
    const option = document.createElement("option");
    option.value = c;
    option.textContent = c;
    option.selected = c === state.currency;
    select.appendChild(option);
  }
  for (const span of document.querySelectorAll(".shown-currency")) {
    span.textContent = state.currency;
  }
}

function inCurrency(report) {
  return report.rows.filter((r) => r.currency === state.currency);
}

async function loadTotals(when) {
  const report = await api("/v1/costs", Object.assign({ by: "team,day" }, when));
  pickCurrency(report);
  const rows = inCurrency(report);
  const total = report.totals.find((t) => t.currency === state.currency) ||
    { amount: "0.00", gpu_hours: 0, onprem_gpu_hours: 0, onprem_amount: "0.00" };
  setText("cloud-total", money(total.amount));
  setText("cloud-gpu-hours", String(total.gpu_hours));
  setText("onprem-gpu-hours", total.onprem_gpu_hours + " GPU-h");
  setText("onprem-amount", money(total.onprem_amount));
  const others = report.totals.filter((t) => t.currency !== state.currency);
  setText("other-currencies", others.length ? "also " +
          others.map((t) => money(t.amount, t.currency)).join(", ") : "");
  draw("by-team", { type: "bar", data: stacked(rows, "team"),
                    options: { scales: { x: { stacked: true }, y: { stacked: true } } } });
  if (report.scope !== "all") setText("whoami", document.getElementById("whoami").textContent +
                                      " — showing the costs of " + report.scope);
}

async function loadLocations(when) {
  const report = await api("/v1/costs", Object.assign({ by: "location,day" }, when));
  const rows = inCurrency(report).filter((r) => r.key.location !== "onprem");
  draw("by-location", { type: "bar", data: stacked(rows, "location"),
                        options: { scales: { x: { stacked: true }, y: { stacked: true } } } });
}

async function loadSavings(when) {
  try {
    const s = await api("/v1/costs/savings", when);
    const pct = s.saved_fraction === null ? "" : " (" + Math.round(s.saved_fraction * 100) + "%)";
    setText("saved", money(s.saved, s.currency) + pct);
    setText("no-wait", money(s.no_wait, s.currency));
    setText("actual", money(s.actual, s.currency));
    setText("savings-note", s.jobs + " jobs counted (" + s.burst_jobs + " burst, " +
            s.onprem_jobs + " on-prem)" + (s.unpriced_jobs ? ", " + s.unpriced_jobs +
            " not counted" : ""));
    draw("savings-chart", { type: "bar", data: {
      labels: ["No-Wait (burst everything)", "Actual (Starburst)"],
      datasets: [{ label: s.currency, data: [Number(s.no_wait), Number(s.actual)],
                   backgroundColor: ["#dc3912", "#109618"] }] },
      options: { plugins: { legend: { display: false } } } });
  } catch (error) {
    if (error.status !== 403) throw error;
    setText("saved", "–");
    setText("savings-note", "savings need the finance role");
  }
}

function cell(row, text, numeric) {
  const td = document.createElement("td");
  td.textContent = text;
  if (numeric) td.className = "num";
  row.appendChild(td);
}

async function loadBudgets() {
  const budgets = await api("/v1/costs/budgets");
  const body = document.querySelector("#budgets tbody");
  body.replaceChildren();
  for (const b of budgets) {
    const tr = document.createElement("tr");
    cell(tr, b.team);
    for (const v of [b.monthly_limit, b.spent, b.remaining, b.forecast]) {
      cell(tr, money(v, b.currency), true);
    }
    cell(tr, Math.round(b.used_fraction * 100) + "%", true);
    cell(tr, b.alerts.map((a) => Math.round(a * 100) + "%").join(", ") || "–");
    body.appendChild(tr);
  }
  const shown = budgets.filter((b) => b.currency === state.currency);
  draw("budget-chart", { type: "bar", data: {
    labels: shown.map((b) => b.team),
    datasets: [
      { label: "spent", data: shown.map((b) => Number(b.spent)), backgroundColor: "#3366cc" },
      { label: "forecast", data: shown.map((b) => Number(b.forecast)),
        backgroundColor: "#ff9900" },
      { label: "limit", data: shown.map((b) => Number(b.monthly_limit)),
        backgroundColor: "#999999" },
    ] } });
}

async function jobName(id) {
  try {
    return (await api("/v1/jobs/" + encodeURIComponent(id))).name || "–";
  } catch (error) {
    return "–";  // a job the caller may not read: its id is still shown
  }
}

async function loadTopJobs(when) {
  // the API ranks the top jobs per currency; each row keeps its own currency
  const report = await api("/v1/costs", Object.assign({ by: "job", top: 10 }, when));
  const names = await Promise.all(report.rows.map((r) => jobName(r.key.job)));
  const body = document.querySelector("#top-jobs tbody");
  body.replaceChildren();
  report.rows.forEach((r, i) => {
    const tr = document.createElement("tr");
    cell(tr, names[i]);
    cell(tr, r.key.job);
    cell(tr, money(r.amount, r.currency), true);
    cell(tr, String(r.gpu_hours), true);
    cell(tr, String(r.onprem_gpu_hours), true);
    body.appendChild(tr);
  });
}

async function loadQueue() {
  // the plan is the API's (starburst.core.outlook): the page words nothing itself
  const view = await api("/v1/queue");
  const body = document.querySelector("#queue tbody");
  body.replaceChildren();
  for (const e of view.jobs) {
    const tr = document.createElement("tr");
    tr.dataset.job = e.id;
    cell(tr, e.position === null ? "held" : String(e.position), true);
    cell(tr, e.name ? e.name + " (" + e.id + ")" : e.id);
    cell(tr, e.user || "–");
    cell(tr, String(e.gpus), true);
    cell(tr, e.plan);
    body.appendChild(tr);
  }
}

async function loadWho() {
  const me = await api("/v1/whoami");
  setText("whoami", "signed in as " + me.user + " (" + me.role + ")");
}

async function refresh() {
  document.body.dataset.loaded = "loading";
  showError("");
  const when = range();
  try {
    await loadWho();
    await loadTotals(when);  // first: it chooses the currency the other charts show
    await Promise.all([loadLocations(when), loadSavings(when), loadBudgets(),
                       loadTopJobs(when), loadQueue()]);
    document.body.dataset.loaded = "true";
  } catch (error) {
    showError(error.message + (error.status === 401 ? ": enter a valid API token" : ""));
    document.body.dataset.loaded = "error";
  }
}

async function downloadCsv() {
  showError("");
  const by = document.getElementById("csv-by").value;
  try {
    const blob = await api("/v1/costs", Object.assign({ by, format: "csv" }, range()),
                           "text/csv");
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = "starburst-costs-" + by.replace(",", "-") + ".csv";
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60000);
  } catch (error) {
    showError(error.message);
  }
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
  document.getElementById("forget").addEventListener("click", () => {
    window.sessionStorage.removeItem(TOKEN_KEY);
    document.getElementById("token").value = "";
    setText("whoami", "not signed in");
  });
  document.getElementById("range-form").addEventListener("submit", (event) => {
    event.preventDefault();
    refresh();
  });
  document.getElementById("download-csv").addEventListener("click", downloadCsv);
  document.getElementById("currency").addEventListener("change", refresh);
  refresh();
}

document.addEventListener("DOMContentLoaded", start);
